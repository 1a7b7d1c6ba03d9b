"""The calibration report and what builds it: each fixture scored by the pipeline's
own metric code (``score_fixtures``), then the agreement with the human per prompt
(``build_report``). Shared by one judge's calibration (``calibrate``), a jury's
(``jury_calibration``) and combined mode's (``calibrate_combined``).

Judge calibration: how often the configured judge agrees with human scores.

Each human-scored fixture (``fixture_files``) is scored by the *same metric
code the pipeline runs* with the *same judge object*, so calibration measures
exactly what a run would report, and its judge calls are cached and budgeted
like any other. Both scores are mapped to three bands (0, 0.5, 1):

- exact agreement: same band;
- within-band agreement: bands at most one step (0.5) apart.

A fixture the judge could not score (judge_error, or a skip / not_applicable
the human did not expect) counts as a disagreement on both measures, and
judge errors are counted separately so a flaky judge is visible as such.

``critique_qa`` (the gate of ``ragproof generate qa``) is scored per flag
instead: exact when the judge agrees with the human on all three flags,
within band when on at least two (``ragproof_core.calibration.critique``).
``generate_nuggets`` (the writer of ``ragproof generate nuggets``) is scored by
how far its nuggets agree with the human's (``nugget_generation``): exact when
that agreement is band 1, within band when at least band 0.5. Neither has a
confusion matrix or kappa: their human score is not a band of the answer.

A prompt passes when both shares meet their thresholds (defaults 70% exact,
90% within band); calibration passes when every prompt does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragproof_core.calibration import critique, nugget_generation
from ragproof_core.calibration.agreement import BANDS, band, confusion_matrix, quadratic_kappa
from ragproof_core.calibration.fixture_files import (
    CALIBRATED_PROMPTS,
    GROUNDEDNESS_HISTORY,
    Fixture,
)
from ragproof_core.config.settings import RunSettings
from ragproof_core.judge.prompts import PROMPT_NAMES
from ragproof_core.judge.types import Judge
from ragproof_core.metrics.judge_plan import run_plan, with_history
from ragproof_core.metrics.registry import REGISTRY, MetricSpec, Registry
from ragproof_core.model import Answer, Case, CaseOutput, MetricResult, Status, TurnOf, turn_id
from ragproof_core.text_table import text_table

EXACT_THRESHOLD = 0.70
WITHIN_THRESHOLD = 0.90


def fixture_params(output: CaseOutput) -> RunSettings:
    """The run settings a fixture is scored with: judged retrieval grades every
    retrieved chunk of the fixture (k = all of them)."""
    return RunSettings(k=max(1, len(output.retrieved or ())))


def calibration_scorer(declared: MetricSpec) -> Callable[..., Awaitable[MetricResult]]:
    """The pipeline's own metric, ``(case, output, judge) -> MetricResult``, for a fixture."""

    async def score(case: Case, output: CaseOutput, judge: Judge | None) -> MetricResult:
        params = fixture_params(output)
        if declared.per_conversation:
            turns, outputs = conversation_of(case, output)
            return await run_plan(
                declared.conversation(turns, outputs, judge is not None, params), judge
            )
        planned = declared.plan(case, output, judge is not None, params)
        # A fixture with a history is a conversation's later turn, judged as a run does.
        return await run_plan(with_history(planned, output), judge)

    return score


def conversation_of(case: Case, output: CaseOutput) -> tuple[list[Case], list[CaseOutput]]:
    """A fixture's conversation as a run holds it: turns ``ID#1`` ... from its history,
    then its own question and answer as the last turn."""
    history = output.history or ()
    total = len(history) // 2 + 1
    pairs = [(history[i].content, history[i + 1].content) for i in range(0, len(history), 2)]
    pairs.append((case.question, "" if output.answer is None else output.answer.text))
    turns = [
        Case(turn_id(case.id, t), question, turn=TurnOf(case.id, t, total))
        for t, (question, _) in enumerate(pairs, start=1)
    ]
    outputs = [CaseOutput(c.id, Answer(text)) for c, (_, text) in zip(turns, pairs, strict=True)]
    return turns, outputs


def prompt_metrics(registry: Registry = REGISTRY) -> dict[str, MetricSpec]:
    """The metric that scores each calibrated evaluation prompt's fixtures (the registry's
    ``calibrates`` declarations)."""
    found = {prompt: registry.for_prompt(prompt) for prompt in PROMPT_NAMES}
    return {prompt: declared for prompt, declared in found.items() if declared is not None}


# The pipeline's own metric function for each prompt: (case, output, judge) -> MetricResult.
SCORERS: dict[str, Callable[..., Awaitable[MetricResult]]] = {
    **{prompt: calibration_scorer(m) for prompt, m in prompt_metrics().items()},
    # Scores the share of the human's three flags the judge agrees with.
    critique.PROMPT: critique.critique_agreement,
    # Scores how far the judge's nuggets agree with the human's.
    nugget_generation.PROMPT: nugget_generation.generation_agreement,
}
# Prompts scored as agreement with the human's own reply, not as a band of an answer.
AGREEMENT_PROMPTS = frozenset({critique.PROMPT, nugget_generation.PROMPT})
SCORERS[GROUNDEDNESS_HISTORY] = SCORERS["groundedness"]


@dataclass(frozen=True, slots=True)
class FixtureOutcome:
    fixture_id: str
    prompt: str
    human_score: float
    status: str  # the metric's status: scored, judge_error, skipped, not_applicable
    judge_score: float | None
    judge_band: float | None
    exact: bool
    within: bool
    detail: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.fixture_id,
            "prompt": self.prompt,
            "human_score": self.human_score,
            "status": self.status,
            "judge_score": self.judge_score,
            "judge_band": self.judge_band,
            "exact": self.exact,
            "within": self.within,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class PromptAgreement:
    prompt: str
    n: int
    exact: int
    within: int
    judge_errors: int
    unscored: int  # skipped or not_applicable: the metric gave no score
    exact_share: float
    within_share: float
    passed: bool
    # Over the fixtures the judge scored: rows human band, columns judge band (0, 0.5, 1).
    confusion: tuple[tuple[int, ...], ...] = ()
    kappa: float | None = None  # Cohen's kappa, quadratic weights (agreement.py)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "n": self.n,
            "exact": self.exact,
            "within": self.within,
            "exact_share": self.exact_share,
            "within_share": self.within_share,
        }
        if self.confusion:  # the score prompts; critique_qa scores flag agreement instead
            out["kappa_quadratic"] = self.kappa
            out["confusion"] = {
                "bands": list(BANDS),
                "rows": "human band",
                "columns": "judge band",
                "matrix": [list(row) for row in self.confusion],
            }
        out.update(judge_errors=self.judge_errors, unscored=self.unscored, passed=self.passed)
        return out


@dataclass(frozen=True, slots=True)
class CalibrationReport:
    judge_model: str
    exact_threshold: float
    within_threshold: float
    prompts: tuple[PromptAgreement, ...]
    outcomes: tuple[FixtureOutcome, ...]
    mode: str = "per_metric"  # combined: the combined fixtures in combined requests

    @property
    def passed(self) -> bool:
        return bool(self.prompts) and all(p.passed for p in self.prompts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "judge_model": self.judge_model,
            "mode": self.mode,
            "passed": self.passed,
            "exact_threshold": self.exact_threshold,
            "within_threshold": self.within_threshold,
            "prompts": {p.prompt: p.to_dict() for p in self.prompts},
            "fixtures": [o.to_dict() for o in self.outcomes],
        }

    def render_table(self) -> str:
        headers = ["prompt", "n", "exact", "within", "kappa", "judge errors", "result"]
        rows = [
            [
                p.prompt,
                str(p.n),
                f"{p.exact_share:.0%}",
                f"{p.within_share:.0%}",
                "-" if p.kappa is None else f"{p.kappa:.2f}",
                str(p.judge_errors),
                "pass" if p.passed else "FAIL",
            ]
            for p in self.prompts
        ]
        out = [f"Judge calibration: {self.judge_model} ({self.mode} mode)", ""]
        out += text_table(headers, rows)
        out.append(
            f"Read: exact = judge band equals the human band (0, 0.5, 1); within = at most one "
            f"band apart. Pass needs exact >= {self.exact_threshold:.0%} and within >= "
            f"{self.within_threshold:.0%} on every prompt. kappa = Cohen's kappa with quadratic "
            "weights over the bands (1 perfect, 0 chance level)."
        )
        out += ["", "Confusion (rows human band, columns judge band 0 / 0.5 / 1):"]
        for p in (p for p in self.prompts if p.confusion):
            cells = " | ".join(" ".join(f"{n:>3}" for n in row) for row in p.confusion)
            out.append(f"  {p.prompt:<17} {cells}")
        missed = [o for o in self.outcomes if not o.exact]
        if missed:
            out += ["", "Disagreements:"]
            for o in missed:
                judged = f"judge {o.judge_band:g}" if o.judge_band is not None else o.status
                note = f" ({o.detail})" if o.detail else ""
                out.append(f"  {o.prompt}/{o.fixture_id}: human {o.human_score:g}, {judged}{note}")
        out += ["", "PASSED" if self.passed else "FAILED"]
        return "\n".join(out)


def fixture_outcome(fixture: Fixture, result: MetricResult) -> FixtureOutcome:
    if fixture.prompt == critique.PROMPT and result.status is Status.SCORED:
        return critique_outcome(fixture, result)
    if fixture.prompt == nugget_generation.PROMPT and result.status is Status.SCORED:
        detail = nugget_generation.agreement_detail(fixture.case, result.judge_raw_json)
        return agreement_outcome(fixture, result, band(result.value), detail)
    human = band(fixture.human_score)
    if result.status is Status.SCORED and result.value is not None:
        judged = band(result.value)
        distance = abs(judged - human)
        return FixtureOutcome(
            fixture.id,
            fixture.prompt,
            fixture.human_score,
            result.status.value,
            result.value,
            judged,
            exact=distance == 0.0,
            within=distance <= 0.5,
            detail=None,
        )
    return FixtureOutcome(
        fixture.id,
        fixture.prompt,
        fixture.human_score,
        result.status.value,
        None,
        None,
        exact=False,
        within=False,
        detail=result.reason,
    )


def critique_outcome(fixture: Fixture, result: MetricResult) -> FixtureOutcome:
    judged = critique.agreement_band(result.value)
    differ = critique.differing_flags(fixture.case, result.judge_raw_json)
    detail = f"flags differ: {', '.join(differ)}" if differ else None
    return agreement_outcome(fixture, result, judged, detail)


def agreement_outcome(
    fixture: Fixture, result: MetricResult, judged: float, detail: str | None
) -> FixtureOutcome:
    """The outcome of a prompt scored as agreement with the human (``AGREEMENT_PROMPTS``):
    exact when the agreement is band 1, within band when at least band 0.5."""
    return FixtureOutcome(
        fixture.id,
        fixture.prompt,
        fixture.human_score,
        result.status.value,
        result.value,
        judged,
        exact=judged == 1.0,
        within=judged >= 0.5,
        detail=detail,
    )


def prompt_agreement(
    prompt: str, outcomes: list[FixtureOutcome], exact_threshold: float, within_threshold: float
) -> PromptAgreement:
    n = len(outcomes)
    exact = sum(o.exact for o in outcomes)
    within = sum(o.within for o in outcomes)
    exact_share = exact / n if n else 0.0
    within_share = within / n if n else 0.0
    # Kappa and the confusion matrix compare score bands: critique_qa's "score" is
    # the share of flags agreed, generate_nuggets' an agreement, not a band: neither has them.
    banded = prompt not in AGREEMENT_PROMPTS
    judged = [o for o in outcomes if o.judge_score is not None and banded]
    matrix = confusion_matrix([o.human_score for o in judged], [o.judge_score for o in judged])
    return PromptAgreement(
        prompt=prompt,
        n=n,
        exact=exact,
        within=within,
        judge_errors=sum(o.status == Status.JUDGE_ERROR.value for o in outcomes),
        unscored=sum(
            o.status in (Status.SKIPPED.value, Status.NOT_APPLICABLE.value) for o in outcomes
        ),
        exact_share=exact_share,
        within_share=within_share,
        # No fixtures is no evidence: it cannot pass.
        passed=n > 0 and exact_share >= exact_threshold and within_share >= within_threshold,
        confusion=tuple(tuple(row) for row in matrix) if banded else (),
        kappa=quadratic_kappa(matrix) if banded else None,
    )


def prompt_agreements(
    prompts: Sequence[str],
    outcomes: Sequence[FixtureOutcome],
    exact_threshold: float,
    within_threshold: float,
) -> tuple[PromptAgreement, ...]:
    """The agreement of each of ``prompts`` over its fixtures' outcomes, in that order."""
    return tuple(
        prompt_agreement(
            p, [o for o in outcomes if o.prompt == p], exact_threshold, within_threshold
        )
        for p in prompts
    )


async def score_fixtures(
    judge: Judge,
    fixtures: Sequence[Fixture],
    scorers: Mapping[str, Callable[..., Awaitable[MetricResult]]] = SCORERS,
) -> list[MetricResult]:
    """Each fixture scored by its prompt's pipeline metric; the judge's semaphore bounds calls."""
    results = await asyncio.gather(
        *(scorers[f.prompt](f.case, f.output, judge) for f in fixtures), return_exceptions=True
    )
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return list(results)


def build_report(
    judge_model: str,
    fixtures: Sequence[Fixture],
    results: Sequence[MetricResult],
    exact_threshold: float = EXACT_THRESHOLD,
    within_threshold: float = WITHIN_THRESHOLD,
) -> CalibrationReport:
    outcomes = [fixture_outcome(f, r) for f, r in zip(fixtures, results, strict=True)]
    # The shipped prompts in their order, then a config's own (rubric metrics).
    named = dict.fromkeys((*CALIBRATED_PROMPTS, *(f.prompt for f in fixtures)))
    present = [p for p in named if any(f.prompt == p for f in fixtures)]
    prompts = prompt_agreements(present, outcomes, exact_threshold, within_threshold)
    return CalibrationReport(
        judge_model=judge_model,
        exact_threshold=exact_threshold,
        within_threshold=within_threshold,
        prompts=prompts,
        outcomes=tuple(outcomes),
        mode="per_metric",
    )
