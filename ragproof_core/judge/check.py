"""``ragproof judge check``: one small request to each judge model, never cached
(CONTRACT section 24), to find a misconfigured judge before a run pays for it.

The request is a real groundedness question on a three-line sample, sent as a run
sends it (its reply schema as ``response_format`` where LiteLLM says the model
takes one) and validated the same way. The check reports, per model: whether a
reply came, its latency, whether it validated, its tokens, and what one
groundedness request of typical size (``estimating``'s assumed answer and context)
would cost at the judge's prices.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from ragproof_core.judge.client import TransportError
from ragproof_core.judge.estimating import ASSUMED_ANSWER, ASSUMED_CONTEXT
from ragproof_core.judge.pricing import UNKNOWN_COST
from ragproof_core.judge.prompts import render
from ragproof_core.judge.schemas import ReplyValidationError, parse_reply
from ragproof_core.judge.session import LiteLLMJudge

CHECK_PROMPT = "groundedness"
CHECK_INPUTS: dict[str, Any] = {
    "question": "What colour is the sky on a clear day?",
    "answer": "On a clear day the sky is blue.",
    "context": [{"id": "sky", "text": "Seen from the ground on a clear day, the sky is blue."}],
}
TYPICAL_INPUTS: dict[str, Any] = {
    "question": "x" * 80,
    "answer": ASSUMED_ANSWER,
    "context": [{"id": chunk.id, "text": chunk.text} for chunk in ASSUMED_CONTEXT],
}


@dataclass(frozen=True, slots=True)
class ModelCheck:
    """One model's check. ``ok``: a reply came (whatever it said); ``error``: the
    provider's reason when none came, else why the reply did not validate."""

    model: str
    ok: bool
    latency_s: float | None
    validated: bool
    input_tokens: int | None
    output_tokens: int | None
    response_format: str
    groundedness_request_usd: float | None  # None: nothing prices the model
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def render(self) -> str:
        lines = [f"judge {self.model}: " + ("answered" if self.ok else "FAILED")]
        if not self.ok:
            lines.append(f"  {self.error}")
        else:
            valid = "yes" if self.validated else f"no ({self.error})"
            lines += [
                f"  latency {self.latency_s:.2f} s, reply validated: {valid}",
                f"  tokens {_count(self.input_tokens)} in / {_count(self.output_tokens)} out, "
                f"replies asked as {self.response_format}",
            ]
        cost = (
            UNKNOWN_COST
            if self.groundedness_request_usd is None
            else f"about ${self.groundedness_request_usd:.6f}"
        )
        lines.append(f"  one groundedness request of typical size: {cost}")
        return "\n".join(lines)


def _count(value: int | None) -> str:
    return "?" if value is None else str(value)


async def check_model(judge: LiteLLMJudge) -> ModelCheck:
    """Send one judge model the check's request (``judge`` has no cache to read or fill)."""
    prompt = judge.prompt(CHECK_PROMPT)
    typical = judge.estimate_usd(render(prompt, TYPICAL_INPUTS)) if judge.priced else None
    fields = {
        "model": judge.model,
        "response_format": judge.reply_format,
        "groundedness_request_usd": typical,
    }
    started = time.perf_counter()
    try:
        reply, _ = await judge.request(
            prompt.name, render(prompt, CHECK_INPUTS), judge.response_format(prompt), repair=False
        )
    except TransportError as exc:
        return ModelCheck(
            ok=False,
            latency_s=None,
            validated=False,
            input_tokens=None,
            output_tokens=None,
            error=str(exc),
            **fields,
        )
    latency = time.perf_counter() - started
    try:
        parse_reply(prompt.name, reply.text)
    except ReplyValidationError as exc:
        error: str | None = str(exc)
    else:
        error = None
    return ModelCheck(
        ok=True,
        latency_s=latency,
        validated=error is None,
        input_tokens=reply.input_tokens,
        output_tokens=reply.output_tokens,
        error=error,
        **fields,
    )
