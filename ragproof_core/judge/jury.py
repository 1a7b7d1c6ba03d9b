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

import asyncio
import json
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import fields, replace
from typing import Any

from ragproof_core.interruption import Interruption
from ragproof_core.judge.cache import JudgeCache
from ragproof_core.judge.client import flush_litellm
from ragproof_core.judge.cost import Budget, RequestEstimate
from ragproof_core.judge.rate_limit import RateLimiter
from ragproof_core.judge.session import JudgeStats, LiteLLMJudge
from ragproof_core.judge.settings import JudgeEnv
from ragproof_core.judge.types import Judge, JudgeVerdict
from ragproof_core.judge.usage import UsageTally
from ragproof_core.masking import Masker
from ragproof_core.model import MetricResult, Status
from ragproof_core.store_health import StoreHealth

JURY_KEY = "jury"
SCORES_KEY = "scores"


def jury_name(models: Sequence[str]) -> str:
    """The jury's ``judge_model``: its distinct models, sorted and comma-joined."""
    return ",".join(sorted(set(models)))


class JuryJudge:
    """Several judges answering the same questions; see the module docstring."""

    def __init__(self, members: Sequence[LiteLLMJudge], owns_cache: bool = False) -> None:
        if len(members) < 2:
            raise ValueError("a jury needs at least two models")
        self.members = tuple(members)
        self.models = tuple(member.model for member in self.members)
        if len(set(self.models)) != len(self.models):
            raise ValueError(f"a jury names each model once, got {list(self.models)}")
        self.model = jury_name(self.models)
        self.usage: UsageTally = self.members[0].usage
        self._owns_cache = owns_cache
        self._judge_errors = 0  # questions every model failed
        self._first_error: str | None = None

    @property
    def mode(self) -> str:
        return self.members[0].mode

    @property
    def prompt_hashes(self) -> dict[str, str]:
        return self.members[0].prompt_hashes

    @property
    def priced(self) -> bool:
        """The jury's cost is known only when every model's is."""
        return all(member.priced for member in self.members)

    @property
    def stats(self) -> JudgeStats:
        """Totals over the models; ``judge_errors`` counts questions that every model failed."""
        total = JudgeStats()
        for member in self.members:
            stats = member.stats
            for field in fields(JudgeStats):
                if field.name != "first_error":
                    added = getattr(total, field.name) + getattr(stats, field.name)
                    setattr(total, field.name, added)
        total.judge_errors = self._judge_errors
        total.first_error = self._first_error
        return total

    @property
    def unavailable(self) -> str | None:
        """Why a member's breaker stopped its requests (the first such member's)."""
        return next((m.unavailable for m in self.members if m.unavailable), None)

    @property
    def reply_format(self) -> str:
        """The members' reply format, or each model's when they differ."""
        formats = {member.model: member.reply_format for member in self.members}
        if len(set(formats.values())) == 1:
            return next(iter(formats.values()))
        return ", ".join(f"{model}: {fmt}" for model, fmt in sorted(formats.items()))

    def add_prompts(self, prompts: dict[str, Any]) -> None:
        for member in self.members:
            member.add_prompts(prompts)

    def count_judge_error(self, reason: str | None) -> None:
        self._judge_errors += 1
        if self._first_error is None:
            self._first_error = reason

    def close(self) -> None:
        if self._owns_cache and self.members[0].cache is not None:
            self.members[0].cache.close()

    async def drain(self) -> None:
        await flush_litellm()
        for member in self.members:
            await member.client.aclose()

    def estimate(self, prompt: str, inputs: dict[str, Any]) -> RequestEstimate:
        """For --dry-run: cached only when every model has it; the models' figures added."""
        estimates = [member.estimate(prompt, inputs) for member in self.members]
        return RequestEstimate(
            cached=all(e.cached for e in estimates),
            cost_usd=math.fsum(e.cost_usd for e in estimates),
            input_tokens=sum(e.input_tokens for e in estimates),
            output_tokens=sum(e.output_tokens for e in estimates),
        )

    async def ask(self, prompt: str, inputs: dict[str, Any]) -> JudgeVerdict:
        """For callers that need one reply (not metrics, which use ``run_judged``):
        every model is asked, and the first model, in the order configured, that
        answered validly gives the verdict."""
        verdicts = await gather_all(member.ask(prompt, inputs) for member in self.members)
        for verdict in verdicts:
            if verdict.ok:
                return verdict
        self.count_judge_error(verdicts[0].error)
        return verdicts[0]


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
) -> JuryJudge:
    budget = Budget(env.max_cost_usd)
    usage = UsageTally()
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
                share_from=members[0] if members else None,
                health=health,
                masker=masker,
                interruption=interruption,
            )
        )
    return JuryJudge(members, owns_cache=cache is not None)


async def gather_all(awaitables) -> list[Any]:
    """Await all; re-raise the first exception only after every one has finished,
    so a budget stop never leaves a model's call running unaccounted."""
    results = await asyncio.gather(*awaitables, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def combine(results: Sequence[MetricResult], models: Sequence[str]) -> MetricResult:
    """One metric's result for one case from each model's result (same order as ``models``)."""
    first = results[0]
    if all(r.judge_raw_json is None for r in results) and all(
        (r.status, r.value, r.reason) == (first.status, first.value, first.reason) for r in results
    ):
        return first  # no model was asked: a skip, a case failure, an empty retrieval
    raw = json.dumps(
        {
            JURY_KEY: {m: _loads(r.judge_raw_json) for m, r in zip(models, results, strict=True)},
            SCORES_KEY: {m: r.value for m, r in zip(models, results, strict=True)},
        },
        ensure_ascii=False,
    )
    values = [r.value for r in results if r.status is Status.SCORED]
    if values:
        mean = math.fsum(values) / len(values)
        return MetricResult(first.case_id, first.metric, Status.SCORED, mean, None, raw)
    for wanted in (Status.NOT_APPLICABLE, Status.SKIPPED, Status.ERROR):
        chosen = next((r for r in results if r.status is wanted), None)
        if chosen is not None:
            return replace(chosen, judge_raw_json=raw)
    reasons = "; ".join(f"{m}: {r.reason}" for m, r in zip(models, results, strict=True))
    reason = f"every jury model failed: {reasons}"
    return MetricResult(first.case_id, first.metric, Status.JUDGE_ERROR, None, reason, raw)


async def run_judged(
    score: Callable[[Judge | None], Awaitable[Sequence[MetricResult]]], judge: Judge | None
) -> tuple[MetricResult, ...]:
    """``score(judge)`` for one judge; for a jury, once per model, then combined per metric.

    ``score`` returns one or more results (a judge call may feed several
    metrics); ``JudgeStopped`` (a budget, a judge unavailable) propagates after every model's
    call has ended.
    """
    if not isinstance(judge, JuryJudge):
        return tuple(await score(judge))
    per_model = await gather_all(score(member) for member in judge.members)
    combined = tuple(
        combine([results[i] for results in per_model], judge.models)
        for i in range(len(per_model[0]))
    )
    failed = next((r for r in combined if r.status is Status.JUDGE_ERROR), None)
    if failed is not None:
        judge.count_judge_error(failed.reason)
    return combined


async def score_metric(metric, case, output, judge: Judge | None) -> MetricResult:
    """A ``(case, output, judge) -> MetricResult`` metric, jury-aware."""

    async def one(chosen: Judge | None) -> tuple[MetricResult]:
        return (await metric(case, output, chosen),)

    (result,) = await run_judged(one, judge)
    return result
