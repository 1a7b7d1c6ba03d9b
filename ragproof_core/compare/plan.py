"""``ragproof plan``: cases needed per metric to detect a change of a given size.

From one stored run: each metric's per-case standard deviation over its
scored cases (``power.sample_sd``) gives ``power.cases_needed``. That is an
unpaired-difference bound; comparing the same cases in two runs (the paired
design ``compare`` uses) usually needs fewer, because the cases' own
difficulty cancels out of the differences.

A run with repeats (CONTRACT section 27) measures the two spreads apart: the
within-case sd s_w (``trials.within_case_sd``) and the sd of the per-case means
s_m (``trials.between_case_sd``) over n-bar trials a case. The cases' own
variance is then s_b^2 = max(0, s_m^2 - s_w^2 / n-bar), and a case's mean over
r trials has the variance s_b^2 + s_w^2 / r: the plan gives the cases needed
with r = 1, 2, 3, 5 and 10 trials a case (``TRIAL_OPTIONS``), its ``sd`` and
``cases_needed`` being those at the run's own trials. More trials help only
while s_w^2 / r is a real part of that variance; past it, only cases do.

Cases x trials is always fewest calls at one trial a case (n(r) r = z^2 (r s_b^2 +
s_w^2) / D^2 grows with r), so the plan answers what a team with a dataset of C cases
asks instead: the fewest trials a case (up to ``MAX_REPEATS``) with which these C
cases detect D, or, when none does, how many cases it needs: at one trial a case, and
at any number of trials (s_b alone: the floor more trials never go below).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragproof_core.compare.power import Z_ALPHA, Z_POWER, cases_needed, sample_sd
from ragproof_core.compare.trials import CaseTrials, between_case_sd, within_case_sd
from ragproof_core.config.settings import MAX_REPEATS
from ragproof_core.metrics.registry import metric_order
from ragproof_core.model import Status
from ragproof_core.text_table import text_table

if TYPE_CHECKING:
    # Annotations only: a process building no frame (the command) skips pandas' 0.4 s.
    import pandas as pd


# Trials per case the plan of a run with repeats weighs (module docstring).
TRIAL_OPTIONS = (1, 2, 3, 5, 10)


@dataclass(frozen=True, slots=True)
class TrialsPlan:
    """A run with repeats' measured spreads and the cases needed per trials a case."""

    trials: float  # the run's mean scored trials per case (n-bar)
    within_case_sd: float | None
    between_case_sd: float | None  # s_b: the cases' own sd, without the trials' noise
    cases_needed: dict[int, int | None]  # trials a case -> cases
    cases: int  # the run's cases with a scored trial (C)
    # The fewest trials a case (at most MAX_REPEATS) with which the run's C cases detect
    # the change; None when no number does.
    trials_needed: int | None
    # The cases needed however many trials a case (s_b alone); None when s_b is 0.
    cases_floor: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "trials": self.trials,
            "within_case_sd": self.within_case_sd,
            "between_case_sd": self.between_case_sd,
            "cases_needed_by_trials": {str(r): n for r, n in self.cases_needed.items()},
            "cases_with_a_scored_trial": self.cases,
            "trials_needed_with_these_cases": self.trials_needed,
            "cases_needed_at_any_trials": self.cases_floor,
        }


@dataclass(frozen=True, slots=True)
class MetricPlan:
    metric: str
    scored: int
    sd: float | None
    cases_needed: int | None
    # A run with repeats only (CONTRACT section 27).
    repeats: TrialsPlan | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "metric": self.metric,
            "scored": self.scored,
            "sd": self.sd,
            "cases_needed": self.cases_needed,
        }
        if self.repeats is not None:
            out.update(self.repeats.to_dict())
        return out


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
        if any(m.repeats is not None for m in self.metrics):
            return self._render_trials()
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

    def _render_trials(self) -> str:
        rows = []
        for m in self.metrics:
            t = m.repeats
            cells = [m.metric, str(m.scored)]
            if t is None:
                cells += ["-", "-"] + ["-"] * len(TRIAL_OPTIONS)
            else:
                cells += [_sd(t.within_case_sd), _sd(t.between_case_sd)]
                # Nothing varies: 0 cases would read as "none needed" (its advice says).
                still = _nothing_varies(t)
                cells += ["-" if still else _count(t.cases_needed[r]) for r in TRIAL_OPTIONS]
            rows.append(cells)
        # "cases' own sd" is s_b, not run --json's between_case_sd (the per-case means' sd,
        # which still holds the trials' noise): one name for two figures would mislead.
        headers = ["metric", "scored", "within sd", "cases' own sd"]
        headers += [f"{r} trial{'s' if r > 1 else ''}" for r in TRIAL_OPTIONS]
        return "\n".join(
            [
                f"Cases needed to detect a change of {self.delta:g} in run {self.run_id} "
                "(two-sided alpha 0.05, power 80%), by trials a case:",
                "",
                *text_table(headers, rows),
                "Read: ceil(((1.96 + 0.8416) * sd / delta)^2) with sd^2 = own^2 + "
                "within^2 / trials, the spreads this run's trials measured (own: the per-case "
                "means' sd less the trials' noise); more trials "
                "shrink only the within part, cases shrink both. An unpaired-difference "
                "bound, the paired comparison usually needs fewer.",
                *[line for m in self.metrics if (line := _advice(m, self.delta))],
            ]
        )


def _sd(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


def _nothing_varies(t: TrialsPlan) -> bool:
    """Neither cases nor trials vary: every count of cases needed is 0."""
    return all(n == 0 for n in t.cases_needed.values())


def _advice(plan: MetricPlan, delta: float) -> str | None:
    """One line per metric: the fewest trials a case with which the run's cases detect
    ``delta``, the cases it needs when no number of trials is enough, or that nothing
    varies (any change is detected)."""
    t = plan.repeats
    if t is None or not any(n is not None for n in t.cases_needed.values()):
        return None
    if _nothing_varies(t):
        return f"{plan.metric}: no variation in cases or trials: any difference is detectable"
    if t.trials_needed is not None:
        r = t.trials_needed
        return (
            f"{plan.metric}: the run's {t.cases} cases detect {delta:g} with {_trials(r)} "
            f"a case ({t.cases * r} trials in all)"
        )
    at_one = t.cases_needed[1]
    floor = (
        f"no fewer than {t.cases_floor} however many trials "
        f"(cases' own sd {_sd(t.between_case_sd)})"
        if t.cases_floor is not None
        # Cases alike (s_b 0): the trials' noise alone, at the most trials a run takes.
        else f"{cases_needed((t.within_case_sd or 0.0) / math.sqrt(MAX_REPEATS), delta)} "
        f"at {_trials(MAX_REPEATS)}"
    )
    return (
        f"{plan.metric}: {t.cases} cases cannot detect {delta:g} at up to {MAX_REPEATS} trials "
        f"a case: it needs more cases, {at_one} at 1 trial a case, {floor}"
    )


def _trials(r: int) -> str:
    return f"{r} trial{'s' if r > 1 else ''}"


def _fewest_trials(own: float, within: float, cases: int, delta: float) -> int | None:
    """The fewest trials r <= ``MAX_REPEATS`` with cases_needed(sqrt(own + within^2 / r))
    <= ``cases``; None when none."""
    for r in range(1, MAX_REPEATS + 1):
        needed = cases_needed(math.sqrt(own + within * within / r), delta)
        if needed is not None and needed <= cases:
            return r
    return None


def trials_plan(trials: CaseTrials, delta: float) -> TrialsPlan | None:
    """The plan of one metric's trials (module docstring); None without 2 cases."""
    between = between_case_sd(trials)
    if between is None:
        return None
    within = within_case_sd(trials) or 0.0
    n_bar = trials.trials / trials.cases
    own = max(0.0, between * between - within * within / n_bar)
    needed = {r: cases_needed(math.sqrt(own + within * within / r), delta) for r in TRIAL_OPTIONS}
    return TrialsPlan(
        n_bar,
        within_case_sd(trials),
        math.sqrt(own),
        needed,
        cases=trials.cases,
        trials_needed=_fewest_trials(own, within, trials.cases, delta),
        cases_floor=cases_needed(math.sqrt(own), delta) if own > 0 else None,
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
    repeated = "trial" in results.columns and bool((results["trial"].fillna(1) > 1).any())
    plans = []
    for metric in metrics:
        rows = scored.loc[scored["metric"] == metric]
        values = rows["value"].astype(float).to_list()
        if not repeated:
            sd = sample_sd(values)
            plans.append(MetricPlan(metric, len(values), sd, cases_needed(sd, delta)))
            continue
        # CONTRACT section 27: a case is its mean over its trials.
        trials = CaseTrials.of(rows["case_id"].astype(str).to_list(), values)
        sd = between_case_sd(trials)
        plans.append(
            MetricPlan(metric, len(values), sd, cases_needed(sd, delta), trials_plan(trials, delta))
        )
    return RunPlan(run_id, delta, tuple(plans))
