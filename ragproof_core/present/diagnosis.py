"""Where a run loses most, from its claim-level diagnostics (CONTRACT section 20).

Each place a run can lose (``metrics.diagnostics.AREAS``) is read from one metric:
retrieval from ``retrieval.claim_recall`` (reference claims no chunk supports),
use of evidence from ``generation.context_utilization`` (supported reference
claims the answer leaves out), invention from ``generation.hallucination`` and
noise from ``generation.noise_sensitivity``. An area's *loss* is the share its
metric counts as lost (1 - the mean of a higher-is-better metric, the mean of a
lower-is-better one), with the mean's 95% interval turned the same way. The run
loses most where the loss is largest; when that area's interval overlaps the
next one's, the lead is not clear and the diagnosis says so.

Each loss is a share of its own claims (reference claims for the first two,
answer claims for the others) over the cases that metric scored: the four are
read side by side, not summed. Areas whose metric scored no case are left out;
a run without any has no diagnosis.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragproof_core.metrics.diagnostics import AREAS, Area
from ragproof_core.text_table import text_table


@dataclass(frozen=True, slots=True)
class MetricFigure:
    """A metric's mean over its scored cases, the mean's 95% interval, and the count."""

    mean: float
    ci: tuple[float, float] | None
    scored: int


@dataclass(frozen=True, slots=True)
class AreaLoss:
    area: Area
    figure: MetricFigure

    @property
    def loss(self) -> float:
        return self.area.loss(self.figure.mean)

    @property
    def ci(self) -> tuple[float, float] | None:
        ci = self.figure.ci
        if ci is None:
            return None
        ends = sorted((self.area.loss(ci[0]), self.area.loss(ci[1])))
        return ends[0], ends[1]

    @property
    def read(self) -> str:
        """How the loss is read off the metric (``1 - x`` or ``x``)."""
        metric = self.area.metric
        return f"1 - {metric}" if self.area.higher_is_better else metric

    def to_dict(self) -> dict[str, Any]:
        return {
            "area": self.area.name,
            "metric": self.area.metric,
            "higher_is_better": self.area.higher_is_better,
            "mean": self.figure.mean,
            "ci": None if self.figure.ci is None else list(self.figure.ci),
            "loss": self.loss,
            "loss_ci": None if self.ci is None else list(self.ci),
            "scored": self.figure.scored,
            "counts": self.area.counts,
            "action": self.area.action,
        }


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """The areas with scored cases, largest loss first (ties in ``AREAS`` order)."""

    losses: tuple[AreaLoss, ...]

    @property
    def lead(self) -> AreaLoss:
        return self.losses[0]

    @property
    def runner_up(self) -> AreaLoss | None:
        return self.losses[1] if len(self.losses) > 1 else None

    @property
    def clear(self) -> bool:
        """Whether the largest loss's interval lies wholly above the next one's (False
        when either has no interval)."""
        second = self.runner_up
        if second is None:
            return True
        if self.lead.ci is None or second.ci is None:
            return False
        return self.lead.ci[0] > second.ci[1]

    def headline(self) -> str:
        lead, second = self.lead, self.runner_up
        line = f"diagnosis: the run loses most to {lead.area.name}"
        if second is not None and not self.clear:
            line += f", not clearly ahead of {second.area.name} (their intervals overlap)"
        return line

    def lines(self) -> list[str]:
        """The diagnosis as a terminal prints it: the headline, the areas, what to look at."""
        rows = [
            [
                loss.area.name,
                f"{loss.loss:.4f}",
                "-" if loss.ci is None else f"[{loss.ci[0]:.4f}, {loss.ci[1]:.4f}]",
                str(loss.figure.scored),
                f"{loss.area.counts} ({loss.read})",
            ]
            for loss in self.losses
        ]
        table = text_table(["area", "lost", "95% CI", "cases", "share of"], rows, right={1, 3})
        return [
            self.headline(),
            *(f"  {line}" for line in table),
            f"  look at: {self.lead.area.action}",
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "lead": self.lead.area.name,
            "clear": self.clear,
            "headline": self.headline(),
            "areas": [loss.to_dict() for loss in self.losses],
        }


def diagnose(figures: Mapping[str, MetricFigure]) -> Diagnosis | None:
    """The diagnosis from the metrics' figures (by name), or None when no area's metric
    scored a case."""
    losses = [AreaLoss(area, figures[area.metric]) for area in AREAS if _scored(figures, area)]
    if not losses:
        return None
    order = {area.name: i for i, area in enumerate(AREAS)}
    losses.sort(key=lambda loss: (-loss.loss, order[loss.area.name]))
    return Diagnosis(tuple(losses))


def _scored(figures: Mapping[str, MetricFigure], area: Area) -> bool:
    figure = figures.get(area.metric)
    return figure is not None and figure.scored > 0


def diagnosis_metrics() -> Sequence[str]:
    """The metrics a diagnosis reads."""
    return tuple(area.metric for area in AREAS)
