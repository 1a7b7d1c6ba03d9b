"""The four judge-backed generation metrics (metrics.md, "Generation metrics").

Each is ``async def metric(case, output, judge) -> MetricResult``. The pipeline
calls them only for outputs that did not fail. Skip rules are checked in the
order listed in ``docs/parts/judge.md``; ``BudgetExceeded`` from the judge
propagates untouched so the pipeline can abort the run.

``judge_raw_json`` holds the validated reply verbatim when the judge answered,
or ``{"error": ..., "raw": ...}`` (the last reply text, null if none arrived)
when it failed, so the column is always valid JSON.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from ragproof_core.judge.types import Judge, JudgeVerdict
from ragproof_core.model import (
    Case,
    CaseOutput,
    Chunk,
    MetricResult,
    case_error,
    judge_error,
    not_applicable,
    scored,
    skipped,
)

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


def verdict_json(verdict: JudgeVerdict) -> str:
    """What ``judge_raw_json`` stores: always JSON, so SQL's JSON functions work on it.

    The validated reply when the judge answered, else the error and the judge's
    last reply text (or null) verbatim.
    """
    if verdict.ok and verdict.data is not None:
        return _reply_json(verdict.data)
    return json.dumps({"error": verdict.error, "raw": verdict.raw}, ensure_ascii=False)


def _failure(case_id: str, metric: str, verdict: JudgeVerdict) -> MetricResult:
    return judge_error(case_id, metric, verdict.error or "judge failed", verdict_json(verdict))


def _common_skip(metric: str, output: CaseOutput, judge: Judge | None) -> MetricResult | None:
    if output.failed:  # defensive: the pipeline already counts case failures
        return case_error(output.case_id, metric, output.error or "case failed")
    if judge is None:
        return skipped(output.case_id, metric, NO_JUDGE)
    if output.answer is None:
        return skipped(output.case_id, metric, NO_ANSWER)
    return None


def _chunks(chunks: tuple[Chunk, ...]) -> list[dict[str, str]]:
    return [{"id": chunk.id, "text": chunk.text} for chunk in chunks]


async def groundedness(case: Case, output: CaseOutput, judge: Judge | None) -> MetricResult:
    """supported claims / total claims; zero claims is not_applicable."""
    early = _common_skip(GROUNDEDNESS, output, judge)
    if early is not None:
        return early
    context = output.context
    if context is None:
        return skipped(case.id, GROUNDEDNESS, NO_CONTEXT)
    verdict = await judge.ask(
        "groundedness",
        {"question": case.question, "answer": output.answer.text, "context": _chunks(context)},
    )
    if not verdict.ok:
        return _failure(case.id, GROUNDEDNESS, verdict)
    claims = verdict.data["claims"]
    if not claims:
        return not_applicable(case.id, GROUNDEDNESS, NO_CLAIMS, _reply_json(verdict.data))
    supported = sum(1 for claim in claims if claim["supported"])
    return scored(case.id, GROUNDEDNESS, supported / len(claims), _reply_json(verdict.data))


async def citation_support(case: Case, output: CaseOutput, judge: Judge | None) -> MetricResult:
    """supported cited ids / deduplicated cited ids.

    A cited id missing from the context cannot be shown to the judge and counts
    as unsupported; so does a cited id the judge returned no verdict for, or
    contradictory verdicts for (supported only if every verdict for it says so).
    """
    early = _common_skip(CITATION_SUPPORT, output, judge)
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
    verdict = await judge.ask(
        "citation_support",
        {"answer": output.answer.text, "citations": _chunks(tuple(by_id[c] for c in shown))},
    )
    if not verdict.ok:
        return _failure(case.id, CITATION_SUPPORT, verdict)
    votes: dict[str, bool] = {}
    for item in verdict.data["verdicts"]:
        chunk_id = item["chunk_id"]
        votes[chunk_id] = votes.get(chunk_id, True) and item["supported"]
    supported = sum(1 for cid in shown if votes.get(cid, False))
    return scored(case.id, CITATION_SUPPORT, supported / len(cited), _reply_json(verdict.data))


async def answer_relevance(case: Case, output: CaseOutput, judge: Judge | None) -> MetricResult:
    """relevant 1.0, partial 0.5, irrelevant 0.0."""
    early = _common_skip(ANSWER_RELEVANCE, output, judge)
    if early is not None:
        return early
    verdict = await judge.ask(
        "answer_relevance", {"question": case.question, "answer": output.answer.text}
    )
    if not verdict.ok:
        return _failure(case.id, ANSWER_RELEVANCE, verdict)
    value = RELEVANCE_SCORES[verdict.data["verdict"]]
    return scored(case.id, ANSWER_RELEVANCE, value, _reply_json(verdict.data))


async def completeness(case: Case, output: CaseOutput, judge: Judge | None) -> MetricResult:
    """complete 1.0, partial 0.5, missing 0.0; needs the case's expected_answer."""
    early = _common_skip(COMPLETENESS, output, judge)
    if early is not None:
        return early
    if case.expected_answer is None or not case.expected_answer.strip():
        return skipped(case.id, COMPLETENESS, NO_EXPECTED_ANSWER)
    verdict = await judge.ask(
        "completeness",
        {
            "question": case.question,
            "answer": output.answer.text,
            "expected_answer": case.expected_answer,
        },
    )
    if not verdict.ok:
        return _failure(case.id, COMPLETENESS, verdict)
    value = COMPLETENESS_SCORES[verdict.data["verdict"]]
    return scored(case.id, COMPLETENESS, value, _reply_json(verdict.data))


JUDGE_METRICS: tuple[tuple[str, Metric], ...] = (
    (GROUNDEDNESS, groundedness),
    (CITATION_SUPPORT, citation_support),
    (ANSWER_RELEVANCE, answer_relevance),
    (COMPLETENESS, completeness),
)
