"""``ragproof plan``: cases needed per metric to detect a change of a given size.

From one stored run: each metric's per-case standard deviation over its
scored cases (``power.sample_sd``) gives ``power.cases_needed``. That is an
unpaired-difference bound; comparing the same cases in two runs (the paired
design ``compare`` uses) usually needs fewer, because the cases' own
difficulty cancels out of the differences.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragproof_core.compare.power import Z_ALPHA, Z_POWER, cases_needed, sample_sd
from ragproof_core.metrics.registry import metric_order
from ragproof_core.model import Status
from ragproof_core.text_table import text_table

if TYPE_CHECKING:
    # Annotations only: a process building no frame (the command) skips pandas' 0.4 s.
    import pandas as pd


@dataclass(frozen=True, slots=True)
class MetricPlan:
    metric: str
    scored: int
    sd: float | None
    cases_needed: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "scored": self.scored,
            "sd": self.sd,
            "cases_needed": self.cases_needed,
        }


@dataclass(frozen=True, slots=True)
class RunPlan:
    run_id: str
    delta: float
    metrics: tuple[MetricPlan, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "delta": self.delta,
            "alpha": 0.05,
            "power": 0.8,
            "z_alpha": Z_ALPHA,
            "z_power": Z_POWER,
            "metrics": [m.to_dict() for m in self.metrics],
        }

    def render_table(self) -> str:
        rows = [
            [
                m.metric,
                str(m.scored),
                "-" if m.sd is None else f"{m.sd:.4f}",
                _needed(m),
            ]
            for m in self.metrics
        ]
        headers = ["metric", "scored", "sd", "cases needed"]
        return "\n".join(
            [
                f"Cases needed to detect a change of {self.delta:g} in run {self.run_id} "
                "(two-sided alpha 0.05, power 80%):",
                "",
                *text_table(headers, rows),
                "Read: ceil(((1.96 + 0.8416) * sd / delta)^2) with sd this run's per-case "
                "standard deviation; an unpaired-difference bound, the paired comparison "
                "usually needs fewer.",
            ]
        )


def _needed(plan: MetricPlan) -> str:
    if plan.cases_needed is None:
        return "-"
    # sd 0 gives 0 cases, which reads as "none needed" rather than what it means.
    if plan.sd == 0:
        return "no variation: any difference is detectable"
    return str(plan.cases_needed)


def plan_run(run_id: str, results: pd.DataFrame, delta: float) -> RunPlan:
    """``results``: the run's case results (``case_results`` view columns)."""
    if not delta > 0:
        raise ValueError(f"--delta must be positive, got {delta:g}")
    metrics = metric_order(set(results["metric"].astype(str)))
    scored = results[(results["status"] == Status.SCORED.value) & results["value"].notna()]
    plans = []
    for metric in metrics:
        values = scored.loc[scored["metric"] == metric, "value"].astype(float).to_list()
        sd = sample_sd(values)
        plans.append(MetricPlan(metric, len(values), sd, cases_needed(sd, delta)))
    return RunPlan(run_id, delta, tuple(plans))
