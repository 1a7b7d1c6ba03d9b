"""The data model's own rules: a value exists exactly when a metric scored, and
generation metrics read the answer's chunks before the retrieve() result."""

import pytest

from ragproof_core.model import Answer, CaseOutput, Chunk, MetricResult, Status, scored, skipped


@pytest.mark.parametrize("status", [s for s in Status if s is not Status.SCORED])
def test_a_result_that_did_not_score_can_never_carry_a_value(status):
    with pytest.raises(ValueError):
        MetricResult("c1", "retrieval.mrr", status, 0.0, "reason")


def test_a_scored_result_must_carry_a_value():
    with pytest.raises(ValueError):
        MetricResult("c1", "retrieval.mrr", Status.SCORED, None)
    assert scored("c1", "retrieval.mrr", 1).value == 1.0
    assert skipped("c1", "retrieval.mrr", "why").value is None


def test_context_prefers_the_answers_own_chunks_then_retrieve():
    own, fetched = (Chunk("a", "x"),), (Chunk("b", "y"),)
    assert CaseOutput("c", Answer("t", own), fetched).context == own
    assert CaseOutput("c", Answer("t"), fetched).context == fetched
    assert CaseOutput("c", Answer("t")).context is None
    assert CaseOutput("c", Answer("t", ()), fetched).context == ()  # empty is known, not missing


def test_document_id_falls_back_to_the_chunk_id():
    assert Chunk("c1", "t", metadata={"document_id": "doc"}).document_id == "doc"
    assert Chunk("c1", "t").document_id == "c1"
