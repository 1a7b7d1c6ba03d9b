"""What only a conversation has (CONTRACT section 16): ``conversation.knowledge_retention``.

One judge call per conversation (prompt ``knowledge_retention``) over its
turns, once the last one is done; the result is stored under the
conversation's id (``c1``), not a turn's. The reply
``{"turns": [{"turn": int, "retained": bool}]}`` gives a verdict for each
assistant turn from the second on:

- score = retained turns / the conversation's assistant turns from the
  second on; a turn without a verdict counts as not retained, a verdict for a
  turn the conversation does not have is ignored, and a turn given several
  verdicts is retained only if every one says so;
- a one-turn conversation is ``not_applicable`` and makes no request;
- a conversation with a failed turn is a case failure of this metric (its
  reason names the first failed turn).

A single case is no conversation: a run gives it no row of this metric, and a
run without conversations has no summary row for it (``metrics.aggregate``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from ragproof_core.metrics.judge_plan import JudgePlan, Planned, messages_input
from ragproof_core.metrics.spec import MetricSpec
from ragproof_core.model import (
    Case,
    CaseOutput,
    Message,
    MetricResult,
    case_error,
    not_applicable,
    scored,
    skipped,
)

# After the system's own cost (metrics.registry).
REPORT_ORDER = 75
KNOWLEDGE_RETENTION = "conversation.knowledge_retention"
PROMPT = "knowledge_retention"

NO_JUDGE = "no judge configured (set RAGPROOF_JUDGE_MODEL)"
NOT_A_CONVERSATION = "case is not a conversation"
ONE_TURN = "a one-turn conversation has no earlier turn to retain"


def plan_knowledge_retention(
    turns: Sequence[Case], outputs: Sequence[CaseOutput], has_judge: bool, params: Any = None
) -> Planned:
    """The judge question for one conversation (its turns and their outputs, in order),
    or its result without asking."""
    conversation_id = turns[0].turn.conversation_id
    for case, output in zip(turns, outputs, strict=True):
        if output.failed:
            return case_error(
                conversation_id,
                KNOWLEDGE_RETENTION,
                f"turn {case.turn.turn} failed: {output.error}",
            )
    if len(turns) == 1:
        return not_applicable(conversation_id, KNOWLEDGE_RETENTION, ONE_TURN)
    if not has_judge:
        return skipped(conversation_id, KNOWLEDGE_RETENTION, NO_JUDGE)
    messages: list[Message] = []
    for case, output in zip(turns, outputs, strict=True):
        reply = "" if output.answer is None else output.answer.text
        messages += [Message("user", case.question), Message("assistant", reply)]
    return JudgePlan(
        conversation_id,
        KNOWLEDGE_RETENTION,
        PROMPT,
        {"conversation": messages_input(messages)},
        partial(score_knowledge_retention, conversation_id, len(turns)),
    )


def score_knowledge_retention(
    conversation_id: str, turns: int, data: Mapping[str, Any]
) -> MetricResult:
    """retained / assistant turns 2..turns (rules in the module docstring)."""
    votes: dict[int, bool] = {}
    for item in data["turns"]:
        number = item["turn"]
        votes[number] = votes.get(number, True) and item["retained"]
    retained = sum(1 for number in range(2, turns + 1) if votes.get(number, False))
    return scored(
        conversation_id,
        KNOWLEDGE_RETENTION,
        retained / (turns - 1),
        json.dumps(data, ensure_ascii=False),
    )


def plan_single_case(case: Case, output: CaseOutput, has_judge: bool, params: Any) -> Planned:
    """The metric asked of one case alone: a case is not a conversation. Runs never ask
    it (``run.evaluate`` asks ``plan_knowledge_retention`` of each conversation)."""
    return skipped(case.id, KNOWLEDGE_RETENTION, NOT_A_CONVERSATION)


METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        KNOWLEDGE_RETENTION,
        True,
        "required",
        ("conversation of two or more turns",),
        "assistant turns (from the 2nd) that keep what the user said earlier / those turns; "
        "one judge call per conversation, stored under its id",
        plan=plan_single_case,
        prompt=PROMPT,
        conversation=plan_knowledge_retention,
    ),
)
