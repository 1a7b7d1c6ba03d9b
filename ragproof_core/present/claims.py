"""A case's claims as a person reads them (CONTRACT section 20): each claim of the answer
and of the reference, what the other text says of it, and the chunks that support it.

Read from the stored ``claim_check`` reply (every claim metric stores it verbatim;
a jury's is read from its first model's verdict, as the report reads every reply).
Each claim gets the name of what it is for the diagnosis:

- an answer claim is *grounded* (in the reference and supported by a chunk),
  *self-knowledge* (in the reference, no chunk), *noise* (not in the reference,
  from a chunk) or *hallucination* (neither);
- a reference claim is *used* (supported and in the answer), *ignored* (supported
  but not in the answer: the generator's loss), *missed* (no chunk and not in the
  answer: the retriever's loss) or *unsupported* (in the answer with no chunk).

Chunk ids the reply names that are not in the context are listed apart: the
metrics ignore them (``metrics.diagnostics``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ragproof_core.judge.schemas import ReplyValidationError, validate_reply
from ragproof_core.metrics.diagnostics import CLAIM_METRICS, CLAIM_PROMPT, claims_of
from ragproof_core.text_table import text_table

RESPONSE_KINDS = {
    (True, True): "grounded",
    (True, False): "self-knowledge",
    (False, True): "noise",
    (False, False): "hallucination",
}
REFERENCE_KINDS = {
    (True, True): "used",
    (False, True): "ignored",
    (False, False): "missed",
    (True, False): "unsupported",
}


def stored_reply(judge_raw_json: str | None) -> dict[str, Any] | None:
    """The ``claim_check`` reply a claim metric stored, or None (a failure, or none)."""
    if not judge_raw_json:
        return None
    try:
        reply = json.loads(judge_raw_json)
    except ValueError:
        return None
    if isinstance(reply, Mapping) and isinstance(reply.get("jury"), Mapping) and reply["jury"]:
        reply = next(iter(reply["jury"].values()))
    try:
        return validate_reply(CLAIM_PROMPT, reply)
    except ReplyValidationError:
        return None


def case_claims(
    results: Sequence[Mapping[str, Any]], context_ids: Sequence[str]
) -> dict[str, Any] | None:
    """The claims of a case from its result rows (``metric``, ``judge_raw_json``), over
    its context's chunk ids; None when no claim metric stored a reply."""
    reply = next(
        (
            found
            for row in results
            if row.get("metric") in CLAIM_METRICS
            for found in [stored_reply(row.get("judge_raw_json"))]
            if found is not None
        ),
        None,
    )
    return None if reply is None else claims_view(reply, context_ids)


def claims_view(reply: Mapping[str, Any], context_ids: Sequence[str]) -> dict[str, Any]:
    """``{"response": [...], "reference": [...]}``, each claim ``{"claim", "kind",
    "chunks", "ignored"}``: its supporting chunks in the context, and those it names
    that are not."""
    context = frozenset(context_ids)

    def rows(key: str, flag: str, kinds: Mapping[tuple[bool, bool], str]) -> list[dict[str, Any]]:
        claims = claims_of(reply[key], flag, context)
        return [
            {
                "claim": claim.text,
                "kind": kinds[(claim.matched, claim.supported)],
                "chunks": list(claim.chunk_ids),
                "ignored": [cid for cid in dict.fromkeys(raw["chunk_ids"]) if cid not in context],
            }
            for claim, raw in zip(claims, reply[key], strict=True)
        ]

    return {
        "response": rows("response_claims", "in_reference", RESPONSE_KINDS),
        "reference": rows("reference_claims", "in_response", REFERENCE_KINDS),
    }


def claim_lines(view: Mapping[str, Any]) -> list[str]:
    """The claims as a text table (``show --case``): one row a claim, its kind and the
    chunks that support it, then any ids named outside the context."""
    rows = []
    for side, label in (("response", "answer"), ("reference", "reference")):
        for claim in view[side]:
            chunks = ", ".join(claim["chunks"]) or "-"
            if claim["ignored"]:
                chunks += f" (not in the context: {', '.join(claim['ignored'])})"
            rows.append([label, claim["kind"], claim["claim"], chunks])
    return text_table(("of", "what it is", "claim", "supported by"), rows)
