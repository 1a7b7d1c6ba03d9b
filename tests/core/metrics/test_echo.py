"""Fixture tests for ragproof_core/metrics/echo.py (metrics.md, echo.exact_match)."""

from __future__ import annotations

import sys

import pytest

from ragproof_core.metrics.echo import EXACT_MATCH, exact_match
from ragproof_core.model import Answer, Case, CaseOutput, Status
from tests.core.metrics.fixture_cases import cases_for, unowned_lines

FIXTURE = "echo_cases.jsonl"


def check_fixtures(test_name: str) -> None:
    for line in cases_for(FIXTURE, test_name):
        case = Case("case-1", "q?", expected_answer=line["expected_answer"])
        text = line["answer"]
        output = CaseOutput("case-1", answer=None if text is None else Answer(text))
        result = exact_match(case, output)
        label = line["name"]
        assert (result.case_id, result.metric) == ("case-1", EXACT_MATCH), label
        if "expect_skip" in line:
            assert (result.status, result.value, result.reason) == (
                Status.SKIPPED,
                None,
                line["expect_skip"],
            ), label
        else:
            assert (result.status, result.value, result.reason) == (
                Status.SCORED,
                line["expect"],
                None,
            ), label


def test_every_fixture_line_belongs_to_a_test() -> None:
    assert unowned_lines(FIXTURE, sys.modules[__name__]) == []


def test_exact_match_ignores_surrounding_whitespace(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


def test_exact_match_is_otherwise_exact(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


def test_skip_when_case_has_no_expected_answer(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


def test_skip_when_adapter_produced_no_answer(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)
