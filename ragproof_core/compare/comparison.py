"""Compare two stored runs case by case: the core of ``ragproof compare``.

Every number here is *paired*: a metric is compared only over the cases that
both runs scored, so a run that skipped or errored on the hard cases cannot
look better by averaging over easier ones. Significance comes from a paired
randomization test and a paired bootstrap CI (``stats``).

Before anything is computed, the judge guard checks that both runs used the
same judge model and the same prompt versions: scores from different judges
are not comparable, and comparing them silently would report a judge change as
a pipeline change. The settings guard does the same for ``run.k`` and
``run.source_match``: precision at k = 3 and at k = 5 are different measures.

Each metric's p-value is also given adjusted for the number of metrics tested
(``correction``, Holm's method by default); the regression gate reads the
adjusted one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa

from ragproof_core.compare.correction import HOLM, adjust
from ragproof_core.compare.diagnosis_changes import AreaChange, diagnosis_changes, diagnosis_lines
from ragproof_core.compare.pairs import FramePairing, MetricPairs, Pairing, RunSide
from ragproof_core.compare.power import mde
from ragproof_core.compare.stats import (
    nearest_rank,
    paired_bootstrap_ci,
    paired_bootstrap_quantile_diff_ci,
    paired_randomization_p,
)
from ragproof_core.compare.stored_pairs import stored_pairing
from ragproof_core.metrics.registry import REGISTRY, Registry
from ragproof_core.store.run_store import RunStore, stored_run_settings
from ragproof_core.text_table import text_table

BETTER = "better"
WORSE = "worse"
NO_CHANGE = "no significant change"
A_ONLY = "scored in A only"
B_ONLY = "scored in B only"
NOT_PAIRED = "no cases scored in both"

CONFIDENCE = 0.95
# The metrics whose tail matters as much as their mean (CONTRACT section 18: the
# system's own latency, tokens and cost): compare adds their p95.
TAIL_FAMILIES: frozenset[str] = frozenset({"system"})
TAIL_FRACTION = 0.95
TAIL_NOTE = (
    "p95: nearest-rank 95th percentile over the paired cases; 95% CI: paired bootstrap of "
    "its difference (B - A). Latency depends on run.concurrency."
)


class MixedJudgesError(Exception):
    """The two runs were scored by different judges (model or prompt versions)."""

    def __init__(self, run_a: str, run_b: str, differences: list[str]) -> None:
        self.differences = differences
        super().__init__(
            f"runs {run_a} and {run_b} were judged differently: "
            + "; ".join(differences)
            + ". Their judge scores are not comparable."
        )


# The run settings that change what a metric measures.
COMPARED_SETTINGS: tuple[str, ...] = ("k", "source_match")


class MixedSettingsError(Exception):
    """The two runs were scored with different ``run.k`` or ``run.source_match``."""

    def __init__(self, run_a: str, run_b: str, differences: list[str]) -> None:
        self.differences = differences
        super().__init__(
            f"runs {run_a} and {run_b} were scored with different settings: "
            + "; ".join(differences)
            + ". Their retrieval scores are different measures."
        )


@dataclass(frozen=True, slots=True)
class PercentileComparison:
    """A percentile of both runs over the paired cases and its paired bootstrap interval."""

    a: float
    b: float
    delta: float  # b - a
    ci_low: float
    ci_high: float

    def to_dict(self) -> dict[str, float]:
        return {
            "a": self.a,
            "b": self.b,
            "delta": self.delta,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
        }


def compare_percentile(
    xa: np.ndarray, xb: np.ndarray, *, fraction: float, seed: int
) -> PercentileComparison:
    """The nearest-rank ``fraction`` percentile of paired values ``xa``, ``xb`` (n > 0)."""
    pa = float(nearest_rank(np.sort(xa), fraction))
    pb = float(nearest_rank(np.sort(xb), fraction))
    ci = paired_bootstrap_quantile_diff_ci(
        xa, xb, fraction=fraction, confidence=CONFIDENCE, seed=seed
    )
    assert ci is not None  # n > 0
    return PercentileComparison(pa, pb, pb - pa, ci[0], ci[1])


@dataclass(frozen=True, slots=True)
class MetricComparison:
    metric: str
    higher_is_better: bool
    scored_a: int  # cases this metric scored in A (paired or not)
    scored_b: int
    paired: int  # cases scored in both: the sample every figure below uses
    mean_a: float | None  # over the paired cases
    mean_b: float | None
    delta: float | None  # mean_b - mean_a
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    verdict: str
    # "status_a -> status_b": count, over cases present in both runs, only where they differ.
    transitions: dict[str, int] = field(default_factory=dict)
    # Minimum detectable effect at 80% power, alpha 0.05 (power.py); None below 2 pairs.
    mde: float | None = None
    # p_value adjusted over every compared metric with a p-value (Comparison.correction).
    p_adjusted: float | None = None
    # TAIL_FAMILIES only: the nearest-rank p95 of each run over the paired cases, its
    # difference (B - A) and the paired bootstrap interval of that difference.
    p95: PercentileComparison | None = None

    def to_dict(self) -> dict[str, Any]:
        tail = {} if self.p95 is None else {"p95": self.p95.to_dict()}
        return {
            **tail,
            "metric": self.metric,
            "higher_is_better": self.higher_is_better,
            "scored_a": self.scored_a,
            "scored_b": self.scored_b,
            "paired": self.paired,
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
            "delta": self.delta,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "verdict": self.verdict,
            "transitions": dict(self.transitions),
            "mde": self.mde,
        }


@dataclass(frozen=True, slots=True)
class Regression:
    metric: str
    case_id: str
    value_a: float
    value_b: float
    delta: float  # value_b - value_a; "worse" means negative, or positive for lower-is-better

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "case_id": self.case_id,
            "value_a": self.value_a,
            "value_b": self.value_b,
            "delta": self.delta,
        }


@dataclass(frozen=True, slots=True)
class Comparison:
    run_a: str
    run_b: str
    judge_model_a: str | None
    judge_model_b: str | None
    # Non-empty only when mixed judges were explicitly allowed.
    judge_differences: tuple[str, ...]
    alpha: float
    seed: int
    metrics: tuple[MetricComparison, ...]
    regressions: tuple[Regression, ...]
    # Metrics one run computed and the other did not select: named, never compared.
    only_in_a: tuple[str, ...] = ()
    only_in_b: tuple[str, ...] = ()
    # How p_adjusted was computed: "holm" or "none" (correction.CORRECTIONS).
    correction: str = HOLM
    # Non-empty only when mixed settings were explicitly allowed.
    settings_differences: tuple[str, ...] = ()
    # Trials per case of each run (CONTRACT section 27): with repeats, a case's value is
    # its mean over its scored trials.
    trials_a: int = 1
    trials_b: int = 1

    @property
    def mixed_judges(self) -> bool:
        return bool(self.judge_differences)

    @property
    def trials_note(self) -> str | None:
        """What a comparison of runs with repeats pairs; None when neither has repeats."""
        if self.trials_a == 1 and self.trials_b == 1:
            return None
        return (
            f"Trials per case: A {self.trials_a}, B {self.trials_b} (run.repeats): each case "
            "is paired by its mean over its scored trials."
        )

    @property
    def unscored(self) -> tuple[str, ...]:
        """The metrics neither run scored a case of: the tables leave them out by default
        (CONTRACT section 25); ``to_dict`` keeps them."""
        return tuple(m.metric for m in self.metrics if not (m.scored_a or m.scored_b))

    def shown(self, all_metrics: bool = False) -> tuple[MetricComparison, ...]:
        """The metrics the tables list: every one with ``all_metrics``, else those either
        run scored."""
        if all_metrics:
            return self.metrics
        return tuple(m for m in self.metrics if m.scored_a or m.scored_b)

    def render_table(self, all_metrics: bool = False) -> str:
        return render_table(self, all_metrics)

    def diagnosis(self) -> list[AreaChange]:
        """The claim diagnostics' areas ranked by how much more B loses there."""
        return diagnosis_changes(self.metrics)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "run_a": self.run_a,
            "run_b": self.run_b,
            "judge_model_a": self.judge_model_a,
            "judge_model_b": self.judge_model_b,
            "mixed_judges": self.mixed_judges,
            "judge_differences": list(self.judge_differences),
            "alpha": self.alpha,
            "confidence": CONFIDENCE,
            "seed": self.seed,
            "metrics": {m.metric: m.to_dict() for m in self.metrics},
            "regressions": [r.to_dict() for r in self.regressions],
            "metrics_only_in_a": list(self.only_in_a),
            "metrics_only_in_b": list(self.only_in_b),
            # Only when a run has repeats (CONTRACT section 27).
            **(
                {}
                if self.trials_note is None
                else {"trials_a": self.trials_a, "trials_b": self.trials_b}
            ),
        }
        diagnosis = self.diagnosis()
        if diagnosis:  # only when the claim diagnostics were compared
            out["diagnosis"] = [c.to_dict() for c in diagnosis]
        return out


def _prompt_hashes(record: Any) -> dict[str, str]:
    raw = getattr(record, "prompt_hashes", None)
    if raw is None:
        return {}
    if isinstance(raw, str):  # tolerate a record read straight from the SQL view
        raw = json.loads(raw) if raw.strip() else {}
    if not isinstance(raw, Mapping):
        raise TypeError(f"prompt_hashes must be a mapping, got {type(raw).__name__}")
    return {str(k): str(v) for k, v in raw.items()}


def _short(digest: str) -> str:
    return digest[:12]


def judge_differences(a: Any, b: Any) -> list[str]:
    """What differs between the judges of two run records, in a stable order.

    A run without a judge has ``judge_model`` None: against a judged run that
    is a model difference, so it counts as mixed. Two runs without a judge
    have nothing to differ on.
    """
    diffs: list[str] = []
    model_a = getattr(a, "judge_model", None)
    model_b = getattr(b, "judge_model", None)
    if model_a and model_b:
        # First: a mode change alters every prompt hash, and the hashes alone do not say why.
        mode_a = getattr(a, "judge_mode", None) or "per_metric"
        mode_b = getattr(b, "judge_mode", None) or "per_metric"
        if mode_a != mode_b:
            diffs.append(f"judge mode differs: {mode_a} vs {mode_b}")
    if model_a != model_b:
        diffs.append(f"judge model {model_a or '(none)'} vs {model_b or '(none)'}")
    hashes_a = _prompt_hashes(a)
    hashes_b = _prompt_hashes(b)
    for prompt in sorted(set(hashes_a) | set(hashes_b)):
        ha, hb = hashes_a.get(prompt), hashes_b.get(prompt)
        if ha == hb:
            continue
        if ha is None:
            diffs.append(f"prompt {prompt} missing in A (B has {_short(hb)})")
        elif hb is None:
            diffs.append(f"prompt {prompt} missing in B (A has {_short(ha)})")
        else:
            diffs.append(f"prompt {prompt} hash {_short(ha)} vs {_short(hb)}")
    return diffs


def run_trials(record: Any) -> int:
    """A run's trials per case (``run.repeats``; 1 for a run stored without)."""
    return int(stored_run_settings(record).get("repeats", 1))


def settings_differences(a: Any, b: Any) -> list[str]:
    """``run.k`` and ``run.source_match`` where both run records name them and differ.

    A record without stored settings (``config_json`` empty) has nothing to differ on.
    """
    run_a, run_b = stored_run_settings(a), stored_run_settings(b)
    return [
        f"run.{key} {run_a[key]} vs {run_b[key]}"
        for key in COMPARED_SETTINGS
        if key in run_a and key in run_b and run_a[key] != run_b[key]
    ]


def _verdict(delta: float, p_value: float, alpha: float, up_is_good: bool) -> str:
    # The verdict follows the test alone; the CI shows the size of the change.
    if p_value >= alpha or delta == 0.0:
        return NO_CHANGE
    return BETTER if (delta > 0) == up_is_good else WORSE


def _worst(
    metric: str, pairs: MetricPairs, deltas: np.ndarray, up_is_good: bool, limit: int
) -> list[Regression]:
    """The metric's ``limit`` worst regressions, worst first, ties by case id: all a
    comparison can show of it, without an object for every worse case of a large run."""
    worse = np.flatnonzero(deltas < 0 if up_is_good else deltas > 0)
    badness = deltas[worse] if up_is_good else -deltas[worse]
    # Stable: equal changes keep the pairs' case-id order.
    top = worse[np.argsort(badness, kind="stable")[:limit]]
    case_ids = pairs.case_ids.take(pa.array(top, pa.int64())).to_pylist()
    return [
        Regression(metric, case_id, float(pairs.xa[i]), float(pairs.xb[i]), float(deltas[i]))
        for case_id, i in zip(case_ids, top, strict=True)
    ]


def _compare_metric(
    metric: str,
    pairs: MetricPairs,
    *,
    seed: int,
    alpha: float,
    up_is_good: bool,
    tail: bool = False,
    top_regressions: int,
) -> tuple[MetricComparison, list[Regression]]:
    paired = len(pairs.xa)
    if not paired:
        if pairs.scored_a and not pairs.scored_b:
            verdict = A_ONLY
        elif pairs.scored_b and not pairs.scored_a:
            verdict = B_ONLY
        else:
            verdict = NOT_PAIRED
        result = MetricComparison(
            metric=metric,
            higher_is_better=up_is_good,
            scored_a=pairs.scored_a,
            scored_b=pairs.scored_b,
            paired=0,
            mean_a=None,
            mean_b=None,
            delta=None,
            ci_low=None,
            ci_high=None,
            p_value=None,
            verdict=verdict,
            transitions=pairs.transitions,
        )
        return result, []

    xa, xb = pairs.xa, pairs.xb
    deltas = xb - xa
    mean_a, mean_b = float(xa.mean()), float(xb.mean())
    delta = float(deltas.mean())
    ci = paired_bootstrap_ci(deltas, confidence=CONFIDENCE, seed=seed)
    p = paired_randomization_p(deltas, seed=seed)
    assert ci is not None and p is not None  # n > 0 here
    result = MetricComparison(
        metric=metric,
        higher_is_better=up_is_good,
        scored_a=pairs.scored_a,
        scored_b=pairs.scored_b,
        paired=paired,
        mean_a=mean_a,
        mean_b=mean_b,
        delta=delta,
        ci_low=ci[0],
        ci_high=ci[1],
        p_value=p,
        verdict=_verdict(delta, p, alpha, up_is_good),
        transitions=pairs.transitions,
        mde=mde(deltas),
        p95=compare_percentile(xa, xb, fraction=TAIL_FRACTION, seed=seed) if tail else None,
    )
    return result, _worst(metric, pairs, deltas, up_is_good, top_regressions)


def _has_tail(registry: Registry, metric: str) -> bool:
    found = registry.spec(metric)
    return found is not None and found.family in TAIL_FAMILIES


def compare_runs(
    a: RunSide,
    b: RunSide,
    *,
    allow_mixed_judges: bool = False,
    allow_mixed_settings: bool = False,
    seed: int = 0,
    alpha: float = 0.05,
    top_regressions: int = 10,
    registry: Registry = REGISTRY,
    correction: str = HOLM,
) -> Comparison:
    """Compare run B against run A (deltas are B - A). ``registry``: the metrics' order
    and directions, the runs' own metrics included (``metrics.custom.stored_registry``).

    Raises MixedJudgesError when the judges differ, and MixedSettingsError when
    ``run.k`` or ``run.source_match`` differ, unless allowed; then the
    differences are kept on the result so every report can show them.
    """
    return _compare(
        a.record,
        b.record,
        lambda: nullcontext(FramePairing(a, b)),
        allow_mixed_judges=allow_mixed_judges,
        allow_mixed_settings=allow_mixed_settings,
        seed=seed,
        alpha=alpha,
        top_regressions=top_regressions,
        registry=registry,
        correction=correction,
    )


def compare_stored_runs(
    store: RunStore,
    a: Any,
    b: Any,
    *,
    allow_mixed_judges: bool = False,
    allow_mixed_settings: bool = False,
    seed: int = 0,
    alpha: float = 0.05,
    top_regressions: int = 10,
    registry: Registry = REGISTRY,
    correction: str = HOLM,
) -> Comparison:
    """``compare_runs`` of the stored runs with records ``a`` and ``b``, read from the
    store's files a metric at a time (``stored_pairs``), never a whole results frame:
    the same comparison in a small fraction of the memory."""
    return _compare(
        a,
        b,
        lambda: stored_pairing(store, a.run_id, b.run_id, (run_trials(a), run_trials(b))),
        allow_mixed_judges=allow_mixed_judges,
        allow_mixed_settings=allow_mixed_settings,
        seed=seed,
        alpha=alpha,
        top_regressions=top_regressions,
        registry=registry,
        correction=correction,
    )


def _compare(
    record_a: Any,
    record_b: Any,
    open_pairing: Callable[[], AbstractContextManager[Pairing]],
    *,
    allow_mixed_judges: bool,
    allow_mixed_settings: bool,
    seed: int,
    alpha: float,
    top_regressions: int,
    registry: Registry,
    correction: str,
) -> Comparison:
    diffs = judge_differences(record_a, record_b)
    if diffs and not allow_mixed_judges:
        raise MixedJudgesError(record_a.run_id, record_b.run_id, diffs)
    settings = settings_differences(record_a, record_b)
    if settings and not allow_mixed_settings:
        raise MixedSettingsError(record_a.run_id, record_b.run_id, settings)
    limit = max(top_regressions, 0)
    results: list[MetricComparison] = []
    regressions: list[Regression] = []
    with open_pairing() as pairing:
        # A metric only one run selected has nothing to pair with: it is named, not compared.
        in_a, in_b = pairing.metrics_a, pairing.metrics_b
        metrics = registry.order(in_a & in_b)
        for metric in metrics:
            mc, regs = _compare_metric(
                metric,
                pairing.pairs(metric),
                seed=seed,
                alpha=alpha,
                up_is_good=registry.higher_is_better(metric),
                tail=_has_tail(registry, metric),
                top_regressions=limit,
            )
            results.append(mc)
            regressions.extend(regs)
    tested = [i for i, mc in enumerate(results) if mc.p_value is not None]
    adjusted = adjust([results[i].p_value for i in tested], correction)
    for i, p_adjusted in zip(tested, adjusted, strict=True):
        results[i] = replace(results[i], p_adjusted=p_adjusted)
    order = {m: i for i, m in enumerate(metrics)}
    # Worst first in each metric's own direction; ties by metric order, then case id.
    regressions.sort(
        key=lambda r: (
            -(-r.delta if registry.higher_is_better(r.metric) else r.delta),
            order[r.metric],
            r.case_id,
        )
    )
    return Comparison(
        run_a=str(record_a.run_id),
        run_b=str(record_b.run_id),
        judge_model_a=getattr(record_a, "judge_model", None),
        judge_model_b=getattr(record_b, "judge_model", None),
        judge_differences=tuple(diffs),
        alpha=alpha,
        seed=seed,
        metrics=tuple(results),
        regressions=tuple(regressions[:limit]),
        only_in_a=tuple(registry.order(in_a - in_b)),
        only_in_b=tuple(registry.order(in_b - in_a)),
        correction=correction,
        settings_differences=tuple(settings),
        trials_a=run_trials(record_a),
        trials_b=run_trials(record_b),
    )


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


def _signed(x: float | None) -> str:
    return "-" if x is None else f"{x:+.4f}"


def render_table(comparison: Comparison, all_metrics: bool = False) -> str:
    """The comparison as plain text for a terminal; metrics neither run scored are
    named below the table unless ``all_metrics``."""
    c = comparison
    shown = c.shown(all_metrics)
    out = [
        f"A: {c.run_a}  (judge {c.judge_model_a or 'none'})",
        f"B: {c.run_b}  (judge {c.judge_model_b or 'none'})",
    ]
    if c.mixed_judges:
        out.append("WARNING: mixed judges allowed; judge scores are not comparable:")
        out.extend(f"  - {d}" for d in c.judge_differences)
    if c.trials_note is not None:
        out.append(c.trials_note)
    out.append("")
    rows = [
        [
            m.metric + ("" if m.higher_is_better else " (lower is better)"),
            str(m.paired),
            _num(m.mean_a),
            _num(m.mean_b),
            _signed(m.delta),
            "-" if m.ci_low is None else f"[{_signed(m.ci_low)}, {_signed(m.ci_high)}]",
            _num(m.p_value),
            _num(m.mde),
            m.verdict,
        ]
        for m in shown
    ]
    headers = ["metric", "paired", "mean A", "mean B", "delta", "95% CI", "p", "MDE", "verdict"]
    out.extend(text_table(headers, rows, right={1, 2, 3, 4, 6, 7}))
    if len(shown) < len(c.metrics):
        hidden = len(c.metrics) - len(shown)
        out.append(
            f"Not shown: {hidden} metric{'s' if hidden != 1 else ''} neither run scored "
            "(--all-metrics lists them)."
        )
    out.append(
        f"Read: delta = B - A over the cases scored in both runs; verdict from a paired "
        f"sign-flip test at alpha {c.alpha:g}, in each metric's own direction; MDE = the "
        "smallest change these cases detect 80% of the time."
    )
    diagnosis = diagnosis_lines(c.diagnosis())
    if diagnosis:
        out += ["", *diagnosis]
    tails = [m for m in c.metrics if m.p95 is not None]
    if tails:
        out.append("")
        rows = [
            [
                m.metric,
                _num(m.p95.a),
                _num(m.p95.b),
                _signed(m.p95.delta),
                f"[{_signed(m.p95.ci_low)}, {_signed(m.p95.ci_high)}]",
            ]
            for m in tails
        ]
        out.extend(
            text_table(["metric", "p95 A", "p95 B", "delta", "95% CI"], rows, right={1, 2, 3})
        )
        out.append(TAIL_NOTE)
    for side, names in (("A", c.only_in_a), ("B", c.only_in_b)):
        if names:
            out.append(f"Not compared, computed in run {side} only: {', '.join(names)}")
    moves = [(m.metric, t, n) for m in c.metrics for t, n in m.transitions.items()]
    if moves:
        out.append("")
        out.append("Status changes (A -> B), cases present in both runs:")
        rows = [[m, t, str(n)] for m, t, n in moves]
        out.extend(text_table(["metric", "change", "cases"], rows, right={2}))
    if c.regressions:
        out.append("")
        out.append(f"Largest regressions (top {len(c.regressions)}):")
        out.extend(
            text_table(
                ["metric", "case", "A", "B", "delta"],
                [
                    [r.metric, r.case_id, _num(r.value_a), _num(r.value_b), _signed(r.delta)]
                    for r in c.regressions
                ],
                right={2, 3, 4},
            )
        )
    return "\n".join(out)
