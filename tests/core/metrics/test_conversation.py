"""conversation.knowledge_retention (CONTRACT section 16): exact scores for every rule."""

from __future__ import annotations

import json

import pytest

from ragproof_core.metrics.conversation import (
    KNOWLEDGE_RETENTION,
    plan_knowledge_retention,
    score_knowledge_retention,
)
from ragproof_core.metrics.judge_plan import JudgePlan
from ragproof_core.model import Answer, Case, CaseOutput, Status, TurnOf


def turns(n: int) -> list[Case]:
    return [Case(f"c1#{t}", f"q{t}", turn=TurnOf("c1", t, n)) for t in range(1, n + 1)]


def answered(cases: list[Case]) -> list[CaseOutput]:
    return [CaseOutput(c.id, Answer(f"a{c.turn.turn}")) for c in cases]


def verdicts(*pairs: tuple[int, bool]) -> dict:
    return {"turns": [{"turn": t, "retained": r} for t, r in pairs]}


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        # Turns 2, 3 and 4 are judged: 2 of 3 retained.
        (verdicts((2, True), (3, False), (4, True)), 2 / 3),
        # A missing verdict (turn 3) counts as not retained.
        (verdicts((2, True), (4, True)), 2 / 3),
        # A verdict for a turn the conversation does not have (1, 5) is ignored.
        (verdicts((1, False), (2, True), (3, True), (4, True), (5, False)), 1.0),
        # Two verdicts for one turn: retained only if both say so.
        (verdicts((2, True), (2, False), (3, True), (4, True)), 2 / 3),
        # No verdict at all: nothing retained.
        ({"turns": []}, 0.0),
    ],
)
def test_score_is_retained_turns_over_assistant_turns_from_the_second(reply, expected) -> None:
    result = score_knowledge_retention("c1", 4, reply)
    assert (result.case_id, result.metric, result.status) == (
        "c1",
        KNOWLEDGE_RETENTION,
        Status.SCORED,
    )
    assert result.value == pytest.approx(expected)
    assert json.loads(result.judge_raw_json) == reply


def test_a_conversation_is_asked_once_with_every_turn_in_order() -> None:
    cases = turns(2)
    planned = plan_knowledge_retention(cases, answered(cases), True)
    assert isinstance(planned, JudgePlan)
    assert (planned.case_id, planned.prompt) == ("c1", "knowledge_retention")
    assert planned.inputs == {
        "conversation": [
            {"turn": 1, "role": "user", "content": "q1"},
            {"turn": 1, "role": "assistant", "content": "a1"},
            {"turn": 2, "role": "user", "content": "q2"},
            {"turn": 2, "role": "assistant", "content": "a2"},
        ]
    }
    assert planned.score(verdicts((2, True))).value == 1.0


def test_one_turn_failed_turns_and_no_judge_need_no_request() -> None:
    one = turns(1)
    result = plan_knowledge_retention(one, answered(one), True)
    assert (result.case_id, result.status, result.reason) == (
        "c1",
        Status.NOT_APPLICABLE,
        "a one-turn conversation has no earlier turn to retain",
    )
    three = turns(3)
    outputs = answered(three)
    outputs[1] = CaseOutput("c1#2", error="boom")
    outputs[2] = CaseOutput("c1#3", error="an earlier turn failed")
    failed = plan_knowledge_retention(three, outputs, True)
    assert (failed.case_id, failed.status, failed.reason) == (
        "c1",
        Status.ERROR,
        "turn 2 failed: boom",
    )
    unjudged = plan_knowledge_retention(three, answered(three), False)
    assert (unjudged.status, unjudged.reason) == (
        Status.SKIPPED,
        "no judge configured (set RAGPROOF_JUDGE_MODEL)",
    )
