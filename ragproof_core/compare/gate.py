"""The regression gate of ``ragproof compare --fail-on-regression`` (CONTRACT section 10).

A metric regresses when the comparison's own verdict says B is significantly
worse than A (paired test, p < alpha, in the metric's direction), its p-value
adjusted for the number of metrics tested is below alpha too (Holm's method
unless the comparison was made with ``correction="none"``), and the mean
paired delta is worse by more than ``margin``. The margin lets a team accept
small, real changes (say 0.01 of recall) without failing CI.

For the metrics whose p95 compare reports (the system's own latency, tokens and
cost, CONTRACT section 18) the p95 regresses too: when the paired bootstrap
interval of its difference lies wholly beyond ``margin`` on the worse side (above
it for lower-is-better metrics), in the metric's own units.
"""

from __future__ import annotations

from ragproof_core.compare.comparison import WORSE, Comparison, MetricComparison


def worse_by(metric: MetricComparison) -> float | None:
    """How much worse B is than A in the metric's own direction (negative = better)."""
    if metric.delta is None:
        return None
    return -metric.delta if metric.higher_is_better else metric.delta


def mean_regressed(metric: MetricComparison, alpha: float, margin: float) -> bool:
    """B's mean is significantly worse (adjusted p < alpha) by more than ``margin``."""
    return (
        metric.verdict == WORSE
        and metric.p_adjusted is not None
        and metric.p_adjusted < alpha
        and (w := worse_by(metric)) is not None
        and w > margin
    )


def p95_regressed(metric: MetricComparison, margin: float) -> bool:
    """The p95 difference's interval lies wholly beyond ``margin`` on the worse side."""
    tail = metric.p95
    if tail is None:
        return False
    if metric.higher_is_better:
        return -tail.ci_high > margin
    return tail.ci_low > margin


def regressions(comparison: Comparison, margin: float = 0.0) -> list[MetricComparison]:
    """Metrics of B worse than A by more than ``margin`` (mean or p95), in table order."""
    if margin < 0:
        raise ValueError(f"margin must be at least 0, got {margin}")
    return [
        m
        for m in comparison.metrics
        if mean_regressed(m, comparison.alpha, margin) or p95_regressed(m, margin)
    ]


def describe(metric: MetricComparison) -> str:
    """One line for the terminal: which metric, by how much, how sure."""
    tail = metric.p95
    tail_text = ""
    if tail is not None:
        tail_text = (
            f"; p95 {tail.a:.4f} -> {tail.b:.4f}, 95% CI of the difference "
            f"[{tail.ci_low:+.4f}, {tail.ci_high:+.4f}]"
        )
    return (
        f"{metric.metric} worse by {worse_by(metric):.4f} "
        f"(mean {metric.mean_a:.4f} -> {metric.mean_b:.4f}, p = {metric.p_value:.4f}, "
        f"{metric.paired} paired cases{tail_text})"
    )
