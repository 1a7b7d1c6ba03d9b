"""How the places a run loses changed between two runs (CONTRACT section 20).

Each area of ``metrics.diagnostics.AREAS`` (retrieval, use of evidence,
invention, noise) is read from its metric's paired comparison: its loss in A
and in B (1 - the mean of a higher-is-better metric, the mean of a lower-is-
better one), the change of the loss (B - A, positive = B loses more there), its
paired bootstrap interval turned the same way, and the metric's own paired test.
The areas are ranked by that change, the largest new loss first: where B got
worse most heads the list, where it got better most ends it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragproof_core.metrics.diagnostics import AREAS, Area
from ragproof_core.text_table import text_table


@dataclass(frozen=True, slots=True)
class AreaChange:
    area: Area
    paired: int
    loss_a: float
    loss_b: float
    ci_low: float
    ci_high: float
    p_value: float | None
    p_adjusted: float | None
    verdict: str

    @property
    def change(self) -> float:
        return self.loss_b - self.loss_a

    def to_dict(self) -> dict[str, Any]:
        return {
            "area": self.area.name,
            "metric": self.area.metric,
            "paired": self.paired,
            "loss_a": self.loss_a,
            "loss_b": self.loss_b,
            "change": self.change,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "verdict": self.verdict,
        }


def diagnosis_changes(metrics: Sequence[Any]) -> list[AreaChange]:
    """The areas whose metric both runs scored on paired cases (``metrics``: the
    comparison's ``MetricComparison`` rows), largest new loss first (ties in ``AREAS``
    order)."""
    by_name = {m.metric: m for m in metrics}
    changes = []
    for area in AREAS:
        m = by_name.get(area.metric)
        if m is None or not m.paired:
            continue
        # The loss moves against a higher-is-better metric: its interval flips.
        sign = -1.0 if area.higher_is_better else 1.0
        low, high = sorted((sign * m.ci_low, sign * m.ci_high))
        changes.append(
            AreaChange(
                area,
                m.paired,
                area.loss(m.mean_a),
                area.loss(m.mean_b),
                low,
                high,
                m.p_value,
                m.p_adjusted,
                m.verdict,
            )
        )
    order = {area.name: i for i, area in enumerate(AREAS)}
    return sorted(changes, key=lambda c: (-c.change, order[c.area.name]))


def diagnosis_lines(changes: Sequence[AreaChange]) -> list[str]:
    """The ranking as the terminal prints it (nothing without changes)."""
    if not changes:
        return []
    rows = [
        [
            c.area.name,
            str(c.paired),
            f"{c.loss_a:.4f}",
            f"{c.loss_b:.4f}",
            f"{c.change:+.4f}",
            f"[{c.ci_low:+.4f}, {c.ci_high:+.4f}]",
            "-" if c.p_value is None else f"{c.p_value:.4f}",
            c.verdict,
        ]
        for c in changes
    ]
    headers = ["area", "paired", "lost A", "lost B", "change", "95% CI", "p", "verdict"]
    return [
        "Diagnosis changes (where B loses more than A first; loss = the share of claims lost):",
        *text_table(headers, rows, right={1, 2, 3, 4, 6}),
    ]
