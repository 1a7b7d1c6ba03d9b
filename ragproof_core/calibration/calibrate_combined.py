"""Calibration of combined judge mode: the combined prompt against human scores.

``fixtures/combined.jsonl`` holds cases a human scored on every judge prompt
that applies to them (at least ``MIN_PER_PROMPT`` per prompt)::

    {"id": "x01-...", "prompt": "combined",
     "case": {"question": "...", "expected_answer": "..."},
     "output": {"answer": {"text": "...", "retrieved_chunks": [...], "citations": [...]}},
     "human_scores": {"groundedness": 1, "citation_support": 0.5, "answer_relevance": 1,
                      "completeness": 1, "refusal": 0, "task_completion": 1,
                      "context_relevance": 0.5},
     "reason": "one line why"}

``task_completion`` judges an agent's answer: the fixture's ``output.answer``
carries the agent's ``steps`` (CONTRACT section 17).

``context_relevance`` grades the case's retrieval: ``output.retrieved`` (the
retrieve() result) when given, else the answer's ``retrieved_chunks`` (the
chunks the answer was written from), every chunk shown to the judge. Its human score is the
band (``agreement.band``: 0.75 counts 1) of the metric's mean of the human's
per-chunk grades (relevant 1, partial 0.5, irrelevant 0), the band being what
calibration compares.

Each fixture is judged by the pipeline's own combined path (``combined_run``:
one request carrying every prompt the fixture has a human score for), and
each prompt's result is compared with the human exactly as per_metric
calibration compares them (bands, exact / within-band agreement, kappa,
confusion matrix). The same fixtures can be run in per_metric mode, one
request per prompt, to measure how well the two modes agree
(``benchmarks/judge_modes.py``).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragproof_core.calibration.fixture_files import (
    DEFAULT_DIRECTORY,
    MIN_PER_PROMPT,
    Fixture,
    FixtureError,
    json_lines,
    parse_fixture,
)
from ragproof_core.calibration.report import (
    EXACT_THRESHOLD,
    SCORERS,
    WITHIN_THRESHOLD,
    CalibrationReport,
    calibration_scorer,
    fixture_outcome,
    fixture_params,
    prompt_agreements,
    prompt_metrics,
)
from ragproof_core.judge.jury import run_judged
from ragproof_core.judge.prompts import PROMPT_NAMES
from ragproof_core.judge.types import JudgeStopped
from ragproof_core.metrics.combined_run import combined_results
from ragproof_core.metrics.registry import REGISTRY, MetricSpec
from ragproof_core.model import Case, CaseOutput, MetricResult

DEFAULT_PATH = DEFAULT_DIRECTORY / "combined.jsonl"
# The metric that scores each prompt on a fixture (the registry's calibration map).
PROMPT_METRICS: dict[str, str] = {prompt: m.name for prompt, m in prompt_metrics().items()}
# The prompts these fixtures score: every evaluation prompt asked of one case, so each
# part a case's combined request can carry is calibrated in combined mode too
# (task_completion on the fixtures whose answer carries an agent's steps). A
# conversation's own prompt (knowledge_retention) is a request of its own, alone,
# calibrated by its conversation fixtures.
CALIBRATED: tuple[str, ...] = tuple(
    p for p in PROMPT_NAMES if not prompt_metrics()[p].per_conversation
)


@dataclass(frozen=True, slots=True)
class CombinedFixture:
    id: str
    case: Case
    output: CaseOutput
    human_scores: dict[str, float]  # prompt -> 0, 0.5 or 1
    where: str

    def parts(self) -> list[Fixture]:
        """One single-prompt ``Fixture`` per human score, for the shared agreement code."""
        return [
            Fixture(self.id, prompt, self.case, self.output, score, "", self.where)
            for prompt, score in self.human_scores.items()
        ]


def load_combined_fixtures(path: Path | str | None = None) -> list[CombinedFixture]:
    """The combined fixtures; ``FixtureError`` listing every problem found."""
    path = DEFAULT_PATH if path is None else Path(path)
    problems: list[str] = []
    fixtures: list[CombinedFixture] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise FixtureError([f"{path}: no such fixtures file"]) from None
    for where, obj in json_lines(path, lines, problems):
        fixture, found = _parse_combined(obj, where)
        problems.extend(found)
        if fixture is not None:
            fixtures.append(fixture)
    counts = Counter(p for f in fixtures for p in f.human_scores)
    for prompt in CALIBRATED:
        if counts[prompt] < MIN_PER_PROMPT:
            problems.append(
                f"{path}: prompt {prompt!r} has {counts[prompt]} human score(s), "
                f"at least {MIN_PER_PROMPT} needed"
            )
    if problems:
        raise FixtureError(problems)
    return fixtures


def _parse_combined(obj: Any, where: str) -> tuple[CombinedFixture | None, list[str]]:
    if not isinstance(obj, dict) or not isinstance(obj.get("human_scores"), dict):
        return None, [f"{where}: a combined fixture needs an object human_scores"]
    scores = obj["human_scores"]
    unknown = sorted(set(scores) - set(CALIBRATED))
    if unknown or not scores:
        return None, [f"{where}: human_scores keys must be prompts, got {sorted(scores)}"]
    problems: list[str] = []
    parsed: dict[str, Fixture] = {}
    output = _with_retrieval(obj.get("output"))
    # Each prompt's score is checked by the single-prompt fixture rules.
    for prompt in (p for p in CALIBRATED if p in scores):
        single = {**obj, "output": output, "prompt": prompt, "human_score": scores[prompt]}
        single.pop("human_scores")
        fixture, found = parse_fixture(single, where, prompt)
        problems.extend(f"{message} [{prompt}]" for message in found)
        if fixture is not None:
            parsed[prompt] = fixture
    if problems or not parsed:
        return None, problems
    first = next(iter(parsed.values()))
    # The answer prompts read output.answer, context_relevance output.retrieved:
    # one output carries both, as a run's case output does.
    merged = CaseOutput(
        first.id,
        answer=next((f.output.answer for f in parsed.values() if f.output.answer), None),
        retrieved=next((f.output.retrieved for f in parsed.values() if f.output.retrieved), None),
    )
    scored = {prompt: f.human_score for prompt, f in parsed.items()}
    return CombinedFixture(first.id, first.case, merged, scored, where), []


def _with_retrieval(output: Any) -> Any:
    """``output`` with ``retrieved`` defaulting to the answer's ``retrieved_chunks``."""
    if not isinstance(output, dict) or "retrieved" in output:
        return output
    answer = output.get("answer")
    chunks = answer.get("retrieved_chunks") if isinstance(answer, dict) else None
    return output if chunks is None else {**output, "retrieved": chunks}


async def calibrate_combined(
    judge: Any,
    fixtures: list[CombinedFixture] | Path | str | None = None,
    *,
    exact_threshold: float = EXACT_THRESHOLD,
    within_threshold: float = WITHIN_THRESHOLD,
    extra: Sequence[tuple[MetricSpec, Sequence[Fixture]]] = (),
) -> CalibrationReport:
    """Judge every combined fixture in one combined request each and report agreement.

    ``extra``: a config's rubric metrics with their own fixtures (prompt = the metric's
    name, its rubric prompt given to ``judge``); each fixture is one combined request
    whose one part is the rubric's, as the metric is asked in a combined run, and the
    rubrics are reported after the shipped prompts."""
    if fixtures is None or isinstance(fixtures, Path | str):
        fixtures = load_combined_fixtures(fixtures)
    registry = REGISTRY.with_metrics(declared for declared, _ in extra)
    stopped: list[JudgeStopped] = []

    def on_stop(stop: JudgeStopped) -> str:
        stopped.append(stop)
        return stop.skip_reason

    async def ask(case: Case, output: CaseOutput, chosen: list) -> list[MetricResult]:
        # context_relevance joins the combined request as in a run, over every
        # retrieved chunk (k = all of them, as per_metric calibration grades them).
        # A jury asks each model and combines their results per metric, as a run does.
        def one(chosen_judge: Any) -> Awaitable[list[MetricResult]]:
            return combined_results(
                case,
                output,
                chosen_judge,
                chosen,
                on_stop,
                fixture_params(output),
                registry,
            )

        return list(await run_judged(one, judge))

    def shipped(fixture: CombinedFixture) -> Awaitable[list[MetricResult]]:
        chosen = [(PROMPT_METRICS[p], SCORERS[p]) for p in fixture.human_scores]
        return ask(fixture.case, fixture.output, chosen)

    def rubric(declared: MetricSpec, fixture: Fixture) -> Awaitable[list[MetricResult]]:
        chosen = [(declared.name, calibration_scorer(declared))]
        return ask(fixture.case, fixture.output, chosen)

    own = [(declared, f) for declared, found in extra for f in found]
    results = await asyncio.gather(
        *(shipped(f) for f in fixtures), *(rubric(declared, f) for declared, f in own)
    )
    if stopped:
        raise stopped[0]
    singles = [*(s for f in fixtures for s in f.parts()), *(f for _, f in own)]
    flat = (r for rs in results for r in rs)
    outcomes = [fixture_outcome(s, r) for s, r in zip(singles, flat, strict=True)]
    named = (*CALIBRATED, *dict.fromkeys(declared.name for declared, _ in extra))
    present = [p for p in named if any(o.prompt == p for o in outcomes)]
    prompts = prompt_agreements(present, outcomes, exact_threshold, within_threshold)
    return CalibrationReport(
        judge_model=judge.model,
        exact_threshold=exact_threshold,
        within_threshold=within_threshold,
        prompts=prompts,
        outcomes=tuple(outcomes),
        mode="combined",
    )
