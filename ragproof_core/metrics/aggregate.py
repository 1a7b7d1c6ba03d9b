"""Per-metric run summaries (metrics.md, "Aggregation"; CONTRACT section 6, metric_summaries).

One row per metric: mean, p50 and p95 over scored values, and counts of every
other outcome. Only scored values enter the statistics, so skips, judge errors
and case failures never drag a mean towards zero; with nothing scored the
statistics are None (NULL in the store), never 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ragproof_core.metrics.registry import METRIC_NAMES, REGISTRY
from ragproof_core.model import MetricResult, Status

# Metrics of a whole conversation (CONTRACT section 16): a run without conversations
# has nothing they measure, so they get no summary row there (only rows with results).
PER_CONVERSATION: frozenset[str] = frozenset(m.name for m in REGISTRY.metrics if m.per_conversation)

P50 = Fraction(1, 2)
P95 = Fraction(19, 20)


def _exact(fraction: float | Fraction | str) -> Fraction:
    """``fraction`` as an exact rational, read the way a person wrote it.

    A float goes through its shortest decimal repr, so 0.07 means 7/100 and not
    the binary double just above it: with floats ceil(0.07 * 100) is 8, with
    the rational it is 7, which is what nearest rank means.
    """
    if isinstance(fraction, float):
        return Fraction(repr(fraction))
    return Fraction(fraction)


def nearest_rank(sorted_values: Sequence[float], fraction: float | Fraction | str) -> float:
    """Nearest-rank percentile: the value at 1-based position max(1, ceil(fraction * n)).

    ``sorted_values`` must be sorted ascending and non-empty; ``fraction`` is in
    [0, 1] (0.95 for p95). The position is computed in exact integer
    arithmetic, so no float rounding can move it by one.
    """
    n = len(sorted_values)
    if n == 0:
        raise ValueError("nearest_rank of an empty sequence is undefined")
    exact = _exact(fraction)
    if not 0 <= exact <= 1:
        raise ValueError(f"fraction must be between 0 and 1, got {fraction!r}")
    # ceil(a / b) for integers is -(-a // b).
    position = max(1, -(-n * exact.numerator // exact.denominator))
    return sorted_values[position - 1]


@dataclass(frozen=True, slots=True)
class MetricSummary:
    """One metric_summaries row. ``errored`` counts case failures plus judge
    errors; ``judge_errors`` the judge errors alone (CONTRACT section 6)."""

    metric: str
    mean: float | None
    p50: float | None
    p95: float | None
    scored: int
    skipped: int
    errored: int
    not_applicable: int
    judge_errors: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "mean": self.mean,
            "p50": self.p50,
            "p95": self.p95,
            "scored": self.scored,
            "skipped": self.skipped,
            "errored": self.errored,
            "not_applicable": self.not_applicable,
            "judge_errors": self.judge_errors,
        }


class _Tally:
    """Running totals for one metric while summarize makes its single pass."""

    __slots__ = ("values", "counts")

    def __init__(self) -> None:
        self.values: list[float] = []
        self.counts: dict[Status, int] = dict.fromkeys(Status, 0)

    def summary(self, metric: str) -> MetricSummary:
        counts = self.counts
        values = self.values
        if values:
            values.sort()
            # fsum is correctly rounded, so the mean does not depend on the
            # order results arrive in (partitions may finish in any order).
            mean: float | None = math.fsum(values) / len(values)
            p50: float | None = nearest_rank(values, P50)
            p95: float | None = nearest_rank(values, P95)
        else:
            mean = p50 = p95 = None
        return MetricSummary(
            metric=metric,
            mean=mean,
            p50=p50,
            p95=p95,
            scored=len(values),
            skipped=counts[Status.SKIPPED],
            errored=counts[Status.ERROR] + counts[Status.JUDGE_ERROR],
            not_applicable=counts[Status.NOT_APPLICABLE],
            judge_errors=counts[Status.JUDGE_ERROR],
        )


def summarize(
    results: Iterable[MetricResult], metric_names: Sequence[str] = METRIC_NAMES
) -> list[MetricSummary]:
    """One summary per name in ``metric_names``, in that order, then any other
    metric seen in ``results``, sorted by name.

    A listed metric with no results still gets a row (zero counts, None
    statistics), so every run reports the same metrics. Case failures arrive
    as status ``error`` results and land in ``errored``, never in a mean.
    """
    tallies: dict[str, _Tally] = {name: _Tally() for name in metric_names}
    scored = Status.SCORED
    for result in results:
        tally = tallies.get(result.metric)
        if tally is None:
            tally = tallies[result.metric] = _Tally()
        status = result.status
        if status == scored:
            tally.values.append(result.value)
        else:
            try:
                tally.counts[status] += 1
            except KeyError:
                raise ValueError(
                    f"case {result.case_id!r}, metric {result.metric!r}: unknown status {status!r}"
                ) from None
    listed = _listed(metric_names, tallies)
    extra = sorted(name for name in tallies if name not in listed and name not in metric_names)
    return [tallies[name].summary(name) for name in (*listed, *extra)]


def _listed(metric_names: Sequence[str], seen: Mapping[str, Any]) -> dict[str, None]:
    """The names every summary lists: all of ``metric_names`` but a conversation's own
    metrics no row was stored for (a run without conversations)."""
    return dict.fromkeys(
        name
        for name in metric_names
        if name not in PER_CONVERSATION or (name in seen and _has_rows(seen[name]))
    )


def _has_rows(tally: Any) -> bool:
    if isinstance(tally, _Tally):
        return bool(tally.values) or any(tally.counts.values())
    return any(tally.values())


def summarize_counted(
    counts: Mapping[str, Mapping[Status, int]],
    values_of: Callable[[str], list[float]],
    metric_names: Sequence[str] = METRIC_NAMES,
) -> list[MetricSummary]:
    """``summarize`` from counts already made: ``counts[metric][status]`` for every metric
    with a row, and ``values_of(metric)`` its scored values (any order). The stored
    results of a large run are counted column by column (``store.result_tally``)."""
    listed = _listed(metric_names, counts)
    extra = sorted(name for name in counts if name not in listed)
    summaries = []
    for name in (*listed, *extra):
        tally = _Tally()
        tally.values = values_of(name) if name in counts else []
        for status, n in counts.get(name, {}).items():
            if status is not Status.SCORED:
                tally.counts[status] += n
        summaries.append(tally.summary(name))
    return summaries
