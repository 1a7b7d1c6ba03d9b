"""Fixture tests for ragproof_core/metrics/agent.py (CONTRACT section 17, docs/metrics.md):
one-to-one maximal matching of tool calls, JSON argument equality, the three modes."""

from __future__ import annotations

import sys

import pytest

from ragproof_core.adapters.coerce import to_steps
from ragproof_core.config.settings import RunSettings
from ragproof_core.metrics.agent import (
    STEPS,
    TOOL_METRICS,
    TOOL_PRECISION,
    TOOL_RECALL,
    TRAJECTORY_MATCH,
    json_equal,
    max_matching,
    step_count,
    tool_results,
)
from ragproof_core.model import Answer, Case, CaseOutput, ExpectedTool, Status, ToolMatch
from tests.core.metrics.fixture_cases import cases_for, unowned_lines

FIXTURE = "agent_cases.jsonl"
SHORT = {
    "tool_precision": TOOL_PRECISION,
    "tool_recall": TOOL_RECALL,
    "trajectory_match": TRAJECTORY_MATCH,
}


def agent_case(line: dict) -> Case:
    return Case(
        "case-1",
        "q?",
        expected_tools=tuple(
            ExpectedTool(t["name"], t.get("arguments")) for t in line["expected_tools"]
        ),
        tool_match=ToolMatch(line["tool_match"]),
    )


def check_fixtures(test_name: str) -> None:
    for line in cases_for(FIXTURE, test_name):
        output = CaseOutput("case-1", Answer("done", steps=to_steps(line["steps"])))
        results = tool_results(agent_case(line), output, RunSettings(), TOOL_METRICS)
        got = {r.metric: r.value for r in results}
        expected = {SHORT[short]: value for short, value in line["expect"].items()}
        assert got == expected, line["name"]
        for result in results:
            # A value exists exactly when scored; None is not_applicable here, never 0.
            wanted = Status.SCORED if got[result.metric] is not None else Status.NOT_APPLICABLE
            assert result.status is wanted, line["name"]


def test_every_fixture_line_is_owned_by_a_test():
    assert unowned_lines(FIXTURE, sys.modules[__name__]) == []


def test_repeated_call_is_an_extra_call():
    check_fixtures("test_repeated_call_is_an_extra_call")


def test_extra_calls_lower_precision_only():
    check_fixtures("test_extra_calls_lower_precision_only")


def test_one_made_call_matching_two_expected_is_matched_once_and_maximally():
    check_fixtures("test_one_made_call_matching_two_expected_is_matched_once_and_maximally")


def test_arguments_are_a_subset_with_json_equality():
    check_fixtures("test_arguments_are_a_subset_with_json_equality")


def test_exact_mode_and_its_counter_examples():
    check_fixtures("test_exact_mode_and_its_counter_examples")


def test_in_order_mode_and_its_counter_examples():
    check_fixtures("test_in_order_mode_and_its_counter_examples")


def test_any_order_mode_and_its_counter_examples():
    check_fixtures("test_any_order_mode_and_its_counter_examples")


def test_no_call_made():
    check_fixtures("test_no_call_made")
    (line,) = [
        x for x in cases_for(FIXTURE, "test_no_call_made") if x["name"] == "an empty trajectory"
    ]
    output = CaseOutput("case-1", Answer("done", steps=()))
    precision = tool_results(agent_case(line), output, RunSettings(), (TOOL_PRECISION,))[0]
    assert (precision.status, precision.reason) == (Status.NOT_APPLICABLE, "no tool call was made")


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, 1.0, True),
        (True, 1, False),
        (1, True, False),
        (False, 0, False),
        (True, True, True),
        (None, None, True),
        (None, False, False),
        ("1", 1, False),
        ([1, 2], [1.0, 2], True),
        ([1, 2], [2, 1], False),
        ({"a": {"b": [True]}}, {"a": {"b": [True]}}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
    ],
)
def test_json_equality(a, b, equal):
    assert json_equal(a, b) is equal
    assert json_equal(b, a) is equal


def test_maximum_matching_moves_an_earlier_pair_to_make_room():
    # expected 0 can take made 0 or 1; expected 1 only made 0: the maximum pairs both.
    edges = {(0, 0), (0, 1), (1, 0)}
    assert max_matching(2, 2, lambda i, j: (i, j) in edges) == {0: 1, 1: 0}
    # three expected calls competing for two made calls: at most two pairs.
    assert len(max_matching(3, 2, lambda i, j: True)) == 2


def test_skips_without_expected_tools_or_steps():
    plain = Case("c", "q?")
    agent = Case("c", "q?", expected_tools=(ExpectedTool("search"),))
    with_steps = CaseOutput("c", Answer("a", steps=()))
    no_steps = CaseOutput("c", Answer("a"))
    for case, output, reason in [
        (plain, with_steps, "case has no expected_tools"),
        (agent, no_steps, "answer has no steps"),
        (agent, CaseOutput("c", None, ()), "adapter produced no answer"),
    ]:
        results = tool_results(case, output, RunSettings(), TOOL_METRICS)
        assert [(r.status, r.reason) for r in results] == [(Status.SKIPPED, reason)] * 3


def test_steps_counts_every_step_and_skips_without_a_trajectory():
    steps = to_steps(
        [
            {"type": "retrieve", "query": "q", "chunks": []},
            {"type": "tool", "name": "search", "arguments": {}},
            {"type": "tool", "name": "search", "arguments": {}},
        ]
    )
    case = Case("c", "q?")
    assert step_count(case, CaseOutput("c", Answer("a", steps=steps))).value == 3.0
    assert step_count(case, CaseOutput("c", Answer("a", steps=()))).value == 0.0
    skipped = step_count(case, CaseOutput("c", Answer("a")))
    assert (skipped.metric, skipped.status, skipped.reason) == (
        STEPS,
        Status.SKIPPED,
        "answer has no steps",
    )
