"""Judge usage per metric and per model: requests, cache hits, tokens, cost.

The judge only sees prompts, not metrics, so the evaluation names the metric a
question is asked for in a context variable (``attributed_to``); each asyncio
task gets its own copy, so concurrent metrics never mix their counts. A
question asked outside any metric (calibration, generation) is counted under
its prompt's name.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from typing import Any

_CURRENT_METRIC: ContextVar[str | None] = ContextVar("ragproof_judge_metric", default=None)


@contextlib.contextmanager
def attributed_to(metric: str) -> Iterator[None]:
    """Count every judge question asked inside this block under ``metric``."""
    token = _CURRENT_METRIC.set(metric)
    try:
        yield
    finally:
        _CURRENT_METRIC.reset(token)


def current_metric(prompt: str) -> str:
    return _CURRENT_METRIC.get() or prompt


@dataclass
class Usage:
    metric: str
    model: str
    requests: int = 0
    cache_hits: int = 0
    judge_errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


_COUNTERS = ("requests", "cache_hits", "judge_errors", "input_tokens", "output_tokens", "cost_usd")


class UsageTally:
    """Running totals keyed by (metric, model); one tally is shared by a jury's models."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], Usage] = {}
        self._lock = threading.Lock()

    def add(self, prompt: str, model: str, **counts: float) -> None:
        key = (current_metric(prompt), model)
        with self._lock:
            row = self._rows.get(key)
            if row is None:
                row = self._rows[key] = Usage(*key)
            for name, value in counts.items():
                setattr(row, name, getattr(row, name) + value)

    def rows(self) -> list[dict[str, Any]]:
        """One dict per (metric, model), sorted, as stored in the run record."""
        with self._lock:
            return [asdict(self._rows[key]) for key in sorted(self._rows)]


def totals_by(rows: list[dict[str, Any]], key: str) -> dict[str, dict[str, float]]:
    """Usage rows summed per ``key`` ("metric" or "model")."""
    out: dict[str, dict[str, float]] = {}
    for row in rows:
        total = out.setdefault(row[key], dict.fromkeys(_COUNTERS, 0))
        for name in _COUNTERS:
            total[name] += row.get(name, 0)
    return dict(sorted(out.items()))
