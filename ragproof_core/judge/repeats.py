"""Judge repeats (CONTRACT section 27): every judge request sent M times, to see how
far the judge agrees with itself.

``[judge] repeats = M`` (``run --judge-repeats M``) makes ``make_judge`` return a
``RepeatedJudge``: M judges of the configured model (or jury), the m-th sending
repeat m, which is in its cache key (``LiteLLMJudge.cache_key``: the first repeat's
key is the plain one). They share one cache, one budget, one concurrency limit,
one rate limit and one usage tally, as a jury's models do.

A metric is scored by running its own code once per repeat (``jury.run_judged``)
and combining the repeats' results of each metric:

- the repeats that scored give the score, their mean; a repeat whose reply failed
  is left out, so the result is a ``judge_error`` only when every repeat failed;
- with none scoring, a ``not_applicable`` from any repeat wins over judge errors;
- ``judge_raw_json`` keeps every repeat's reply:
  ``{"repeats": [<repeat 1's judge_raw_json>, ...], "scores": [value or null, ...]}``.

Results that asked no judge (a skip, a case failure) are the same for every repeat
and are kept as they are. ``calibration.self_agreement`` measures the repeats'
agreement from the stored scores.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

from ragproof_core.interruption import Interruption
from ragproof_core.judge.cache import JudgeCache
from ragproof_core.judge.cost import Budget
from ragproof_core.judge.jury import JuryJudge, make_jury, run_judged
from ragproof_core.judge.panel import (
    JudgePanel,
    asked_nobody,
    gather_all,
    loads_raw,
    merge_results,
)
from ragproof_core.judge.rate_limit import RateLimiter
from ragproof_core.judge.session import LiteLLMJudge
from ragproof_core.judge.settings import JudgeEnv
from ragproof_core.judge.types import Judge
from ragproof_core.judge.usage import UsageTally
from ragproof_core.masking import Masker
from ragproof_core.model import MetricResult
from ragproof_core.store_health import StoreHealth

REPEATS_KEY = "repeats"
SCORES_KEY = "scores"


class RepeatedJudge(JudgePanel):
    """One judge (a model or a jury) asked every question ``len(members)`` times; see the
    module docstring."""

    def __init__(
        self,
        members: Sequence[LiteLLMJudge | JuryJudge],
        cache: JudgeCache | None = None,
        owns_cache: bool = False,
    ) -> None:
        if len(members) < 2:
            raise ValueError("judge repeats need at least two repeats")
        super().__init__(members, members[0].model, cache, owns_cache)

    @property
    def repeats(self) -> int:
        return len(self.members)

    @property
    def models(self) -> tuple[str, ...]:
        return getattr(self.members[0], "models", (self.model,))

    @property
    def priced(self) -> bool:
        return self.members[0].priced

    @property
    def reply_format(self) -> str:
        return self.members[0].reply_format

    async def drain(self) -> None:
        for member in self.members:
            await member.drain()

    async def judged(
        self, score: Callable[[Judge | None], Awaitable[Sequence[MetricResult]]]
    ) -> tuple[MetricResult, ...]:
        """``score`` once per repeat (each through ``run_judged``: a jury asks its
        models), combined per metric."""
        per_repeat = await gather_all(run_judged(score, member) for member in self.members)
        return self.counted(
            tuple(
                combine_repeats([results[i] for results in per_repeat])
                for i in range(len(per_repeat[0]))
            )
        )


def single_judges(judge: Any) -> tuple[Any, ...]:
    """The one-model judges that send ``judge``'s requests: each repeat's, each jury
    model's, or the judge itself (for a dry run, which counts each request apart)."""
    members = getattr(judge, "members", None)
    if members is None:
        return (judge,)
    return tuple(single for member in members for single in single_judges(member))


def combine_repeats(results: Sequence[MetricResult]) -> MetricResult:
    """One metric's result for one case from each repeat's result, in repeat order."""
    if asked_nobody(results):
        return results[0]
    raw = json.dumps(
        {
            REPEATS_KEY: [loads_raw(r.judge_raw_json) for r in results],
            SCORES_KEY: [r.value for r in results],
        },
        ensure_ascii=False,
    )
    labels = [f"repeat {i}" for i in range(1, len(results) + 1)]
    return merge_results(results, raw, labels, "every judge repeat failed")


def make_repeated(
    env: JudgeEnv,
    models: Sequence[str],
    cache: JudgeCache | None,
    use_cache: bool,
    concurrency: int,
    limiter: RateLimiter | None,
    health: StoreHealth | None,
    masker: Masker | None = None,
    interruption: Interruption | None = None,
) -> RepeatedJudge:
    """``env.repeats`` judges of ``models`` (one model, or a jury), the m-th sending
    repeat m, sharing the cache, budget, usage tally, concurrency and rate limits."""
    budget = Budget(env.max_cost_usd)
    usage = UsageTally()
    members: list[LiteLLMJudge | JuryJudge] = []
    for repeat in range(1, env.repeats + 1):
        first = members[0] if members else None
        share_from = first.members[0] if isinstance(first, JuryJudge) else first
        if len(models) > 1:
            member: LiteLLMJudge | JuryJudge = make_jury(
                env,
                models,
                cache,
                use_cache,
                concurrency,
                limiter,
                health,
                masker=masker,
                interruption=interruption,
                budget=budget,
                usage=usage,
                share_from=share_from,
                repeat=repeat,
                owns_cache=False,
            )
        else:
            member = LiteLLMJudge(
                replace(env, model=models[0]),
                cache,
                use_cache=use_cache,
                concurrency=concurrency,
                budget=budget,
                limiter=limiter,
                usage=usage,
                share_from=share_from,
                health=health,
                masker=masker,
                interruption=interruption,
                repeat=repeat,
            )
        members.append(member)
    return RepeatedJudge(members, cache, owns_cache=cache is not None)
