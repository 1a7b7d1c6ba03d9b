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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ragproof_core.metrics.conversation_columns import ConversationColumns
from ragproof_core.metrics.judge_plan import JudgePlan, Planned, messages_input
from ragproof_core.metrics.result_columns import ResultColumns
from ragproof_core.metrics.spec import MetricSpec
from ragproof_core.model import (
    Case,
    CaseOutput,
    Message,
    MetricResult,
    Status,
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


def knowledge_retention_columns(
    conversations: ConversationColumns, params: Any = None
) -> ResultColumns:
    """``plan_knowledge_retention``'s rows without a judge for many conversations at
    once: a case failure (its first failed turn), ``not_applicable`` (one turn) or a
    skip (no judge), one row per conversation in their order."""
    count = len(conversations)
    failed = conversations.failed_at >= 0
    one_turn = conversations.turns == 1
    status = np.where(
        failed,
        Status.ERROR.value,
        np.where(one_turn, Status.NOT_APPLICABLE.value, Status.SKIPPED.value),
    )
    failure = pc.binary_join_element_wise(
        "turn ",
        pa.array(conversations.failed_turn).cast(pa.string()),
        " failed: ",
        conversations.failure,
        "",
    )
    reason = pc.if_else(
        pa.array(failed),
        failure,
        pa.array(np.where(one_turn, ONE_TURN, NO_JUDGE), pa.string()),
    )
    return ResultColumns(
        conversations.conversation_id,
        pa.repeat(pa.scalar(KNOWLEDGE_RETENTION, pa.string()), count),
        pa.array(status, pa.string()),
        pa.nulls(count, pa.float64()),
        reason,
        pa.nulls(count, pa.string()),
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
        conversation_columns=knowledge_retention_columns,
        reads=frozenset({"answer"}),
    ),
)
