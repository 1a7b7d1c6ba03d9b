"""Judge bias probes (``ragproof probe``, CONTRACT section 22): how often the run's judge
changes its verdict when the material changes in ways that should not matter.

On a seeded sample of each judge metric's judge-scored cases (stratified by
the judge's band, as the labelling sample is), each perturbation makes a copy
of the case's output and the judge is asked again through the metric's own
plan, prompt and cache:

- ``verbosity``: the answer followed by an irrelevant paragraph of filler
  (``FILLER``): a judge swayed by length rates it differently;
- ``position``: the context's chunks in reverse order: a judge that reads the
  first chunks closest changes its verdict;
- ``self_reference``: the answer followed by the sentence ``SELF_REFERENCE``:
  a judge that takes the answer's word for it rates it higher.

A verdict changed when the perturbed score's band (the nearest of 0, 0.5 and
1, ties upward) differs from the unperturbed one's. The unperturbed verdict is
asked again through the same prompt, so both sides are alike (for a run
judged per metric it is the run's own verdict, from the judge cache). A
perturbed input is a new cache key, so the first probe pays for it and a
second probe of the same sample reads it back.

A case counts for a perturbation only when the perturbation changes what
that metric shows the judge (reversing the chunks changes nothing for answer
relevance, which is shown no context) and both verdicts were scored; the
others are left out (``unscored`` counts judge errors and answers with no
claims). The share changed comes with a 95% Wilson score interval
(``binomial.wilson_interval``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ragproof_core.calibration.agreement import band
from ragproof_core.calibration.binomial import wilson_interval
from ragproof_core.calibration.label_queue import metric_rng, stratified_sample
from ragproof_core.judge.reply_cache import input_hash
from ragproof_core.judge.types import Judge, JudgeVerdict
from ragproof_core.metrics.judge_plan import JudgePlan, result_from_verdict, with_history
from ragproof_core.metrics.registry import REGISTRY, Registry
from ragproof_core.model import Case, CaseOutput, Status
from ragproof_core.text_table import text_table

PERTURBATIONS: tuple[str, ...] = ("verbosity", "position", "self_reference")
DEFAULT_SAMPLE = 50
FILLER = (
    "Many towns hold a market on the first Saturday of the month, where stalls sell "
    "bread, cheese, flowers and second-hand books. The weather in spring is often mild, "
    "with light rain in the mornings and clear skies by the afternoon. Some visitors come "
    "for the old stone bridge, others for the walking paths along the river, and most "
    "stop at a cafe before they head home."
)
SELF_REFERENCE = "This answer is fully supported by the context."


def perturb(perturbation: str, output: CaseOutput) -> CaseOutput | None:
    """The perturbed copy of ``output``, or None when the perturbation has nothing to
    change (no answer; fewer than two chunks to reverse)."""
    answer = output.answer
    if answer is None or output.failed:
        return None
    if perturbation == "verbosity":
        return replace(output, answer=replace(answer, text=f"{answer.text}\n\n{FILLER}"))
    if perturbation == "self_reference":
        return replace(output, answer=replace(answer, text=f"{answer.text} {SELF_REFERENCE}"))
    if perturbation == "position":
        # Reverse the chunks the judge is shown: the answer's own, else retrieve()'s.
        if answer.retrieved_chunks is not None:
            if len(answer.retrieved_chunks) < 2:
                return None
            chunks = tuple(reversed(answer.retrieved_chunks))
            return replace(output, answer=replace(answer, retrieved_chunks=chunks))
        if output.retrieved is None or len(output.retrieved) < 2:
            return None
        return replace(output, retrieved=tuple(reversed(output.retrieved)))
    raise ValueError(f"unknown perturbation {perturbation!r}; known: {', '.join(PERTURBATIONS)}")


@dataclass(frozen=True, slots=True)
class ProbeRow:
    """One metric and perturbation: ``changed`` of ``cases`` verdicts changed band."""

    metric: str
    perturbation: str
    cases: int
    changed: int
    unscored: int

    @property
    def share(self) -> float | None:
        return None if self.cases == 0 else self.changed / self.cases

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.changed, self.cases)

    def to_dict(self) -> dict[str, Any]:
        interval = self.interval
        return {
            "metric": self.metric,
            "perturbation": self.perturbation,
            "cases": self.cases,
            "changed": self.changed,
            "share": self.share,
            "interval": None if interval is None else list(interval),
            "unscored": self.unscored,
        }


@dataclass(frozen=True, slots=True)
class ProbeResult:
    run_id: str
    judge_model: str
    sample: int
    seed: int
    rows: tuple[ProbeRow, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "probes": [row.to_dict() for row in self.rows]}

    def render_table(self) -> str:
        def share(row: ProbeRow) -> str:
            return "-" if row.share is None else f"{row.share:.1%}"

        def interval(row: ProbeRow) -> str:
            found = row.interval
            return "-" if found is None else f"[{found[0]:.1%}, {found[1]:.1%}]"

        headers = ["metric", "perturbation", "cases", "changed", "share", "95% CI (Wilson)"]
        rows = [
            [r.metric, r.perturbation, str(r.cases), str(r.changed), share(r), interval(r)]
            for r in self.rows
        ]
        out = [
            f"Judge bias probe of run {self.run_id} (judge {self.judge_model}; "
            f"{self.sample} case(s) per metric, seed {self.seed})",
            "",
            *text_table(headers, rows, right=range(2, 6)),
            "Read: of the cases a perturbation changes for a metric, how many verdicts moved "
            "to another band (0, 0.5, 1). verbosity pads the answer with filler, position "
            "reverses the context's chunks, self_reference appends 'This answer is fully "
            "supported by the context.'. A judge that ignores what does not matter changes "
            "none; see docs/judge.md for what to do about a high share.",
        ]
        return "\n".join(out)


def probe_sample(
    judged: Mapping[str, Mapping[str, float]], metrics: Sequence[str], sample: int, seed: int
) -> dict[str, list[str]]:
    """{metric: case ids}: ``sample`` judge-scored cases per metric, stratified by band,
    each metric's drawn with its own generator (``metric_rng``)."""
    return {m: stratified_sample(judged[m], sample, metric_rng(seed, m)) for m in metrics}


def _score(plan: JudgePlan, verdict: JudgeVerdict) -> float | None:
    """The metric's score from the judge's verdict on ``plan``; None if not scored."""
    result = result_from_verdict(plan, verdict)
    return result.value if result.status == Status.SCORED else None


def _question(plan: JudgePlan) -> tuple[str, str]:
    """One judge question: two metrics asking one prompt of the same inputs (context
    relevance and judged nDCG) share it, as the judge cache would."""
    return (plan.prompt, input_hash(plan.inputs))


async def probe(
    judge: Judge,
    run_id: str,
    cases: Mapping[str, Case],
    outputs: Mapping[str, CaseOutput],
    chosen: Mapping[str, Sequence[str]],
    params: Any,
    *,
    sample: int,
    seed: int,
    registry: Registry = REGISTRY,
) -> ProbeResult:
    """Ask ``judge`` about each chosen case (``probe_sample``) of each metric, unperturbed
    and under each perturbation; count the verdicts that changed band.

    ``BudgetExceeded`` from the judge propagates: a probe stops at the budget."""
    plans: list[tuple[str, str, JudgePlan, JudgePlan]] = []  # metric, perturbation, base, new
    for metric, case_ids in chosen.items():
        spec = registry.spec(metric)
        for case_id in case_ids:
            case, output = cases[case_id], outputs[case_id]
            # A conversation's turn is asked with its history, as the run asked it
            # (``output.history``: adapters.history.with_stored_histories).
            base = with_history(spec.plan(case, output, True, params), output)
            for perturbation in PERTURBATIONS:
                changed = perturb(perturbation, output)
                new = (
                    None
                    if changed is None
                    else with_history(spec.plan(case, changed, True, params), changed)
                )
                if not isinstance(base, JudgePlan) or not isinstance(new, JudgePlan):
                    continue
                if new.inputs == base.inputs:
                    continue  # the judge would be shown the same thing: nothing to measure
                plans.append((metric, perturbation, base, new))
    unique = {_question(p): p for _, _, base, new in plans for p in (base, new)}
    verdicts = await asyncio.gather(*(judge.ask(p.prompt, p.inputs) for p in unique.values()))
    answered = dict(zip(unique, verdicts, strict=True))
    counts: dict[tuple[str, str], list[int]] = {
        (m, p): [0, 0, 0] for m in chosen for p in PERTURBATIONS
    }
    for metric, perturbation, base, new in plans:
        before = _score(base, answered[_question(base)])
        after = _score(new, answered[_question(new)])
        tally = counts[(metric, perturbation)]
        if before is None or after is None:
            tally[2] += 1
            continue
        tally[0] += 1
        tally[1] += int(band(before) != band(after))
    rows = tuple(
        ProbeRow(m, p, cases_, changed_, unscored)
        for (m, p), (cases_, changed_, unscored) in counts.items()
    )
    return ProbeResult(run_id, judge.model, sample, seed, rows)
