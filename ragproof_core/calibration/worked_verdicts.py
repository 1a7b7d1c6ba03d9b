"""The verdicts a human worked out by hand for the claim_check and nugget_support fixtures.

A ``claim_check`` fixture carries the human's claims in the reply's own shape
(CONTRACT section 20)::

    "human_claims": {"response_claims": [{"claim": ..., "in_reference": bool, "chunk_ids": [...]}],
                     "reference_claims": [{"claim": ..., "in_response": bool, "chunk_ids": [...]}]}

and its ``human_score`` is the band (``agreement.band``) of
``generation.hallucination`` computed from them over the fixture's chunks: the
metric that calibrates the prompt, as it reads both halves of the reply (the
reference and the chunks). A ``nugget_support`` fixture's case carries
``nuggets`` and the fixture ``human_support``, one of "full", "partial" or
"none" per nugget in order; its ``human_score`` is the band of
``generation.nugget_recall`` from them. Both are checked, so a score and the
verdicts it was worked out from cannot drift apart, and every metric of the
family can be read off a fixture by hand.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragproof_core.calibration.agreement import band
from ragproof_core.judge.schemas import ReplyValidationError, validate_reply
from ragproof_core.metrics.diagnostics import (
    CLAIM_PROMPT,
    NUGGET_PROMPT,
    claim_set,
    hallucination,
    nugget_recall,
    nugget_support,
)
from ragproof_core.model import Nugget

HUMAN_CLAIMS = "human_claims"
HUMAN_SUPPORT = "human_support"


def human_claims_score(claims: Mapping[str, Any], chunk_ids: Sequence[str]) -> float | None:
    """``generation.hallucination`` of the human's claims over the fixture's chunks."""
    return hallucination(claim_set(claims, chunk_ids, max(1, len(chunk_ids))))[0]


def human_support_score(nuggets: Sequence[Nugget], support: Sequence[str]) -> float | None:
    """``generation.nugget_recall`` of the human's support verdicts, one per nugget."""
    verdicts = [{"index": i, "support": s} for i, s in enumerate(support)]
    return nugget_recall(nuggets, nugget_support(len(nuggets), verdicts))[0]


def fixture_problems(
    prompt: str,
    obj: Mapping[str, Any],
    where: str,
    chunk_ids: Sequence[str] | None,
    nuggets: Sequence[Nugget] | None,
) -> list[str]:
    """What is wrong with a fixture's hand-worked verdicts (empty: nothing); other prompts'
    fixtures have none to check."""
    if prompt == CLAIM_PROMPT:
        return _claim_problems(obj, where, chunk_ids)
    if prompt == NUGGET_PROMPT:
        return _support_problems(obj, where, nuggets)
    return []


def _claim_problems(
    obj: Mapping[str, Any], where: str, chunk_ids: Sequence[str] | None
) -> list[str]:
    if chunk_ids is None:
        return [f"{where}: a claim_check fixture needs output.answer.retrieved_chunks"]
    claims = obj.get(HUMAN_CLAIMS)
    try:
        validate_reply(CLAIM_PROMPT, claims)
    except ReplyValidationError as exc:
        return [f"{where}: {HUMAN_CLAIMS} must be a claim_check reply: {exc}"]
    named = {
        cid
        for key in ("response_claims", "reference_claims")
        for claim in claims[key]
        for cid in claim["chunk_ids"]
    }
    unknown = sorted(named - set(chunk_ids))
    if unknown:
        return [f"{where}: {HUMAN_CLAIMS} names chunks the fixture does not have: {unknown}"]
    score = human_claims_score(claims, chunk_ids)
    if score is None:
        return [f"{where}: {HUMAN_CLAIMS} has no response claim: hallucination is not applicable"]
    return _score_problem(obj, where, score, "generation.hallucination of human_claims")


def _support_problems(
    obj: Mapping[str, Any], where: str, nuggets: Sequence[Nugget] | None
) -> list[str]:
    if not nuggets:
        return [f"{where}: a nugget_support fixture needs case.nuggets, a non-empty list"]
    support = obj.get(HUMAN_SUPPORT)
    if not (
        isinstance(support, list)
        and len(support) == len(nuggets)
        and all(s in ("full", "partial", "none") for s in support)
    ):
        return [
            f'{where}: {HUMAN_SUPPORT} must list "full", "partial" or "none" for each of '
            f"the {len(nuggets)} nuggets, in order"
        ]
    score = human_support_score(nuggets, support)
    return _score_problem(obj, where, score, "generation.nugget_recall of human_support")


def _score_problem(obj: Mapping[str, Any], where: str, score: float, what: str) -> list[str]:
    if obj.get("human_score") != band(score):
        return [f"{where}: human_score must be {band(score):g}, the band of {what} ({score:.4g})"]
    return []
