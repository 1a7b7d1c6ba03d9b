"""A judge metric split in two pure halves: what to ask, and how to score the answer.

``plan`` looks at a case and its output and returns either a finished
``MetricResult`` (a skip, a case error, a heuristic score: no judge needed) or
a ``JudgePlan``: the prompt to ask, its inputs, and a pure ``score`` function
from the validated reply to the metric's result.

Both judge modes run the same plans, so their scores can differ only through
the judge's verdicts:

- per_metric mode asks each plan's prompt on its own (``run_plan``);
- combined mode asks every plan of a case in one request and scores each
  metric from its own sub-reply (``metrics.combined_run``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ragproof_core.judge.prompts import HISTORY
from ragproof_core.judge.types import Judge, JudgeVerdict
from ragproof_core.model import CaseOutput, Message, MetricResult, judge_error


@dataclass(frozen=True)
class JudgePlan:
    """One judge question a metric needs for one case."""

    case_id: str
    metric: str
    prompt: str
    inputs: dict[str, Any]
    # From the validated reply (a section-4 shape) to the metric's result.
    score: Callable[[dict[str, Any]], MetricResult]


Planned = MetricResult | JudgePlan


def messages_input(messages: Sequence[Message], first_turn: int = 1) -> list[dict[str, Any]]:
    """A conversation's messages as a judge input: user and assistant alternating from
    turn ``first_turn``, each ``{"turn", "role", "content"}``."""
    return [
        {"turn": first_turn + i // 2, "role": m.role, "content": m.content}
        for i, m in enumerate(messages)
    ]


def with_history(planned: Planned, output: CaseOutput) -> Planned:
    """A conversation turn's plan with the earlier turns as its judge's ``history`` input
    (CONTRACT section 16); a single case's or a first turn's plan unchanged, so its
    request is exactly what it always was."""
    if not output.history or not isinstance(planned, JudgePlan) or HISTORY in planned.inputs:
        return planned
    return replace(planned, inputs=inputs_with_history(planned.inputs, output))


def inputs_with_history(inputs: dict[str, Any], output: CaseOutput) -> dict[str, Any]:
    """A judge question's inputs, with the earlier turns when ``output`` is a later turn's."""
    if not output.history:
        return inputs
    return {**inputs, HISTORY: messages_input(output.history)}


def verdict_json(verdict: JudgeVerdict) -> str:
    """What ``judge_raw_json`` stores: always JSON, so SQL's JSON functions work on it.

    The validated reply when the judge answered, else the error and the judge's
    last reply text (or null) verbatim.
    """
    if verdict.ok and verdict.data is not None:
        return json.dumps(verdict.data, ensure_ascii=False)
    return json.dumps({"error": verdict.error, "raw": verdict.raw}, ensure_ascii=False)


def result_from_verdict(plan: JudgePlan, verdict: JudgeVerdict) -> MetricResult:
    """The metric's result: scored from a validated reply, else a judge_error."""
    if not verdict.ok or verdict.data is None:
        return judge_error(
            plan.case_id, plan.metric, verdict.error or "judge failed", verdict_json(verdict)
        )
    return plan.score(verdict.data)


async def run_plan(planned: Planned, judge: Judge | None) -> MetricResult:
    """per_metric mode: ask the plan's own prompt (``BudgetExceeded`` propagates)."""
    if isinstance(planned, MetricResult):
        return planned
    assert judge is not None  # a plan is only made when a judge is configured
    verdict = await judge.ask(planned.prompt, planned.inputs)
    return result_from_verdict(planned, verdict)
