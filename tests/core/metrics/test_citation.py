"""Fixture tests for ragproof_core/metrics/citation.py (generation.citation_validity)."""

from __future__ import annotations

import sys

import pytest

from ragproof_core.metrics.citation import CITATION_VALIDITY, citation_validity
from ragproof_core.model import Case, CaseOutput, Status
from tests.core.metrics.fixture_cases import answer, cases_for, chunks, unowned_lines

FIXTURE = "citation_cases.jsonl"


def check_fixtures(test_name: str) -> None:
    for line in cases_for(FIXTURE, test_name):
        output = CaseOutput(
            "case-1", answer=answer(line["answer"]), retrieved=chunks(line["retrieve"])
        )
        result = citation_validity(Case("case-1", "q?"), output)
        label = line["name"]
        assert (result.case_id, result.metric) == ("case-1", CITATION_VALIDITY), label
        if "expect_skip" in line:
            assert (result.status, result.value, result.reason) == (
                Status.SKIPPED,
                None,
                line["expect_skip"],
            ), label
        else:
            assert (result.status, result.reason) == (Status.SCORED, None), label
            assert result.value == pytest.approx(line["expect"], rel=1e-15, abs=0.0), label


def test_every_fixture_line_belongs_to_a_test() -> None:
    assert unowned_lines(FIXTURE, sys.modules[__name__]) == []


def test_citation_validity_share_of_valid_citations(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


def test_duplicate_citations_deduplicated(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


def test_empty_retrieved_set_scores_zero(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


def test_citations_checked_against_answer_chunks_before_retrieve(
    request: pytest.FixtureRequest,
) -> None:
    check_fixtures(request.node.name)


def test_citations_fall_back_to_retrieve(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


def test_citations_are_chunk_ids_whatever_source_match(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


def test_skip_when_answer_has_no_citations(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


def test_skip_when_adapter_produced_no_answer(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


def test_skip_when_no_retrieved_set_is_known(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)
