"""Per-metric run summaries (metrics.md, "Aggregation"; CONTRACT section 6, metric_summaries).

One row per metric: mean, p50 and p95 over scored values, and counts of every
other outcome. Only scored values enter the statistics, so skips, judge errors
and case failures never drag a mean towards zero; with nothing scored the
statistics are None (NULL in the store), never 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from fractions import Fraction
from typing import Any

import numpy as np

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


def rank_position(n: int, fraction: float | Fraction | str) -> int:
    """The 1-based nearest-rank position max(1, ceil(fraction * n)) among ``n`` values,
    in exact integer arithmetic, so no float rounding can move it by one."""
    if n == 0:
        raise ValueError("nearest_rank of an empty sequence is undefined")
    exact = _exact(fraction)
    if not 0 <= exact <= 1:
        raise ValueError(f"fraction must be between 0 and 1, got {fraction!r}")
    # ceil(a / b) for integers is -(-a // b).
    return max(1, -(-n * exact.numerator // exact.denominator))


def nearest_rank(sorted_values: Sequence[float], fraction: float | Fraction | str) -> float:
    """Nearest-rank percentile: the value at 1-based position max(1, ceil(fraction * n)).

    ``sorted_values`` must be sorted ascending and non-empty; ``fraction`` is in
    [0, 1] (0.95 for p95).
    """
    return sorted_values[rank_position(len(sorted_values), fraction) - 1]


# Up to this many distinct values the exact sum is taken in rationals, one term a value;
# above it (a latency, say) the values are expanded and summed by ``math.fsum``.
_RATIONAL_SUM_LEVELS = 4_096
_EXPAND_ROWS = 1 << 20  # values expanded at a time for ``math.fsum``


@dataclass(frozen=True, slots=True)
class ValueCounts:
    """A metric's scored values as their distinct values, ascending, and how often each
    occurs: what a mean, a nearest-rank percentile, a histogram and a bootstrap need,
    at the size of the distinct values (a handful for most metrics) instead of the cases.
    """

    values: np.ndarray  # float64, ascending, distinct
    counts: np.ndarray  # int64, > 0

    @classmethod
    def of(cls, values: Iterable[float]) -> ValueCounts:
        distinct, counts = np.unique(np.fromiter(values, np.float64), return_counts=True)
        return cls(distinct, counts.astype(np.int64))

    @classmethod
    def empty(cls) -> ValueCounts:
        return cls(np.empty(0, np.float64), np.empty(0, np.int64))

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    def expanded(self) -> Iterator[float]:
        """Every value, ascending, as Python floats (a block at a time)."""
        start = 0
        while start < len(self.values):
            # Blocks of distinct values whose expansion stays near _EXPAND_ROWS.
            stop = start + 1
            total = int(self.counts[start])
            while stop < len(self.values) and total + self.counts[stop] <= _EXPAND_ROWS:
                total += int(self.counts[stop])
                stop += 1
            yield from np.repeat(self.values[start:stop], self.counts[start:stop]).tolist()
            start = stop

    def total(self) -> float:
        """The sum of every value, correctly rounded: what ``math.fsum`` of them gives."""
        if len(self.values) <= _RATIONAL_SUM_LEVELS:
            # Exact in rationals; float() of a Fraction rounds correctly, as fsum does.
            pairs = zip(self.values.tolist(), self.counts.tolist(), strict=True)
            exact = sum((Fraction(v) * c for v, c in pairs), Fraction(0))
            return float(exact)
        return math.fsum(self.expanded())

    def mean(self) -> float | None:
        n = self.n
        return None if n == 0 else self.total() / n

    def nearest_rank(self, fraction: float | Fraction | str) -> float:
        """``nearest_rank`` of the expanded, sorted values."""
        position = rank_position(self.n, fraction)
        index = int(np.searchsorted(np.cumsum(self.counts), position, side="left"))
        return float(self.values[index])


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
    # Repeated trials (CONTRACT section 27), set in a run with repeats: the mean, p50 and
    # p95 are then over the per-case means, and the counts above count trials.
    cases: int | None = None
    within_case_sd: float | None = None
    between_case_sd: float | None = None
    icc: float | None = None
    pass_k: int | None = None
    pass_at_k: float | None = None
    pass_hat_k: float | None = None
    flaky_cases: int | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    # Judge repeats: the trials whose judge requests were repeated, and the repeats'
    # agreement (Krippendorff's alpha, interval) over them; None for other metrics.
    judge_repeated: int | None = None
    judge_self_agreement: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every field; those of repeated trials only when set (a run without repeats'
        summary has the keys it had before they existed)."""
        out = {}
        for field in fields(self):
            value = getattr(self, field.name)
            if value is not None or field.name in _ALWAYS:
                out[field.name] = value
        return out


# The fields every summary's dict has (``MetricSummary.to_dict``), in order.
_ALWAYS = frozenset(
    (
        "metric",
        "mean",
        "p50",
        "p95",
        "scored",
        "skipped",
        "errored",
        "not_applicable",
        "judge_errors",
    )
)


class _Tally:
    """Running totals for one metric while summarize makes its single pass."""

    __slots__ = ("values", "counts")

    def __init__(self) -> None:
        self.values: list[float] = []
        self.counts: dict[Status, int] = dict.fromkeys(Status, 0)

    def summary(self, metric: str) -> MetricSummary:
        values = self.values
        values.sort()
        # fsum is correctly rounded, so the mean does not depend on the
        # order results arrive in (partitions may finish in any order).
        mean = math.fsum(values) / len(values) if values else None
        p50 = nearest_rank(values, P50) if values else None
        p95 = nearest_rank(values, P95) if values else None
        return _summary(metric, self.counts, len(values), mean, p50, p95)


def _summary(
    metric: str,
    counts: Mapping[Status, int],
    scored: int,
    mean: float | None,
    p50: float | None,
    p95: float | None,
) -> MetricSummary:
    return MetricSummary(
        metric=metric,
        mean=mean,
        p50=p50,
        p95=p95,
        scored=scored,
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
    values_of: Callable[[str], ValueCounts],
    metric_names: Sequence[str] = METRIC_NAMES,
) -> list[MetricSummary]:
    """``summarize`` from counts already made: ``counts[metric][status]`` for every metric
    with a row, and ``values_of(metric)`` its scored values as ``ValueCounts``. The
    stored results of a large run are counted by one SQL pass (``store.result_tally``)."""
    listed = _listed(metric_names, counts)
    extra = sorted(name for name in counts if name not in listed)
    summaries = []
    for name in (*listed, *extra):
        statuses = dict.fromkeys(Status, 0)
        for status, n in counts.get(name, {}).items():
            statuses[status] += n
        values = values_of(name) if name in counts else ValueCounts.empty()
        scored = values.n
        summaries.append(
            _summary(
                name,
                statuses,
                scored,
                values.mean(),
                values.nearest_rank(P50) if scored else None,
                values.nearest_rank(P95) if scored else None,
            )
        )
    return summaries
