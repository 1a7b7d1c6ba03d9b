"""A jury of judges: every judge question asked of several models (CONTRACT section 15).

``RAGPROOF_JUDGE_MODEL="model-a,model-b"`` (or ``[judge] models = [...]``)
makes ``make_judge`` return a ``JuryJudge``. Its models are ordinary
``LiteLLMJudge`` objects that share one cache (keyed by model, so each model's
verdicts are cached apart), one budget, one concurrency limit, one rate limit
and one usage tally.

A metric is scored by running the pipeline's own metric code once per model
(``run_judged``) and combining the per-model results of each metric:

- the models that scored give the case's score, their mean; a model whose
  reply failed validation twice (or whose transport failed) is left out, so the
  case is a ``judge_error`` only when every model failed;
- with no model scoring, a ``not_applicable`` from any model wins over judge
  errors (it answered; there was nothing to measure);
- ``judge_raw_json`` keeps every model's verdict:
  ``{"jury": {MODEL: <that model's judge_raw_json>}, "scores": {MODEL: value or null}}``.

Results that asked no judge (a skip, a case failure, an empty retrieval) are
the same for every model and are kept as they are.

The jury's name, used as the run's ``judge_model``, is the sorted,
comma-joined model list: the same models in any order are the same jury, and
different juries compare as different judges.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from ragproof_core.interruption import Interruption
from ragproof_core.judge.cache import JudgeCache
from ragproof_core.judge.client import flush_litellm
from ragproof_core.judge.cost import Budget
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

JURY_KEY = "jury"
SCORES_KEY = "scores"


def jury_name(models: Sequence[str]) -> str:
    """The jury's ``judge_model``: its distinct models, sorted and comma-joined."""
    return ",".join(sorted(set(models)))


class JuryJudge(JudgePanel):
    """Several judges answering the same questions; see the module docstring."""

    def __init__(self, members: Sequence[LiteLLMJudge], owns_cache: bool = False) -> None:
        if len(members) < 2:
            raise ValueError("a jury needs at least two models")
        models = tuple(member.model for member in members)
        if len(set(models)) != len(models):
            raise ValueError(f"a jury names each model once, got {list(models)}")
        super().__init__(members, jury_name(models), members[0].cache, owns_cache)
        self.models = models

    @property
    def priced(self) -> bool:
        """The jury's cost is known only when every model's is."""
        return all(member.priced for member in self.members)

    @property
    def reply_format(self) -> str:
        """The members' reply format, or each model's when they differ."""
        formats = {member.model: member.reply_format for member in self.members}
        if len(set(formats.values())) == 1:
            return next(iter(formats.values()))
        return ", ".join(f"{model}: {fmt}" for model, fmt in sorted(formats.items()))

    async def drain(self) -> None:
        await flush_litellm()
        for member in self.members:
            await member.client.aclose()

    async def judged(
        self, score: Callable[[Judge | None], Awaitable[Sequence[MetricResult]]]
    ) -> tuple[MetricResult, ...]:
        """``score`` once per model, combined per metric (``run_judged``)."""
        per_model = await gather_all(score(member) for member in self.members)
        return self.counted(
            tuple(
                combine([results[i] for results in per_model], self.models)
                for i in range(len(per_model[0]))
            )
        )


def make_jury(
    env: JudgeEnv,
    models: Sequence[str],
    cache: JudgeCache | None,
    use_cache: bool,
    concurrency: int,
    limiter: RateLimiter | None,
    health: StoreHealth | None = None,
    masker: Masker | None = None,
    interruption: Interruption | None = None,
    *,
    budget: Budget | None = None,
    usage: UsageTally | None = None,
    share_from: LiteLLMJudge | None = None,
    repeat: int = 1,
    owns_cache: bool = True,
) -> JuryJudge:
    """A jury of ``models``; ``budget``, ``usage`` and ``share_from`` (whose concurrency
    limit it takes) shared with other judges when given (judge repeats: ``repeats.py``),
    its models sending judge repeat ``repeat``."""
    budget = Budget(env.max_cost_usd) if budget is None else budget
    usage = UsageTally() if usage is None else usage
    members: list[LiteLLMJudge] = []
    for model in models:
        members.append(
            LiteLLMJudge(
                replace(env, model=model),
                cache,
                use_cache=use_cache,
                concurrency=concurrency,
                budget=budget,
                limiter=limiter,
                usage=usage,
                share_from=members[0] if members else share_from,
                health=health,
                masker=masker,
                interruption=interruption,
                repeat=repeat,
            )
        )
    return JuryJudge(members, owns_cache=owns_cache and cache is not None)


def combine(results: Sequence[MetricResult], models: Sequence[str]) -> MetricResult:
    """One metric's result for one case from each model's result (same order as ``models``)."""
    if asked_nobody(results):
        return results[0]
    raw = json.dumps(
        {
            JURY_KEY: {
                m: loads_raw(r.judge_raw_json) for m, r in zip(models, results, strict=True)
            },
            SCORES_KEY: {m: r.value for m, r in zip(models, results, strict=True)},
        },
        ensure_ascii=False,
    )
    return merge_results(results, raw, models, "every jury model failed")


async def run_judged(
    score: Callable[[Judge | None], Awaitable[Sequence[MetricResult]]], judge: Judge | None
) -> tuple[MetricResult, ...]:
    """``score(judge)`` for one judge; for a judge of several (a jury: once per model;
    judge repeats, ``repeats.py``: once per repeat) through its ``judged``, which
    combines their results per metric.

    ``score`` returns one or more results (a judge call may feed several
    metrics); ``JudgeStopped`` (a budget, a judge unavailable) propagates after every model's
    call has ended.
    """
    several = getattr(judge, "judged", None)
    if several is None:
        return tuple(await score(judge))
    return await several(score)


async def score_metric(metric, case, output, judge: Judge | None) -> MetricResult:
    """A ``(case, output, judge) -> MetricResult`` metric, jury-aware."""

    async def one(chosen: Judge | None) -> tuple[MetricResult]:
        return (await metric(case, output, chosen),)

    (result,) = await run_judged(one, judge)
    return result
