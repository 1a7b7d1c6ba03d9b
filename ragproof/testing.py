"""Assertions for a test suite that gates a pipeline (CONTRACT section 26): a run's
floors, and no regression against a baseline run. Each raises ``AssertionError``
listing every broken floor or regressed metric with its figures."""

from __future__ import annotations

import os
from typing import Any

from ragproof.comparison import compare
from ragproof.results import Run

# run id -> the metrics an assertion of this session found failing (the pytest
# plugin's terminal summary lists them).
FAILED_METRICS: dict[str, list[str]] = {}


def _failed(run_id: str, metrics: list[str]) -> None:
    known = FAILED_METRICS.setdefault(run_id, [])
    known.extend(m for m in metrics if m not in known)


def assert_floors(run: Run, config: str | os.PathLike[str] | None = None) -> None:
    """Every floor of ``config``'s ``[gate]`` table (default: the one the run was started
    with) holds for ``run``, as ``ragproof check`` decides; a run without floors fails
    too (a gate that checks nothing must not pass)."""
    results = run.check(config)
    if not results:
        where = f"{os.fspath(config)}" if config is not None else f"run {run.run_id}'s config"
        raise AssertionError(f"ragproof: {where} has no [gate] table: no floor to check")
    failed = [r for r in results if not r.passed]
    if not failed:
        return
    _failed(run.run_id, [r.floor.metric for r in failed])
    lines = [f"run {run.run_id}: {len(failed)} of {len(results)} floors broken:"]
    lines += [f"  {r.line()}" for r in failed]
    raise AssertionError("\n".join(lines))


def assert_no_regression(run: Run, baseline: Run | str, **compare_options: Any) -> None:
    """``run`` is not significantly worse than ``baseline`` on any metric (by more than
    ``margin``), as ``ragproof compare --fail-on-regression`` decides. ``compare_options``:
    those of ``ragproof.compare`` (``margin``, ``correction``, ``allow_mixed_judges``,
    ``allow_mixed_settings``, ``store``)."""
    comparison = compare(baseline, run, **compare_options)
    if not comparison.lines:
        return
    _failed(run.run_id, list(comparison.regressions["metric"]))
    lines = [
        f"run {run.run_id} against baseline {comparison.run_a}: "
        f"{len(comparison.lines)} metrics regressed:"
    ]
    lines += [f"  {line}" for line in comparison.lines]
    raise AssertionError("\n".join(lines))
