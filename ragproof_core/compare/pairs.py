"""What a paired comparison needs of one metric of two runs, and how two results
frames give it.

A metric's comparison reads only: how many cases each run scored, how the cases
present in both runs changed status, and the values of the cases both runs
scored, paired and in case-id order. ``MetricPairs`` holds exactly that: two
float arrays and the paired case ids as one Arrow array, never a frame of
objects, so a million-case run pairs in tens of megabytes. ``FramePairing``
builds it from ``case_results`` frames (``RunSide``); ``stored_pairs`` builds
the same from the stored Parquet files, a metric at a time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pyarrow as pa

from ragproof_core.model import Status

if TYPE_CHECKING:
    # Annotations only: a process building no frame (the command) skips pandas' 0.4 s.
    import pandas as pd


@dataclass(frozen=True, slots=True)
class RunSide:
    """One side of a comparison: the run's record and its per-case results.

    ``record`` is the store's RunRecord (only ``run_id``, ``judge_model``, ``judge_mode`` and
    ``prompt_hashes`` are read); ``results`` has the columns of the
    ``case_results`` view: run_id, case_id, metric, status, value, ...
    """

    record: Any
    results: pd.DataFrame


@dataclass(frozen=True, slots=True)
class MetricPairs:
    """One metric of two runs, as the paired statistics read it."""

    scored_a: int  # cases this metric scored in A (paired or not)
    scored_b: int
    # "status_a -> status_b": count, over cases present in both runs, only where they differ.
    transitions: dict[str, int]
    case_ids: pa.Array  # the cases scored in both, ascending: the order of xa and xb
    xa: np.ndarray  # float64 values of A on those cases
    xb: np.ndarray


class Pairing(Protocol):
    """Where a comparison reads its two runs' results from."""

    metrics_a: frozenset[str]
    metrics_b: frozenset[str]

    def pairs(self, metric: str) -> MetricPairs: ...


def transition_counts(changes: Iterable[tuple[str, str, int]]) -> dict[str, int]:
    """``(status_a, status_b, cases)`` rows as the ordered ``"a -> b": cases`` mapping."""
    return {f"{sa} -> {sb}": int(n) for sa, sb, n in sorted(changes)}


def duplicate_result(run_id: str, case_id: str, metric: str) -> ValueError:
    return ValueError(f"run {run_id} has more than one result for case {case_id} metric {metric}")


def _frame(side: RunSide) -> pd.DataFrame:
    df = side.results
    missing = {"case_id", "metric", "status", "value"} - set(df.columns)
    if missing:
        raise ValueError(
            f"results of run {side.record.run_id} lack column(s): {', '.join(sorted(missing))}"
        )
    trials = "trial" in df.columns and bool((df["trial"].fillna(1) > 1).any())
    df = df.loc[:, ["case_id", "metric", "status", "value", *(["trial"] if trials else [])]].copy()
    df["case_id"] = df["case_id"].astype(str)
    df["metric"] = df["metric"].astype(str)
    df["status"] = df["status"].astype(str)
    dup = df.duplicated(["case_id", "metric", *(["trial"] if trials else [])], keep=False)
    if dup.any():
        row = df[dup].iloc[0]
        raise duplicate_result(side.record.run_id, row["case_id"], row["metric"])
    return _case_means(df) if trials else df


def _case_means(df: pd.DataFrame) -> pd.DataFrame:
    """A run with repeats' rows (CONTRACT section 27) as one per case and metric: the
    mean over its scored trials, scored when any trial is, else the first of its
    trials' statuses in code point order (an error before a judge error, a
    not_applicable, a skip); ``stored_pairs`` pairs a stored run's the same way."""
    keys = ["case_id", "metric"]
    scored = (df["status"] == Status.SCORED.value) & df["value"].notna()
    out = df.groupby(keys)["status"].min().to_frame()
    out["value"] = df[scored].groupby(keys)["value"].mean()
    out.loc[out["value"].notna(), "status"] = Status.SCORED.value
    return out.reset_index()


def _scored_values(df: pd.DataFrame) -> pd.Series:
    s = df[(df["status"] == Status.SCORED.value) & df["value"].notna()]
    return s.set_index("case_id")["value"].astype(float)


class FramePairing:
    """The pairing of two runs whose results are frames in memory."""

    def __init__(self, a: RunSide, b: RunSide) -> None:
        fa, fb = _frame(a), _frame(b)
        self.metrics_a = frozenset(fa["metric"])
        self.metrics_b = frozenset(fb["metric"])
        self._a = dict(tuple(fa.groupby("metric")))
        self._b = dict(tuple(fb.groupby("metric")))
        self._empty = fa.iloc[0:0]

    def pairs(self, metric: str) -> MetricPairs:
        a = self._a.get(metric, self._empty)
        b = self._b.get(metric, self._empty)
        va, vb = _scored_values(a), _scored_values(b)
        both = a.merge(b, on="case_id", suffixes=("_a", "_b"))
        changed = both[both["status_a"] != both["status_b"]]
        transitions = transition_counts(
            (sa, sb, n) for (sa, sb), n in changed.groupby(["status_a", "status_b"]).size().items()
        )
        # Sorted case ids make the delta order (and so the resampling) independent
        # of how the store happened to return the rows.
        paired_ids = sorted(set(va.index) & set(vb.index))
        return MetricPairs(
            scored_a=len(va),
            scored_b=len(vb),
            transitions=transitions,
            case_ids=pa.array(paired_ids, pa.string()),
            xa=va.loc[paired_ids].to_numpy(dtype=np.float64),
            xb=vb.loc[paired_ids].to_numpy(dtype=np.float64),
        )
