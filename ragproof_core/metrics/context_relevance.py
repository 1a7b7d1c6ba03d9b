"""Judged retrieval metrics: context relevance and judged nDCG (CONTRACT section 15).

They need no ``expected_source_ids``: a judge grades each of the top-k retrieved
chunks against the question (prompt ``context_relevance``), and both metrics
come from that one reply:

- ``retrieval.context_relevance``: mean over the chunks of relevant 1, partial
  0.5, irrelevant 0; a chunk the reply gives no verdict for counts 0;
- ``retrieval.judged_ndcg_at_k``: nDCG over the same chunks with those gains,
  IDCG from the same gains sorted descending; ``not_applicable`` when no chunk
  was judged relevant or partial (IDCG would be 0).

Written as a pure ``plan`` (what to ask, or the results without asking) and a
pure ``score`` (results from a validated reply), so the judge call can be made
by whoever batches questions (per-metric mode here, a combined call later) and
scored the same way.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from ragproof_core.judge.types import Judge, JudgeVerdict
from ragproof_core.metrics.judge_plan import JudgePlan, Planned, inputs_with_history
from ragproof_core.metrics.result_grid import every_case_skips
from ragproof_core.metrics.spec import MetricGroup, MetricSpec
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

CONTEXT_RELEVANCE = "retrieval.context_relevance"
JUDGED_NDCG_AT_K = "retrieval.judged_ndcg_at_k"
CONTEXT_METRICS: tuple[str, str] = (CONTEXT_RELEVANCE, JUDGED_NDCG_AT_K)
PROMPT = "context_relevance"

GAINS: dict[str, float] = {"relevant": 1.0, "partial": 0.5, "irrelevant": 0.0}

NO_JUDGE = "no judge configured (set RAGPROOF_JUDGE_MODEL)"
NO_RETRIEVAL = "adapter does not expose retrieval"
NOTHING_RELEVANT = "no retrieved chunk was judged relevant or partial"
NOTHING_RETRIEVED = "nothing was retrieved"

Pair = tuple[MetricResult, MetricResult]


@dataclass(frozen=True, slots=True)
class ContextPlan:
    """The judge question for one case: the deduplicated top-k chunks, in rank order."""

    case_id: str
    chunks: tuple[Chunk, ...]

    @property
    def chunk_ids(self) -> tuple[str, ...]:
        return tuple(chunk.id for chunk in self.chunks)

    def inputs(self, question: str) -> dict[str, Any]:
        return {
            "question": question,
            "chunks": [{"id": chunk.id, "text": chunk.text} for chunk in self.chunks],
        }


def top_chunks(retrieved: Sequence[Chunk], k: int) -> tuple[Chunk, ...]:
    """The first ``k`` distinct chunk ids, each at its first (highest) rank."""
    first: dict[str, Chunk] = {}
    for chunk in retrieved:
        first.setdefault(chunk.id, chunk)
        if len(first) == k:
            break
    return tuple(first.values())


def plan(case: Case, output: CaseOutput, k: int, judge_configured: bool) -> ContextPlan | Pair:
    """What to ask the judge for this case, or both results when no call is needed."""
    if output.failed:  # defensive: the pipeline already counts case failures
        reason = output.error or "case failed"
        return case_error(case.id, CONTEXT_RELEVANCE, reason), case_error(
            case.id, JUDGED_NDCG_AT_K, reason
        )
    if not judge_configured:
        return skipped(case.id, CONTEXT_RELEVANCE, NO_JUDGE), skipped(
            case.id, JUDGED_NDCG_AT_K, NO_JUDGE
        )
    if output.retrieved is None:
        return skipped(case.id, CONTEXT_RELEVANCE, NO_RETRIEVAL), skipped(
            case.id, JUDGED_NDCG_AT_K, NO_RETRIEVAL
        )
    chunks = top_chunks(output.retrieved, k)
    if not chunks:
        # Nothing to judge and nothing to pay for: an empty retrieval found nothing relevant.
        return scored(case.id, CONTEXT_RELEVANCE, 0.0), not_applicable(
            case.id, JUDGED_NDCG_AT_K, NOTHING_RETRIEVED
        )
    return ContextPlan(case.id, chunks)


def gains(chunk_ids: Sequence[str], verdicts: Sequence[Mapping[str, Any]]) -> list[float]:
    """The gain of each chunk in rank order; no verdict counts 0.

    A chunk given several verdicts gets the lowest of them: a reply that
    contradicts itself earns no benefit of the doubt. Verdicts for ids that
    were not shown are ignored.
    """
    best: dict[str, float] = {}
    for item in verdicts:
        gain = GAINS[item["relevance"]]
        chunk_id = item["chunk_id"]
        best[chunk_id] = min(gain, best.get(chunk_id, gain))
    return [best.get(chunk_id, 0.0) for chunk_id in chunk_ids]


def mean_gain(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def dcg(values: Sequence[float]) -> float:
    """Sum of gain / log2(rank + 1) over 1-based ranks, summed left to right."""
    total = 0.0
    for position, gain in enumerate(values):
        total += gain / math.log2(position + 2)
    return total


def judged_ndcg(values: Sequence[float]) -> float | None:
    """DCG / IDCG with IDCG from the same gains sorted descending; None when IDCG is 0."""
    ideal = dcg(sorted(values, reverse=True))
    if ideal == 0.0:
        return None
    return dcg(values) / ideal


def score_context_relevance(plan: ContextPlan, data: Mapping[str, Any]) -> MetricResult:
    """``retrieval.context_relevance`` from a validated ``context_relevance`` reply."""
    raw = json.dumps(data, ensure_ascii=False)
    value = mean_gain(gains(plan.chunk_ids, data["verdicts"]))
    return scored(plan.case_id, CONTEXT_RELEVANCE, value, raw)


def score_judged_ndcg(plan: ContextPlan, data: Mapping[str, Any]) -> MetricResult:
    """``retrieval.judged_ndcg_at_k`` from the same reply."""
    raw = json.dumps(data, ensure_ascii=False)
    ndcg = judged_ndcg(gains(plan.chunk_ids, data["verdicts"]))
    if ndcg is None:
        return not_applicable(plan.case_id, JUDGED_NDCG_AT_K, NOTHING_RELEVANT, raw)
    return scored(plan.case_id, JUDGED_NDCG_AT_K, ndcg, raw)


# Each metric's scorer, for a caller that batches questions per metric (one part of a
# combined request serves both: they ask the same prompt with the same inputs).
SCORERS = {CONTEXT_RELEVANCE: score_context_relevance, JUDGED_NDCG_AT_K: score_judged_ndcg}


def score(plan: ContextPlan, data: Mapping[str, Any]) -> Pair:
    """Both results from a validated ``context_relevance`` reply."""
    return score_context_relevance(plan, data), score_judged_ndcg(plan, data)


def failure(plan: ContextPlan, verdict: JudgeVerdict) -> Pair:
    raw = json.dumps({"error": verdict.error, "raw": verdict.raw}, ensure_ascii=False)
    reason = verdict.error or "judge failed"
    return (
        judge_error(plan.case_id, CONTEXT_RELEVANCE, reason, raw),
        judge_error(plan.case_id, JUDGED_NDCG_AT_K, reason, raw),
    )


async def context_relevance_results(
    case: Case, output: CaseOutput, judge: Judge | None, k: int
) -> Pair:
    """One judge call (at most) for both metrics. ``BudgetExceeded`` propagates."""
    planned = plan(case, output, k, judge is not None)
    if not isinstance(planned, ContextPlan):
        return planned
    verdict = await judge.ask(PROMPT, inputs_with_history(planned.inputs(case.question), output))
    if not verdict.ok:
        return failure(planned, verdict)
    return score(planned, verdict.data)


async def context_relevance(case: Case, output: CaseOutput, judge: Judge | None) -> MetricResult:
    """``retrieval.context_relevance`` over every retrieved chunk: calibration's scorer."""
    k = max(1, len(output.retrieved or ()))
    return (await context_relevance_results(case, output, judge, k))[0]


# --- the declarations ------------------------------------------------------------------------


def _plan_member(metric: str):
    """One member's plan: both ask the same ``context_relevance`` part (same prompt, same
    inputs), so combined mode carries it once and scores both from that one sub-reply."""

    def plan_metric(case: Case, output: CaseOutput, has_judge: bool, params: Any) -> Planned:
        planned = plan(case, output, params.k, has_judge)
        if not isinstance(planned, ContextPlan):
            return planned[CONTEXT_METRICS.index(metric)]
        return JudgePlan(
            case.id,
            metric,
            PROMPT,
            planned.inputs(case.question),
            partial(SCORERS[metric], planned),
        )

    return plan_metric


async def _ask_both(case: Case, output: CaseOutput, judge: Judge | None, params: Any) -> Pair:
    return await context_relevance_results(case, output, judge, params.k)


# per_metric mode asks one judge call for both (usage is counted under the group's name).
# Without a judge both skip every case that did not fail (``plan``).
CONTEXT_GROUP = MetricGroup(
    CONTEXT_RELEVANCE, CONTEXT_METRICS, ask=_ask_both, score_columns=every_case_skips(NO_JUDGE)
)

# Where these metrics come in the registry, the summary and the report (metrics.registry).
REPORT_ORDER = 20
METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        CONTEXT_RELEVANCE,
        True,
        "required",
        ("retrieval",),
        "judged top-k chunks: relevant 1, partial 0.5, irrelevant 0 (mean)",
        plan=_plan_member(CONTEXT_RELEVANCE),
        group=CONTEXT_GROUP,
        prompt=PROMPT,
        cutoff="k",
        reads=frozenset({"retrieved"}),
    ),
    MetricSpec(
        JUDGED_NDCG_AT_K,
        True,
        "required",
        ("retrieval",),
        "nDCG over the top k with the judged gains 1 / 0.5 / 0",
        plan=_plan_member(JUDGED_NDCG_AT_K),
        group=CONTEXT_GROUP,
        prompt=PROMPT,
        cutoff="k",
        reads=frozenset({"retrieved"}),
    ),
)
