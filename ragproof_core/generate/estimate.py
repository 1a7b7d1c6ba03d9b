"""``ragproof generate qa --dry-run``: judge calls and cost, with nothing called.

The real loop (``qa.generate_questions``) runs against an *estimating* judge:
a question whose reply is in the judge cache gets that reply (so a warm cache
is replayed exactly and costs nothing); any other is counted and priced at 4
characters per token, and answered with a stand-in that passes every gate, so
the count assumes each uncached question is kept at its first attempt. The
upper bound assumes every slot uses every attempt and every call needs its
repair retry.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ragproof_core.generate.corpus import CorpusChunk
from ragproof_core.generate.qa import GenerationPlan, generate_questions
from ragproof_core.judge.cost import CACHED_REQUEST
from ragproof_core.judge.estimating import EstimatingJudge, cost_lines
from ragproof_core.judge.reply_cache import input_hash
from ragproof_core.judge.session import LiteLLMJudge
from ragproof_core.judge.types import JudgeVerdict

# A stand-in answer of typical size (a sentence or two) for pricing the critique.
_STAND_IN_ANSWER = "x" * 160


@dataclass(frozen=True)
class GenerationEstimate:
    slots: int
    judge_model: str
    questions: int
    cached: int
    calls: int
    max_requests: int
    estimated_cost_usd: float | None  # None: nothing prices the judge
    max_cost_usd: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def render(self) -> str:
        lines = [
            f"dry run: {self.slots} cases to write, judge {self.judge_model}",
            f"  judge questions {self.questions}, served from cache {self.cached}, "
            f"calls {self.calls} (if every new question passes its critique at the first "
            f"attempt; at most {self.max_requests} requests with every attempt and repair)",
            *cost_lines(self.estimated_cost_usd, self.max_cost_usd),
        ]
        return "\n".join(lines)


class _EstimatingJudge(EstimatingJudge):
    _judge: LiteLLMJudge

    async def ask(self, prompt: str, inputs: dict[str, Any]) -> JudgeVerdict:
        hit = self._judge.cached_reply(self._judge.prompts[prompt], input_hash(inputs))
        if hit is not None:
            self.count(CACHED_REQUEST)
            return JudgeVerdict(ok=True, data=hit.data, raw=hit.raw, cached=True)
        self.count(self._judge.estimate(prompt, inputs))
        return JudgeVerdict(ok=True, data=_stand_in(prompt, inputs), raw=None)


def _stand_in(prompt: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A reply that passes every gate. Its question is unique per request (hex of
    the inputs' hash), so no stand-in is taken for a duplicate of another."""
    if prompt == "critique_qa":
        return {"standalone": True, "specific": True, "answerable": bool(inputs["answer"])}
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()
    question = f"{digest} {digest[::-1]}?"  # ~130 characters, a typical question's size
    if prompt == "generate_qa":
        return {"question": question, "answer": _STAND_IN_ANSWER}
    return {"question": question}


async def estimate_generation(
    chunks: Sequence[CorpusChunk], plan: GenerationPlan, judge: LiteLLMJudge
) -> GenerationEstimate:
    estimator = _EstimatingJudge(judge)
    await generate_questions(chunks, plan, estimator)
    slots = plan.count + plan.unanswerable
    return GenerationEstimate(
        slots=slots,
        judge_model=judge.model,
        questions=estimator.questions,
        cached=estimator.cached,
        calls=estimator.calls,
        # Per slot and attempt: a question and its critique, each with one repair retry.
        max_requests=slots * plan.max_attempts * 2 * 2,
        estimated_cost_usd=estimator.cost_usd if judge.priced else None,
        max_cost_usd=judge.budget.max_usd,
    )
