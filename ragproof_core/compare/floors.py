"""Floors applied to a stored run (CONTRACT section 25): ``ragproof check``, the floors
of ``compare --fail-on-regression`` and the ``floors`` asset check.

A floor (``config.gate.Floor``) bounds a metric's mean over the run's scored cases,
or with ``every_case`` each scored case. It fails when fewer than ``min_scored``
cases were scored (a floor never passes on nothing), or when the bound is broken.
The mean is the run's stored one (``metric_summaries``); an every-case floor reads
the metric's scored values from the run's ``case_results`` files in one SQL pass and
keeps the first ``MAX_FAILING_IDS`` failing case ids, worst first.

Values are compared with a slack of ``SLACK`` (1e-9): a mean of ten 0.8 scores is
0.7999999999999999 in floating point and must clear ``min = 0.8``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragproof_core.config.gate import Floor, parse_gate
from ragproof_core.config.settings import load_config
from ragproof_core.errors import UserError
from ragproof_core.model import Status
from ragproof_core.store.file_sql import file_reader
from ragproof_core.store.run_store import RunStore

SLACK = 1e-9
MAX_FAILING_IDS = 10
PASS, FAIL = "PASS", "FAIL"


class NoFloors(UserError):
    """``ragproof check`` was given nothing to check: no ``[gate]`` table."""


def floors_for(store: RunStore, run_id: str, config: str | Path | None = None) -> tuple[Floor, ...]:
    """The floors to apply to run ``run_id``: the ``[gate]`` table of ``config`` when
    given, else the one the run was started with (stored in its manifest)."""
    if config is not None:
        return load_config(config).gate
    return parse_gate(store.read_manifest(run_id).get("gate") or {})


def required_floors(
    store: RunStore, run_id: str, config: str | Path | None = None
) -> tuple[Floor, ...]:
    """``floors_for``, refusing (``NoFloors``) when there are none: a gate that checks
    nothing must not pass silently."""
    floors = floors_for(store, run_id, config)
    if floors:
        return floors
    if config is not None:
        raise NoFloors(f"{config}: no [gate] table: nothing to check")
    raise NoFloors(
        f"run {run_id}: no floors: its config had no [gate] table (give one with --config FILE)"
    )


@dataclass(frozen=True, slots=True)
class FloorResult:
    """One floor applied to one run."""

    floor: Floor
    passed: bool
    scored: int
    # The run's mean, or for an every-case floor its worst scored value; None when
    # nothing was scored.
    value: float | None
    # An every-case floor's failing cases: how many, and the first ids, worst first.
    failing: int = 0
    failing_ids: tuple[str, ...] = ()
    # Why it failed, when not for the bound itself ("nothing scored", too few scored).
    reason: str | None = None

    @property
    def metric(self) -> str:
        return self.floor.metric

    def line(self) -> str:
        """``PASS``/``FAIL``, metric, bound, value: ``ragproof check``'s line."""
        return f"{PASS if self.passed else FAIL}  {self.metric}  {self.floor.bound}  {self.detail}"

    @property
    def detail(self) -> str:
        """The figures behind the verdict, after the bound."""
        if self.value is None:
            return self.reason or "nothing scored"
        if self.floor.every_case:
            text = f"worst {self.value:.4f} of {self.scored} scored"
            if self.failing:
                shown = ", ".join(self.failing_ids)
                more = self.failing - len(self.failing_ids)
                text += f"; {self.failing} failing: {shown}" + (f" and {more} more" if more else "")
        else:
            text = f"{self.value:.4f} over {self.scored} scored"
        return f"{text}; {self.reason}" if self.reason else text

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "passed": self.passed,
            "bound": self.floor.bound,
            **self.floor.to_dict(),
            "scored": self.scored,
            "value": self.value,
            "failing": self.failing,
            "failing_ids": list(self.failing_ids),
            "reason": self.reason,
        }


def outside(floor: Floor, value: float) -> bool:
    """Whether ``value`` breaks ``floor``'s bound (with ``SLACK``)."""
    return (floor.min is not None and value < floor.min - SLACK) or (
        floor.max is not None and value > floor.max + SLACK
    )


def judge_floor(
    floor: Floor,
    scored: int,
    value: float | None,
    failing: int = 0,
    failing_ids: Sequence[str] = (),
) -> FloorResult:
    """The verdict on ``floor`` from the run's figures: its scored count and mean (or,
    for an every-case floor, its worst value and failing cases)."""
    ids = tuple(failing_ids)
    if scored == 0 or value is None:
        if floor.min_scored == 0:
            return FloorResult(floor, True, 0, None, reason="nothing scored (min_scored is 0)")
        return FloorResult(floor, False, 0, None, reason="nothing scored")
    too_few = scored < floor.min_scored
    reason = f"only {scored} scored, min_scored is {floor.min_scored}" if too_few else None
    broken = failing > 0 if floor.every_case else outside(floor, value)
    return FloorResult(floor, not (too_few or broken), scored, value, failing, ids, reason)


def _every_case_sql(floor: Floor) -> tuple[str, str]:
    """The SQL of an every-case floor's figures, and its failing cases' ``ORDER BY``:
    below a min, the lowest first; above a max, the highest first."""
    scored = f"status = '{Status.SCORED.value}' AND value IS NOT NULL AND NOT isnan(value)"
    tests, badness = [], []
    if floor.min is not None:
        tests.append(f"value < {floor.min!r} - {SLACK!r}")
        badness.append(f"{floor.min!r} - value")
    if floor.max is not None:
        tests.append(f"value > {floor.max!r} + {SLACK!r}")
        badness.append(f"value - {floor.max!r}")
    worst = "min(value)" if floor.max is None else "max(value)" if floor.min is None else None
    if worst is None:
        # Both bounds: the value furthest outside them (or nearest an edge when none is).
        worst = f"arg_max(value, greatest({', '.join(badness)}))"
    figures = (
        f"SELECT count(*), {worst}, count(*) FILTER (WHERE {' OR '.join(tests)}) "
        f"FROM read_parquet($files, union_by_name = true) WHERE metric = $metric AND {scored}"
    )
    failing = (
        "SELECT case_id FROM read_parquet($files, union_by_name = true) "
        f"WHERE metric = $metric AND {scored} AND ({' OR '.join(tests)}) "
        f"ORDER BY greatest({', '.join(badness)}) DESC, case_id LIMIT {MAX_FAILING_IDS}"
    )
    return figures, failing


def check_floors(
    store: RunStore, run_id: str, floors: Sequence[Floor], summaries: Sequence[Mapping] = ()
) -> list[FloorResult]:
    """Every floor applied to run ``run_id``, in the order given. ``summaries``: the run's
    stored summaries when the caller has read them (``RunStore.summaries``)."""
    if not floors:
        return []
    by_metric = {s["metric"]: s for s in (summaries or store.summaries(run_id))}
    figures: dict[int, tuple[int, float | None, int, list[str]]] = {}
    if any(f.every_case for f in floors):
        files = store.case_result_files(run_id)
        with file_reader(store.layout) as con:
            for index, floor in enumerate(floors):
                if not floor.every_case:
                    continue
                count_sql, failing_sql = _every_case_sql(floor)
                params = {"files": files, "metric": floor.metric}
                scored, worst, failing = con.execute(count_sql, params).fetchone()
                ids = [r[0] for r in con.execute(failing_sql, params).fetchall()] if failing else []
                figures[index] = (int(scored), worst, int(failing), ids)
    results = []
    for index, floor in enumerate(floors):
        if floor.every_case:
            results.append(judge_floor(floor, *figures[index]))
            continue
        # A metric the run has no row of (not selected then) scored nothing.
        summary = by_metric.get(floor.metric, {"scored": 0, "mean": None})
        results.append(judge_floor(floor, int(summary["scored"]), summary["mean"]))
    return results


def broken(results: Sequence[FloorResult]) -> list[FloorResult]:
    return [r for r in results if not r.passed]
