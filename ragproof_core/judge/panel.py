"""A panel of judges asked the same questions, their results combined per metric: what a
jury of models (``jury.py``) and a judge's repeats (``repeats.py``) share.

The members share one cache, one budget, one concurrency limit, one rate limit and
one usage tally; the panel counts its own judge errors (a question every member
failed) and combines each metric's results: the mean of the members that scored;
with none scoring, a ``not_applicable``, a skip or a case error from any; else a
``judge_error`` saying why each member failed (``merge_results``).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Sequence
from dataclasses import fields, replace
from typing import Any

from ragproof_core.judge.cache import JudgeCache
from ragproof_core.judge.cost import RequestEstimate
from ragproof_core.judge.session import JudgeStats
from ragproof_core.judge.types import JudgeVerdict
from ragproof_core.judge.usage import UsageTally
from ragproof_core.model import MetricResult, Status


class JudgePanel:
    """Judges (``members``) answering the same questions, named ``model``."""

    def __init__(
        self,
        members: Sequence[Any],
        model: str,
        cache: JudgeCache | None,
        owns_cache: bool = False,
    ) -> None:
        self.members = tuple(members)
        self.model = model
        self.usage: UsageTally = self.members[0].usage
        self._cache = cache
        self._owns_cache = owns_cache
        self._judge_errors = 0  # questions every member failed
        self._first_error: str | None = None

    @property
    def mode(self) -> str:
        return self.members[0].mode

    @property
    def prompt_hashes(self) -> dict[str, str]:
        return self.members[0].prompt_hashes

    @property
    def stats(self) -> JudgeStats:
        """Totals over the members; ``judge_errors`` counts questions every member failed."""
        total = JudgeStats()
        for member in self.members:
            stats = member.stats
            for field in fields(JudgeStats):
                if field.name != "first_error":
                    setattr(
                        total, field.name, getattr(total, field.name) + getattr(stats, field.name)
                    )
        total.judge_errors = self._judge_errors
        total.first_error = self._first_error
        return total

    @property
    def unavailable(self) -> str | None:
        """Why a member's breaker stopped its requests (the first such member's)."""
        return next((m.unavailable for m in self.members if m.unavailable), None)

    def add_prompts(self, prompts: dict[str, Any]) -> None:
        for member in self.members:
            member.add_prompts(prompts)

    def count_judge_error(self, reason: str | None) -> None:
        self._judge_errors += 1
        if self._first_error is None:
            self._first_error = reason

    def counted(self, combined: tuple[MetricResult, ...]) -> tuple[MetricResult, ...]:
        """``combined`` (one question's results), its judge error counted if it has one."""
        failed = next((r for r in combined if r.status is Status.JUDGE_ERROR), None)
        if failed is not None:
            self.count_judge_error(failed.reason)
        return combined

    def close(self) -> None:
        if self._owns_cache and self._cache is not None:
            self._cache.close()

    def estimate(self, prompt: str, inputs: dict[str, Any]) -> RequestEstimate:
        """For --dry-run: cached only when every member has it; the members' figures added."""
        estimates = [member.estimate(prompt, inputs) for member in self.members]
        return RequestEstimate(
            cached=all(e.cached for e in estimates),
            cost_usd=math.fsum(e.cost_usd for e in estimates),
            input_tokens=sum(e.input_tokens for e in estimates),
            output_tokens=sum(e.output_tokens for e in estimates),
        )

    async def ask(self, prompt: str, inputs: dict[str, Any]) -> JudgeVerdict:
        """For callers that need one reply (not metrics, which use ``run_judged``):
        every member is asked, and the first, in the order configured, that answered
        validly gives the verdict."""
        verdicts = await gather_all(member.ask(prompt, inputs) for member in self.members)
        for verdict in verdicts:
            if verdict.ok:
                return verdict
        self.count_judge_error(verdicts[0].error)
        return verdicts[0]


async def gather_all(awaitables) -> list[Any]:
    """Await all; re-raise the first exception only after every one has finished,
    so a budget stop never leaves a model's call running unaccounted."""
    results = await asyncio.gather(*awaitables, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


def loads_raw(text: str | None) -> Any:
    """A stored ``judge_raw_json`` as JSON (None stays None)."""
    return None if text is None else json.loads(text)


def asked_nobody(results: Sequence[MetricResult]) -> bool:
    """Whether no judge was asked for these results of one metric and case (a skip, a
    case failure, an empty retrieval): the same result from each, with no reply."""
    first = results[0]
    return all(r.judge_raw_json is None for r in results) and all(
        (r.status, r.value, r.reason) == (first.status, first.value, first.reason) for r in results
    )


def merge_results(
    results: Sequence[MetricResult], raw: str, labels: Sequence[str], failed: str
) -> MetricResult:
    """One metric's result for one case from the members' results (``labels`` name
    them), ``raw`` their stored replies: the mean of those that scored; else a
    ``not_applicable``, a skip or a case error from any; else a judge error saying
    ``failed`` and why each failed."""
    first = results[0]
    values = [r.value for r in results if r.status is Status.SCORED]
    if values:
        mean = math.fsum(values) / len(values)
        return MetricResult(first.case_id, first.metric, Status.SCORED, mean, None, raw)
    for wanted in (Status.NOT_APPLICABLE, Status.SKIPPED, Status.ERROR):
        chosen = next((r for r in results if r.status is wanted), None)
        if chosen is not None:
            return replace(chosen, judge_raw_json=raw)
    reasons = "; ".join(f"{label}: {r.reason}" for label, r in zip(labels, results, strict=True))
    reason = f"{failed}: {reasons}"
    return MetricResult(first.case_id, first.metric, Status.JUDGE_ERROR, None, reason, raw)
