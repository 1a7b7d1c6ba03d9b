"""One columnar pass over a run's stored case results, for the run's summaries.

The summary, the UI's per-metric distributions, the skip reasons and the
failure-rate check need only a few columns of ``case_results``: scored values
per metric, counts per (metric, status), and counts per (metric, skip reason).
A million-case run has thirteen million result rows; decoding each into a
``MetricResult`` cost more than evaluating the cases. Here Arrow groups and
filters each batch of rows, and Python sees one number per group.

The figures are the ones the object path computes: the scored values are the
same floats (a mean is ``math.fsum`` of them, which does not depend on their
order), counts are counts. A status outside ``Status`` raises ``UnknownStatus``;
callers then take the object path, whose error names the case.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ragproof_core.metrics.aggregate import summarize, summarize_counted
from ragproof_core.model import Status

_COLUMNS = ("metric", "status", "value", "reason")
_STATUSES = {status.value: status for status in Status}


class UnknownStatus(ValueError):
    """A stored status ragproof does not know (a damaged or foreign file)."""


@dataclass
class ResultTally:
    """What the summaries need of a run's results (module docstring)."""

    counts: dict[str, Counter[Status]] = field(default_factory=lambda: defaultdict(Counter))
    skip_reasons: Counter[tuple[str, str]] = field(default_factory=Counter)
    _values: dict[str, list[np.ndarray]] = field(default_factory=lambda: defaultdict(list))

    @property
    def metrics(self) -> set[str]:
        """Every metric with at least one row."""
        return set(self.counts)

    def values(self, metric: str) -> list[float]:
        """The metric's scored values, as Python floats (stored order)."""
        parts = self._values.get(metric)
        return np.concatenate(parts).tolist() if parts else []

    def add(self, rows: pa.Table) -> None:
        """Count one batch of ``case_results`` rows (columns ``_COLUMNS`` at least)."""
        grouped = rows.group_by(["metric", "status"], use_threads=False).aggregate(
            [([], "count_all")]
        )
        for metric, status, n in zip(
            grouped["metric"].to_pylist(),
            grouped["status"].to_pylist(),
            grouped["count_all"].to_pylist(),
            strict=True,
        ):
            known = _STATUSES.get(status)
            if known is None:
                raise UnknownStatus(f"metric {metric!r}: unknown status {status!r}")
            self.counts[metric][known] += n
        scored = rows.filter(pc.equal(rows["status"], Status.SCORED.value))
        if scored.num_rows:
            metric_column = scored["metric"]
            for metric in pc.unique(metric_column).to_pylist():
                chosen = scored.filter(pc.equal(metric_column, metric))
                self._values[metric].append(chosen["value"].to_numpy())
        skipped = rows.filter(pc.equal(rows["status"], Status.SKIPPED.value))
        if skipped.num_rows:
            reasons = skipped.select(["metric", "reason"]).group_by(
                ["metric", "reason"], use_threads=False
            )
            counted = reasons.aggregate([([], "count_all")])
            for metric, reason, n in zip(
                counted["metric"].to_pylist(),
                counted["reason"].to_pylist(),
                counted["count_all"].to_pylist(),
                strict=True,
            ):
                self.skip_reasons[(metric, reason or "")] += n


def tally_batches(batches: Iterable[pa.Table]) -> ResultTally:
    tally = ResultTally()
    for batch in batches:
        tally.add(batch)
    return tally


def result_columns() -> tuple[str, ...]:
    return _COLUMNS


def failed_case_share(batches: Iterable[pa.Table]) -> tuple[int, int]:
    """(cases with a case failure or judge error, cases with any result row)."""
    failed: set[str] = set()
    cases: set[str] = set()
    bad = pa.array([Status.ERROR.value, Status.JUDGE_ERROR.value])
    for rows in batches:
        ids = rows["case_id"]
        cases.update(pc.unique(ids).to_pylist())
        failing = rows.filter(pc.is_in(rows["status"], value_set=bad))
        failed.update(pc.unique(failing["case_id"]).to_pylist())
    return len(failed), len(cases)


def summarize_run(run_store, run_id: str, metric_names) -> tuple[list, Counter[tuple[str, str]]]:
    """The run's ``MetricSummary`` rows and its skip counts by (metric, reason)."""
    try:
        tally = run_store.tally_case_results(run_id)
    except UnknownStatus:
        # The object path's error names the case with the bad status.
        summarize(run_store.iter_case_results(run_id), metric_names)
        raise
    return summarize_counted(tally.counts, tally.values, metric_names), tally.skip_reasons
