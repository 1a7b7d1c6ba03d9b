"""Claim-level diagnostics and nuggets (CONTRACT section 20): where a run loses, not only
how much.

Claims (prompt ``claim_check``, one judge call per case with an answer, an
``expected_answer`` and a context). The judge splits the answer into claims R
and the reference (the expected answer) into claims G; each claim of R says
whether the reference states it (``in_reference``), each claim of G whether the
answer states it (``in_response``), and every claim lists the context chunks
that support it (``chunk_ids``; ids not in the context are ignored). A claim is
*supported* when some chunk supports it; a chunk is *relevant* when some claim
of G names it. Then, RAGChecker's metrics as the contract defines them:

- ``generation.claim_precision`` = R in the reference / |R|;
- ``generation.claim_recall`` = G in the response / |G|;
- ``retrieval.claim_recall`` = G supported / |G|;
- ``retrieval.context_precision`` = relevant chunks among the context's top k / k;
- ``generation.context_utilization`` = G supported and in the response / G supported;
- ``generation.hallucination`` = R neither in the reference nor supported / |R|;
- ``generation.self_knowledge`` = R in the reference but not supported / |R|;
- ``generation.noise_sensitivity`` = R not in the reference but supported / |R|.

Empty R or G makes the metrics that read it ``not_applicable``, never 0: those
dividing by it, and context precision too, whose relevant chunks are G's (with
no reference claim no chunk can be relevant, as a case without
``expected_source_ids`` has no relevant source). Context utilization is
``not_applicable`` when no claim of G is supported. All eight skip cases
without ``expected_answer``, without an answer, or without a context.

Nuggets (prompt ``nugget_support``, one call per case with an answer and
``nuggets``): the judge says how fully the answer states each nugget, by its
0-based index (full 1, partial 0.5, none 0; a nugget without a verdict is
none, a verdict for an index the case does not have is ignored, and a nugget
given several verdicts gets the lowest). ``generation.nugget_recall`` is the
mean over the nuggets, ``generation.vital_nugget_recall`` over the vital ones
(``not_applicable`` when none is vital).

Each metric's ``plan`` is the pure half combined mode asks (every member of a
family asks the same part with the same inputs, so a case's request carries it
once); per_metric mode asks one call for a family's members (``MetricGroup``).
The reply is stored verbatim on every member's result.

The claim metrics are opt-in (``default=False``): they add a judge part to every
case with a reference answer, so a run that names nothing costs what it always
did. The nugget metrics are on by default: only cases carrying nuggets ask.

``AREAS`` says which of these metrics names each place a run can lose
(``present.diagnosis`` and ``compare`` read it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from ragproof_core.judge.types import Judge
from ragproof_core.metrics.generation import (
    NO_ANSWER,
    NO_CONTEXT,
    NO_EXPECTED_ANSWER,
    NO_JUDGE,
)
from ragproof_core.metrics.judge_plan import (
    JudgePlan,
    Planned,
    result_from_verdict,
    with_history,
)
from ragproof_core.metrics.result_grid import every_case_skips
from ragproof_core.metrics.spec import MetricGroup, MetricSpec
from ragproof_core.model import (
    Case,
    CaseOutput,
    MetricResult,
    Nugget,
    case_error,
    not_applicable,
    scored,
    skipped,
)

CLAIM_PROMPT = "claim_check"
NUGGET_PROMPT = "nugget_support"

CLAIM_PRECISION = "generation.claim_precision"
CLAIM_RECALL = "generation.claim_recall"
RETRIEVAL_CLAIM_RECALL = "retrieval.claim_recall"
CONTEXT_PRECISION = "retrieval.context_precision"
CONTEXT_UTILIZATION = "generation.context_utilization"
HALLUCINATION = "generation.hallucination"
SELF_KNOWLEDGE = "generation.self_knowledge"
NOISE_SENSITIVITY = "generation.noise_sensitivity"
CLAIM_METRICS: tuple[str, ...] = (
    CLAIM_PRECISION,
    CLAIM_RECALL,
    RETRIEVAL_CLAIM_RECALL,
    CONTEXT_PRECISION,
    CONTEXT_UTILIZATION,
    HALLUCINATION,
    SELF_KNOWLEDGE,
    NOISE_SENSITIVITY,
)
NUGGET_RECALL = "generation.nugget_recall"
VITAL_NUGGET_RECALL = "generation.vital_nugget_recall"
NUGGET_METRICS: tuple[str, ...] = (NUGGET_RECALL, VITAL_NUGGET_RECALL)

NO_RESPONSE_CLAIMS = "the answer makes no factual claims"
NO_REFERENCE_CLAIMS = "the expected answer makes no factual claims"
NO_SUPPORTED_REFERENCE = "no claim of the expected answer is supported by a chunk"
NO_NUGGETS = "case has no nuggets"
EMPTY_NUGGETS = "the case's nuggets list is empty"
NO_VITAL_NUGGETS = "no nugget is vital"

SUPPORT_SCORES: dict[str, float] = {"full": 1.0, "partial": 0.5, "none": 0.0}


# --- claims ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Claim:
    """One claim of a reply: its text, whether the other text states it (``in_reference``
    for the answer's, ``in_response`` for the reference's) and the context chunks that
    support it (ids in the context only, each once, in the reply's order)."""

    text: str
    matched: bool
    chunk_ids: tuple[str, ...]

    @property
    def supported(self) -> bool:
        return bool(self.chunk_ids)


@dataclass(frozen=True, slots=True)
class ClaimSet:
    """A case's claims from one validated ``claim_check`` reply, and its context's top k."""

    response: tuple[Claim, ...]  # R
    reference: tuple[Claim, ...]  # G
    top_ids: tuple[str, ...]  # the context's first k distinct chunk ids, in rank order
    k: int

    @property
    def relevant(self) -> frozenset[str]:
        """The chunks some reference claim names."""
        return frozenset(cid for claim in self.reference for cid in claim.chunk_ids)


def claims_of(
    items: Sequence[Mapping[str, Any]], flag: str, context: frozenset[str]
) -> tuple[Claim, ...]:
    """A reply's claims, ``flag`` (``in_reference`` or ``in_response``) as ``matched``."""
    return tuple(
        Claim(
            item["claim"],
            item[flag],
            tuple(dict.fromkeys(cid for cid in item["chunk_ids"] if cid in context)),
        )
        for item in items
    )


def claim_set(data: Mapping[str, Any], context_ids: Sequence[str], k: int) -> ClaimSet:
    """The claims of a validated reply over a context (its chunk ids in rank order)."""
    context = frozenset(context_ids)
    return ClaimSet(
        claims_of(data["response_claims"], "in_reference", context),
        claims_of(data["reference_claims"], "in_response", context),
        tuple(dict.fromkeys(context_ids))[:k],
        k,
    )


# A figure: the value, or None with the reason it is not applicable.
Figure = tuple[float | None, str | None]


def share(count: int, total: int, empty: str) -> Figure:
    return (None, empty) if total == 0 else (count / total, None)


def claim_precision(claims: ClaimSet) -> Figure:
    r = claims.response
    return share(sum(c.matched for c in r), len(r), NO_RESPONSE_CLAIMS)


def claim_recall(claims: ClaimSet) -> Figure:
    g = claims.reference
    return share(sum(c.matched for c in g), len(g), NO_REFERENCE_CLAIMS)


def retrieval_claim_recall(claims: ClaimSet) -> Figure:
    g = claims.reference
    return share(sum(c.supported for c in g), len(g), NO_REFERENCE_CLAIMS)


def context_precision(claims: ClaimSet) -> Figure:
    if not claims.reference:
        return None, NO_REFERENCE_CLAIMS
    relevant = claims.relevant
    return sum(cid in relevant for cid in claims.top_ids) / claims.k, None


def context_utilization(claims: ClaimSet) -> Figure:
    if not claims.reference:
        return None, NO_REFERENCE_CLAIMS
    supported = [c for c in claims.reference if c.supported]
    return share(sum(c.matched for c in supported), len(supported), NO_SUPPORTED_REFERENCE)


def hallucination(claims: ClaimSet) -> Figure:
    r = claims.response
    return share(sum(not c.matched and not c.supported for c in r), len(r), NO_RESPONSE_CLAIMS)


def self_knowledge(claims: ClaimSet) -> Figure:
    r = claims.response
    return share(sum(c.matched and not c.supported for c in r), len(r), NO_RESPONSE_CLAIMS)


def noise_sensitivity(claims: ClaimSet) -> Figure:
    r = claims.response
    return share(sum(not c.matched and c.supported for c in r), len(r), NO_RESPONSE_CLAIMS)


CLAIM_FIGURES: dict[str, Callable[[ClaimSet], Figure]] = {
    CLAIM_PRECISION: claim_precision,
    CLAIM_RECALL: claim_recall,
    RETRIEVAL_CLAIM_RECALL: retrieval_claim_recall,
    CONTEXT_PRECISION: context_precision,
    CONTEXT_UTILIZATION: context_utilization,
    HALLUCINATION: hallucination,
    SELF_KNOWLEDGE: self_knowledge,
    NOISE_SENSITIVITY: noise_sensitivity,
}


@dataclass(frozen=True, slots=True)
class ClaimQuestion:
    """What ``claim_check`` is asked of one case, and what scoring its reply needs."""

    case_id: str
    inputs: dict[str, Any]
    context_ids: tuple[str, ...]  # in rank order, duplicates included
    k: int


def plan_claims(case: Case, output: CaseOutput, has_judge: bool, k: int) -> ClaimQuestion | str:
    """The question for this case, or why every claim metric skips it."""
    if not has_judge:
        return NO_JUDGE
    if output.answer is None:
        return NO_ANSWER
    if case.expected_answer is None or not case.expected_answer.strip():
        return NO_EXPECTED_ANSWER
    context = output.context
    if context is None:
        return NO_CONTEXT
    inputs = {
        "question": case.question,
        "answer": output.answer.text,
        "expected_answer": case.expected_answer,
        # The context exactly as groundedness is shown it, so a combined request
        # carrying both parts sends the chunks once.
        "context": [{"id": chunk.id, "text": chunk.text} for chunk in context],
    }
    return ClaimQuestion(case.id, inputs, tuple(chunk.id for chunk in context), k)


def score_claims(question: ClaimQuestion, metric: str, data: Mapping[str, Any]) -> MetricResult:
    """One claim metric from a validated ``claim_check`` reply (stored verbatim)."""
    raw = json.dumps(data, ensure_ascii=False)
    value, reason = CLAIM_FIGURES[metric](claim_set(data, question.context_ids, question.k))
    if value is None:
        return not_applicable(question.case_id, metric, reason, raw)
    return scored(question.case_id, metric, value, raw)


# --- nuggets --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NuggetQuestion:
    case_id: str
    inputs: dict[str, Any]
    nuggets: tuple[Nugget, ...]


def plan_nuggets(case: Case, output: CaseOutput, has_judge: bool) -> NuggetQuestion | str:
    if not has_judge:
        return NO_JUDGE
    if output.answer is None:
        return NO_ANSWER
    if case.nuggets is None:
        return NO_NUGGETS
    inputs = {
        "question": case.question,
        "answer": output.answer.text,
        "nuggets": [nugget.text for nugget in case.nuggets],
    }
    return NuggetQuestion(case.id, inputs, case.nuggets)


def nugget_support(count: int, verdicts: Sequence[Mapping[str, Any]]) -> list[float]:
    """The support score of each of ``count`` nuggets, in order: a missing verdict is
    none (0), an index outside the nuggets is ignored, several verdicts give the lowest."""
    lowest: dict[int, float] = {}
    for item in verdicts:
        index, value = item["index"], SUPPORT_SCORES[item["support"]]
        if 0 <= index < count:
            lowest[index] = min(value, lowest.get(index, value))
    return [lowest.get(i, 0.0) for i in range(count)]


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def nugget_recall(nuggets: Sequence[Nugget], support: Sequence[float]) -> Figure:
    return (mean(support), None) if nuggets else (None, EMPTY_NUGGETS)


def vital_nugget_recall(nuggets: Sequence[Nugget], support: Sequence[float]) -> Figure:
    vital = [value for nugget, value in zip(nuggets, support, strict=True) if nugget.vital]
    if not nuggets:
        return None, EMPTY_NUGGETS
    return (mean(vital), None) if vital else (None, NO_VITAL_NUGGETS)


NUGGET_FIGURES: dict[str, Callable[[Sequence[Nugget], Sequence[float]], Figure]] = {
    NUGGET_RECALL: nugget_recall,
    VITAL_NUGGET_RECALL: vital_nugget_recall,
}


def score_nuggets(question: NuggetQuestion, metric: str, data: Mapping[str, Any]) -> MetricResult:
    raw = json.dumps(data, ensure_ascii=False)
    support = nugget_support(len(question.nuggets), data["nuggets"])
    value, reason = NUGGET_FIGURES[metric](question.nuggets, support)
    if value is None:
        return not_applicable(question.case_id, metric, reason, raw)
    return scored(question.case_id, metric, value, raw)


def unasked_nuggets(question: NuggetQuestion, metric: str) -> MetricResult | None:
    """The result that needs no reply (an empty nuggets list, or the vital recall of a
    case without vital nuggets), else None: then the judge is asked."""
    if not question.nuggets:
        return not_applicable(question.case_id, metric, EMPTY_NUGGETS)
    if metric == VITAL_NUGGET_RECALL and not any(n.vital for n in question.nuggets):
        return not_applicable(question.case_id, metric, NO_VITAL_NUGGETS)
    return None


# The nuggets of a case without them are written by the judge (``ragproof generate
# nuggets``, and its calibration): the request for one case.
GENERATE_PROMPT = "generate_nuggets"


def generate_inputs(question: str, expected_answer: str, seed: int) -> dict[str, Any]:
    """The ``generate_nuggets`` request's inputs; the seed is part of it, so another seed
    is a new question (and cache key), the same seed a cached repeat."""
    return {"seed": f"seed {seed}", "question": question, "expected_answer": expected_answer}


# --- plans and the per_metric groups --------------------------------------------------------


Plan = Callable[[Case, CaseOutput, bool, Any], Planned]


def _member_plan(
    metric: str,
    prompt: str,
    question_of: Callable[[Case, CaseOutput, bool, Any], Any],
    score: Callable[[Any, str, Mapping[str, Any]], MetricResult],
    unasked: Callable[[Any, str], MetricResult | None] = lambda question, metric: None,
) -> Plan:
    """One member's plan: a skip with the reason ``question_of`` gives (a string), a result
    that needs no reply (``unasked``), or its family's question, scored for ``metric``.
    Every member of a family asks the same prompt with the same inputs."""

    def plan(case: Case, output: CaseOutput, has_judge: bool, params: Any) -> Planned:
        if output.failed:  # defensive: the pipeline already counts case failures
            return case_error(case.id, metric, output.error or "case failed")
        question = question_of(case, output, has_judge, params)
        if isinstance(question, str):
            return skipped(case.id, metric, question)
        early = unasked(question, metric)
        if early is not None:
            return early
        return JudgePlan(case.id, metric, prompt, question.inputs, partial(score, question, metric))

    return plan


def _claims_of(case: Case, output: CaseOutput, has_judge: bool, params: Any):
    return plan_claims(case, output, has_judge, params.k)


def _nuggets_of(case: Case, output: CaseOutput, has_judge: bool, params: Any):
    return plan_nuggets(case, output, has_judge)


CLAIM_PLANS = {m: _member_plan(m, CLAIM_PROMPT, _claims_of, score_claims) for m in CLAIM_METRICS}
NUGGET_PLANS = {
    m: _member_plan(m, NUGGET_PROMPT, _nuggets_of, score_nuggets, unasked_nuggets)
    for m in NUGGET_METRICS
}


async def ask_members(
    plans: Mapping[str, Plan],
    case: Case,
    output: CaseOutput,
    judge: Judge | None,
    params: Any,
) -> tuple[MetricResult, ...]:
    """per_metric mode: every member's result from one judge call at most (the members
    that need one ask the same prompt with the same inputs). ``BudgetExceeded``
    propagates."""
    planned = {
        m: with_history(plan(case, output, judge is not None, params), output)
        for m, plan in plans.items()
    }
    asking = [p for p in planned.values() if isinstance(p, JudgePlan)]
    if not asking:
        return tuple(planned.values())
    assert judge is not None  # a plan is only made when a judge is configured
    verdict = await judge.ask(asking[0].prompt, asking[0].inputs)
    return tuple(
        result_from_verdict(p, verdict) if isinstance(p, JudgePlan) else p for p in planned.values()
    )


# Without a judge every case that did not fail skips them all (``plan_claims``).
CLAIM_GROUP = MetricGroup(
    CLAIM_PRECISION,
    CLAIM_METRICS,
    ask=partial(ask_members, CLAIM_PLANS),
    score_columns=every_case_skips(NO_JUDGE),
)
NUGGET_GROUP = MetricGroup(
    NUGGET_RECALL,
    NUGGET_METRICS,
    ask=partial(ask_members, NUGGET_PLANS),
    score_columns=every_case_skips(NO_JUDGE),
)


# --- the diagnosis --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Area:
    """A place a run can lose, named by one of these metrics: its loss is the metric's
    shortfall (1 - mean for a higher-is-better metric, the mean itself otherwise)."""

    name: str
    metric: str
    higher_is_better: bool
    # What the loss counts, after "the share of ...".
    counts: str
    # What to look at when this area loses most.
    action: str

    def loss(self, value: float) -> float:
        return 1.0 - value if self.higher_is_better else value


AREAS: tuple[Area, ...] = (
    Area(
        "retrieval",
        RETRIEVAL_CLAIM_RECALL,
        True,
        "reference claims no retrieved chunk supports",
        "the retriever missed the evidence: recall, k, chunking, the query",
    ),
    Area(
        "use of evidence",
        CONTEXT_UTILIZATION,
        True,
        "supported reference claims the answer leaves out",
        "the generator ignored evidence it was given: prompt, context order, context length",
    ),
    Area(
        "invention",
        HALLUCINATION,
        False,
        "answer claims neither the reference nor any chunk supports",
        "the generator invented: instruct it to answer from the context only",
    ),
    Area(
        "noise",
        NOISE_SENSITIVITY,
        False,
        "answer claims outside the reference taken from retrieved chunks",
        "the generator repeated wrong or off-topic chunks: context precision, reranking",
    ),
)


# Where these metrics come in the registry, the summary and the report (metrics.registry):
# after the generation metrics they diagnose.
REPORT_ORDER = 45


def _claim_spec(
    name: str, higher_is_better: bool, description: str, *, calibrates: bool = False
) -> MetricSpec:
    return MetricSpec(
        name,
        higher_is_better,
        "required",
        ("answer", "expected_answer", "context"),
        description,
        plan=CLAIM_PLANS[name],
        group=CLAIM_GROUP,
        prompt=CLAIM_PROMPT,
        cutoff="k" if name == CONTEXT_PRECISION else None,
        calibrates=calibrates,
        default=False,
        reads=frozenset({"answer", "context"}),
    )


def _nugget_spec(name: str, description: str, *, calibrates: bool = False) -> MetricSpec:
    return MetricSpec(
        name,
        True,
        "required",
        ("answer", "nuggets"),
        description,
        plan=NUGGET_PLANS[name],
        group=NUGGET_GROUP,
        prompt=NUGGET_PROMPT,
        calibrates=calibrates,
        reads=frozenset({"answer"}),
    )


METRICS: tuple[MetricSpec, ...] = (
    _claim_spec(CLAIM_PRECISION, True, "answer claims the reference states / answer claims"),
    _claim_spec(CLAIM_RECALL, True, "reference claims the answer states / reference claims"),
    _claim_spec(
        RETRIEVAL_CLAIM_RECALL, True, "reference claims some chunk supports / reference claims"
    ),
    _claim_spec(CONTEXT_PRECISION, True, "top-k chunks supporting a reference claim / k"),
    _claim_spec(
        CONTEXT_UTILIZATION,
        True,
        "supported reference claims the answer states / supported reference claims",
    ),
    # It calibrates claim_check: it reads both halves of the reply (the reference and
    # the chunks), so a judge wrong on either disagrees with the human.
    _claim_spec(
        HALLUCINATION,
        False,
        "answer claims neither in the reference nor supported / answer claims",
        calibrates=True,
    ),
    # Lower is better, as in RAGChecker: a correct claim no chunk supports cannot be
    # traced to the sources the system is meant to answer from.
    _claim_spec(
        SELF_KNOWLEDGE, False, "answer claims in the reference but unsupported / answer claims"
    ),
    _claim_spec(
        NOISE_SENSITIVITY,
        False,
        "answer claims not in the reference but supported / answer claims",
    ),
    _nugget_spec(
        NUGGET_RECALL,
        "nuggets the answer states: full 1, partial 0.5, none 0 (mean)",
        calibrates=True,
    ),
    _nugget_spec(VITAL_NUGGET_RECALL, "the same over the vital nuggets"),
)
