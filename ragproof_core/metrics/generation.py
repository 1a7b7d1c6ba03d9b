"""The four judge-backed generation metrics (metrics.md, "Generation metrics").

Each metric is a pure ``plan_*(case, output, judge_configured)`` (``plan``:
a skip result, or the prompt and inputs to ask plus a pure scorer of the
reply) and the familiar ``async def metric(case, output, judge)`` that runs
the plan in per_metric mode. The pipeline calls them only for outputs that
did not fail. ``BudgetExceeded`` from the judge propagates untouched so the
pipeline can abort the run.

``judge_raw_json`` holds the validated reply verbatim when the judge answered,
or ``{"error": ..., "raw": ...}`` (the last reply text, null if none arrived)
when it failed, so the column is always valid JSON.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from ragproof_core.judge.types import Judge
from ragproof_core.metrics.judge_plan import JudgePlan, Planned, run_plan, verdict_json
from ragproof_core.metrics.result_grid import every_case_skips
from ragproof_core.metrics.spec import MetricSpec, plan_without_params
from ragproof_core.model import (
    Case,
    CaseOutput,
    Chunk,
    MetricResult,
    case_error,
    not_applicable,
    scored,
    skipped,
)

__all__ = [
    "ANSWER_RELEVANCE",
    "CITATION_SUPPORT",
    "COMPLETENESS",
    "GROUNDEDNESS",
    "JUDGE_METRICS",
    "METRICS",
    "verdict_json",
]

GROUNDEDNESS = "generation.groundedness"
CITATION_SUPPORT = "generation.citation_support"
ANSWER_RELEVANCE = "generation.answer_relevance"
COMPLETENESS = "generation.completeness"

NO_JUDGE = "no judge configured (set RAGPROOF_JUDGE_MODEL)"
NO_ANSWER = "adapter produced no answer"
NO_CONTEXT = (
    "no context: the answer has no retrieved_chunks and the adapter does not expose retrieval"
)
NO_CITATIONS = "answer has no citations"
NO_EXPECTED_ANSWER = "case has no expected_answer"
NO_CLAIMS = "answer makes no factual claims"

RELEVANCE_SCORES = {"relevant": 1.0, "partial": 0.5, "irrelevant": 0.0}
COMPLETENESS_SCORES = {"complete": 1.0, "partial": 0.5, "missing": 0.0}

Metric = Callable[[Case, CaseOutput, Judge | None], Awaitable[MetricResult]]


def _reply_json(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False)


def _common_skip(metric: str, output: CaseOutput, has_judge: bool) -> MetricResult | None:
    if output.failed:  # defensive: the pipeline already counts case failures
        return case_error(output.case_id, metric, output.error or "case failed")
    if not has_judge:
        return skipped(output.case_id, metric, NO_JUDGE)
    if output.answer is None:
        return skipped(output.case_id, metric, NO_ANSWER)
    return None


def _chunks(chunks: tuple[Chunk, ...]) -> list[dict[str, str]]:
    return [{"id": chunk.id, "text": chunk.text} for chunk in chunks]


# --- groundedness ---------------------------------------------------------------------------


def plan_groundedness(case: Case, output: CaseOutput, has_judge: bool) -> Planned:
    early = _common_skip(GROUNDEDNESS, output, has_judge)
    if early is not None:
        return early
    context = output.context
    if context is None:
        return skipped(case.id, GROUNDEDNESS, NO_CONTEXT)
    return JudgePlan(
        case.id,
        GROUNDEDNESS,
        "groundedness",
        {"question": case.question, "answer": output.answer.text, "context": _chunks(context)},
        partial(score_groundedness, case.id),
    )


def score_groundedness(case_id: str, data: dict[str, Any]) -> MetricResult:
    """supported claims / total claims; zero claims is not_applicable."""
    claims = data["claims"]
    if not claims:
        return not_applicable(case_id, GROUNDEDNESS, NO_CLAIMS, _reply_json(data))
    supported = sum(1 for claim in claims if claim["supported"])
    return scored(case_id, GROUNDEDNESS, supported / len(claims), _reply_json(data))


# --- citation support -----------------------------------------------------------------------


def plan_citation_support(case: Case, output: CaseOutput, has_judge: bool) -> Planned:
    """supported cited ids / deduplicated cited ids.

    A cited id missing from the context cannot be shown to the judge and counts
    as unsupported; so does a cited id the judge returned no verdict for, or
    contradictory verdicts for (supported only if every verdict for it says so).
    """
    early = _common_skip(CITATION_SUPPORT, output, has_judge)
    if early is not None:
        return early
    context = output.context
    if context is None:
        return skipped(case.id, CITATION_SUPPORT, NO_CONTEXT)
    cited = list(dict.fromkeys(output.answer.citations or ()))
    if not cited:
        return skipped(case.id, CITATION_SUPPORT, NO_CITATIONS)
    by_id: dict[str, Chunk] = {}
    for chunk in context:
        by_id.setdefault(chunk.id, chunk)  # the first (highest-ranked) copy of a duplicated id
    shown = [cid for cid in cited if cid in by_id]
    if not shown:
        return scored(case.id, CITATION_SUPPORT, 0.0)
    return JudgePlan(
        case.id,
        CITATION_SUPPORT,
        "citation_support",
        {"answer": output.answer.text, "citations": _chunks(tuple(by_id[c] for c in shown))},
        partial(score_citation_support, case.id, tuple(shown), len(cited)),
    )


def score_citation_support(
    case_id: str, shown: tuple[str, ...], cited: int, data: dict[str, Any]
) -> MetricResult:
    votes: dict[str, bool] = {}
    for item in data["verdicts"]:
        chunk_id = item["chunk_id"]
        votes[chunk_id] = votes.get(chunk_id, True) and item["supported"]
    supported = sum(1 for cid in shown if votes.get(cid, False))
    return scored(case_id, CITATION_SUPPORT, supported / cited, _reply_json(data))


# --- answer relevance and completeness ------------------------------------------------------


def plan_answer_relevance(case: Case, output: CaseOutput, has_judge: bool) -> Planned:
    """relevant 1.0, partial 0.5, irrelevant 0.0."""
    early = _common_skip(ANSWER_RELEVANCE, output, has_judge)
    if early is not None:
        return early
    return JudgePlan(
        case.id,
        ANSWER_RELEVANCE,
        "answer_relevance",
        {"question": case.question, "answer": output.answer.text},
        partial(_score_verdict, case.id, ANSWER_RELEVANCE, RELEVANCE_SCORES),
    )


def plan_completeness(case: Case, output: CaseOutput, has_judge: bool) -> Planned:
    """complete 1.0, partial 0.5, missing 0.0; needs the case's expected_answer."""
    early = _common_skip(COMPLETENESS, output, has_judge)
    if early is not None:
        return early
    if case.expected_answer is None or not case.expected_answer.strip():
        return skipped(case.id, COMPLETENESS, NO_EXPECTED_ANSWER)
    return JudgePlan(
        case.id,
        COMPLETENESS,
        "completeness",
        {
            "question": case.question,
            "answer": output.answer.text,
            "expected_answer": case.expected_answer,
        },
        partial(_score_verdict, case.id, COMPLETENESS, COMPLETENESS_SCORES),
    )


def _score_verdict(
    case_id: str, metric: str, scores: dict[str, float], data: dict[str, Any]
) -> MetricResult:
    return scored(case_id, metric, scores[data["verdict"]], _reply_json(data))


# --- per_metric mode: the metric functions --------------------------------------------------


async def groundedness(case: Case, output: CaseOutput, judge: Judge | None) -> MetricResult:
    return await run_plan(plan_groundedness(case, output, judge is not None), judge)


async def citation_support(case: Case, output: CaseOutput, judge: Judge | None) -> MetricResult:
    return await run_plan(plan_citation_support(case, output, judge is not None), judge)


async def answer_relevance(case: Case, output: CaseOutput, judge: Judge | None) -> MetricResult:
    return await run_plan(plan_answer_relevance(case, output, judge is not None), judge)


async def completeness(case: Case, output: CaseOutput, judge: Judge | None) -> MetricResult:
    return await run_plan(plan_completeness(case, output, judge is not None), judge)


# Without a judge every case that did not fail skips each of them (``_common_skip``).
UNJUDGED_COLUMNS = every_case_skips(NO_JUDGE)

# Where these metrics come in the registry, the summary and the report (metrics.registry).
REPORT_ORDER = 40
METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        GROUNDEDNESS,
        True,
        "required",
        ("answer", "context"),
        "supported claims / claims",
        plan=plan_without_params(plan_groundedness),
        score_columns=UNJUDGED_COLUMNS,
        prompt="groundedness",
        reads=frozenset({"answer", "context"}),
    ),
    MetricSpec(
        CITATION_SUPPORT,
        True,
        "required",
        ("answer", "context", "citations"),
        "cited chunks that support the answer / cited chunks",
        plan=plan_without_params(plan_citation_support),
        score_columns=UNJUDGED_COLUMNS,
        prompt="citation_support",
        reads=frozenset({"answer", "citations", "context"}),
    ),
    MetricSpec(
        ANSWER_RELEVANCE,
        True,
        "required",
        ("answer",),
        "relevant 1, partial 0.5, irrelevant 0",
        plan=plan_without_params(plan_answer_relevance),
        score_columns=UNJUDGED_COLUMNS,
        prompt="answer_relevance",
        reads=frozenset({"answer"}),
    ),
    MetricSpec(
        COMPLETENESS,
        True,
        "required",
        ("answer", "expected_answer"),
        "complete 1, partial 0.5, missing 0",
        plan=plan_without_params(plan_completeness),
        score_columns=UNJUDGED_COLUMNS,
        prompt="completeness",
        reads=frozenset({"answer"}),
    ),
)

# (name, per_metric function) pairs, in declaration order.
JUDGE_METRICS: tuple[tuple[str, Metric], ...] = (
    (GROUNDEDNESS, groundedness),
    (CITATION_SUPPORT, citation_support),
    (ANSWER_RELEVANCE, answer_relevance),
    (COMPLETENESS, completeness),
)
