"""Scoring one case in combined judge mode: every judge metric from one request.

Each selected metric's pure ``plan`` runs first. Plans that need no judge
(skips, heuristic scores) are results already; the others become the parts of
one combined request, and each metric is scored from its own sub-reply, so a
failed part costs only its own metric (judge_error). Two metrics asking the
same prompt of one case (never the case today: abstention and over-refusal
apply to different case kinds) share its part.

Metrics whose registry spec has no plan (asked another way) are asked in
per_metric fashion alongside, so combined mode never drops a metric.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ragproof_core.judge.types import JudgeStopped
from ragproof_core.metrics.judge_plan import JudgePlan, Planned, result_from_verdict, with_history
from ragproof_core.metrics.registry import REGISTRY, Registry
from ragproof_core.metrics.spec import DEFAULT_PARAMS
from ragproof_core.model import Case, CaseOutput, MetricResult, skipped


def combined_parts(plans: Sequence[Planned]) -> dict[str, dict[str, Any]]:
    """{prompt: inputs} of the plans that need the judge."""
    parts: dict[str, dict[str, Any]] = {}
    for plan in plans:
        if isinstance(plan, JudgePlan):
            earlier = parts.setdefault(plan.prompt, plan.inputs)
            if earlier != plan.inputs:
                raise ValueError(f"two metrics ask prompt {plan.prompt!r} with different inputs")
    return parts


async def combined_results(
    case: Case,
    output: CaseOutput,
    judge: Any,
    chosen: Sequence[tuple[str, Callable[..., Awaitable[MetricResult]]]],
    on_stop: Callable[[JudgeStopped], str],
    params: Any = DEFAULT_PARAMS,
    registry: Registry = REGISTRY,
) -> list[MetricResult]:
    """The results of the ``chosen`` (name, per-metric function) pairs, in that order.

    A metric whose registry spec has a ``plan`` is one part of the combined
    request, planned with ``params`` (the run settings: judged retrieval reads
    run.k); any other is asked alone through its function. A question the judge
    stops (``JudgeStopped``) is skipped with the reason ``on_stop`` gives it."""
    plans: dict[str, Planned] = {}
    for name, _ in chosen:
        declared = registry.spec(name)
        if declared is not None and declared.plan is not None:
            plans[name] = with_history(declared.plan(case, output, True, params), output)
    parts = combined_parts(list(plans.values()))

    stopped: list[str] = []

    async def combined() -> dict[str, Any] | None:
        if not parts:
            return {}
        try:
            return await judge.ask_combined(parts)
        except JudgeStopped as stop:
            stopped.append(on_stop(stop))
            return None

    async def alone(name: str, fn) -> MetricResult:
        try:
            return await fn(case, output, judge)
        except JudgeStopped as stop:
            return skipped(case.id, name, on_stop(stop))

    others = [(name, fn) for name, fn in chosen if name not in plans]
    verdicts, *other_results = await asyncio.gather(
        combined(), *(alone(name, fn) for name, fn in others)
    )
    by_name = dict(zip((name for name, _ in others), other_results, strict=True))
    results: list[MetricResult] = []
    for name, _ in chosen:
        if name in by_name:
            results.append(by_name[name])
            continue
        plan = plans[name]
        if isinstance(plan, MetricResult):
            results.append(plan)
        elif verdicts is None:
            results.append(skipped(case.id, name, stopped[0]))
        else:
            results.append(result_from_verdict(plan, verdicts[plan.prompt]))
    return results
