"""The regression gate of ``ragproof compare --fail-on-regression`` (CONTRACT section 10).

A metric regresses when the comparison's own verdict says B is significantly
worse than A (paired test, p < alpha, in the metric's direction), its p-value
adjusted for the number of metrics tested is below alpha too (Holm's method
unless the comparison was made with ``correction="none"``), and the mean
paired delta is worse by more than ``margin``. The margin lets a team accept
small, real changes (say 0.01 of recall) without failing CI.
"""

from __future__ import annotations

from ragproof_core.compare.comparison import WORSE, Comparison, MetricComparison


def worse_by(metric: MetricComparison) -> float | None:
    """How much worse B is than A in the metric's own direction (negative = better)."""
    if metric.delta is None:
        return None
    return -metric.delta if metric.higher_is_better else metric.delta


def regressions(comparison: Comparison, margin: float = 0.0) -> list[MetricComparison]:
    """Metrics of B significantly worse than A by more than ``margin``, in table order."""
    if margin < 0:
        raise ValueError(f"margin must be at least 0, got {margin}")
    return [
        m
        for m in comparison.metrics
        if m.verdict == WORSE
        and m.p_adjusted is not None
        and m.p_adjusted < comparison.alpha
        and (w := worse_by(m)) is not None
        and w > margin
    ]


def describe(metric: MetricComparison) -> str:
    """One line for the terminal: which metric, by how much, how sure."""
    return (
        f"{metric.metric} worse by {worse_by(metric):.4f} "
        f"(mean {metric.mean_a:.4f} -> {metric.mean_b:.4f}, p = {metric.p_value:.4f}, "
        f"{metric.paired} paired cases)"
    )
