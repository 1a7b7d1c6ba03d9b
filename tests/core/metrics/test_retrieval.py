"""Fixture and property tests for ragproof_core/metrics/retrieval.py (metrics.md, retrieval)."""

from __future__ import annotations

import math
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragproof_core.config.settings import RunSettings
from ragproof_core.metrics.retrieval import (
    MRR,
    NDCG_AT_K,
    PRECISION_AT_K,
    RECALL_AT_K,
    RETRIEVAL_METRICS,
    dedupe,
    matched_ids,
    mrr,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    retrieval_results,
    retrieval_scores,
)
from ragproof_core.model import Case, CaseOutput, Chunk, Status
from tests.core.metrics.fixture_cases import answer, cases_for, chunks, unowned_lines

FIXTURE = "retrieval_cases.jsonl"
SHORT = {
    "precision_at_k": PRECISION_AT_K,
    "recall_at_k": RECALL_AT_K,
    "mrr": MRR,
    "ndcg_at_k": NDCG_AT_K,
}


def run_fixture(line: dict) -> list:
    case = Case(
        "case-1",
        "q?",
        expected_source_ids=(
            None if line["expected_source_ids"] is None else tuple(line["expected_source_ids"])
        ),
    )
    answer_chunks = line.get("answer_chunks")
    output = CaseOutput(
        "case-1",
        answer=None
        if answer_chunks is None
        else answer({"text": "t", "retrieved_chunks": answer_chunks}),
        retrieved=chunks(line["retrieve"]),
    )
    settings = RunSettings(k=line["k"], source_match=line["source_match"])
    return retrieval_results(case, output, settings)


def check_fixtures(test_name: str) -> None:
    for line in cases_for(FIXTURE, test_name):
        results = run_fixture(line)
        label = line["name"]
        assert [r.metric for r in results] == list(RETRIEVAL_METRICS), label
        assert all(r.case_id == "case-1" for r in results), label
        if "expect_skip" in line:
            assert [(r.status, r.value, r.reason) for r in results] == [
                (Status.SKIPPED, None, line["expect_skip"])
            ] * 4, label
        else:
            expected = {SHORT[key]: value for key, value in line["expect"].items()}
            assert all(r.status is Status.SCORED and r.reason is None for r in results), label
            got = {r.metric: r.value for r in results}
            assert got == pytest.approx(expected, rel=1e-12, abs=1e-12), label


def test_every_fixture_line_belongs_to_a_test() -> None:
    assert unowned_lines(FIXTURE, sys.modules[__name__]) == []


# --- metrics.md rules, one fixture test each -------------------------------


def test_fewer_than_k_results_penalised(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


def test_empty_retrieval_scores_zero(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


def test_no_relevant_id_retrieved_scores_zero(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


def test_duplicated_irrelevant_chunk_does_not_push_first_hit_down(
    request: pytest.FixtureRequest,
) -> None:
    check_fixtures(request.node.name)


def test_relevant_item_below_k_does_not_count(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


def test_mrr_looks_past_k(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


def test_idcg_uses_min_of_k_and_relevant(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


def test_document_mode_maps_chunks_to_document_id(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


def test_document_mode_falls_back_to_chunk_id(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


def test_chunk_mode_ignores_document_id(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


def test_dedup_keeps_first_rank(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


def test_k_from_settings_honoured(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


def test_skip_when_adapter_does_not_expose_retrieval(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


def test_skip_when_case_has_no_expected_source_ids(request: pytest.FixtureRequest) -> None:
    check_fixtures(request.node.name)


# --- kernels ---------------------------------------------------------------


def test_kernels_on_empty_ranking_score_zero() -> None:
    relevant = frozenset({"a"})
    assert precision_at_k([], relevant, 5) == 0.0
    assert recall_at_k([], relevant, 5) == 0.0
    assert mrr([], relevant) == 0.0
    assert ndcg_at_k([], relevant, 5) == 0.0
    assert retrieval_scores([], relevant, 5) == (0.0, 0.0, 0.0, 0.0)


def test_precision_denominator_is_always_k() -> None:
    assert precision_at_k(["a"], frozenset({"a"}), 5) == 0.2
    assert precision_at_k(["a", "b"], frozenset({"a", "b"}), 4) == 0.5
    assert precision_at_k(["a", "b", "c"], frozenset({"a", "b", "c"}), 3) == 1.0


def test_ndcg_exact_values() -> None:
    relevant = frozenset({"a", "b"})
    # Hits at ranks 1 and 3 of 5: (1 + 1/log2(4)) / (1 + 1/log2(3)).
    assert ndcg_at_k(["a", "x", "b", "y"], relevant, 5) == pytest.approx(
        1.5 / 1.6309297535714575, rel=1e-15
    )
    assert ndcg_at_k(["b", "a"], relevant, 5) == 1.0


def test_ndcg_past_the_discount_table() -> None:
    # 300 positions runs past the 256-entry precomputed table on both the DCG
    # and the IDCG side; a perfect ranking must still score 1.
    ranked = [f"d{i}" for i in range(300)]
    assert ndcg_at_k(ranked, frozenset(ranked), 300) == pytest.approx(1.0, rel=1e-12)
    # One hit at rank 300 with one relevant id: 1 / log2(301).
    relevant = frozenset({"d299"})
    assert ndcg_at_k(ranked, relevant, 300) == pytest.approx(1 / math.log2(301), rel=1e-12)
    assert retrieval_scores(ranked, relevant, 300)[3] == ndcg_at_k(ranked, relevant, 300)


def test_kernels_without_relevant_ids_do_not_divide_by_zero() -> None:
    # retrieval_results skips such cases; the kernels still stay total.
    assert recall_at_k(["a"], frozenset(), 5) == 0.0
    assert ndcg_at_k(["a"], frozenset(), 5) == 0.0


def test_mrr_accepts_and_ignores_k() -> None:
    assert mrr(["x", "y", "a"], frozenset({"a"}), 1) == pytest.approx(1 / 3, rel=1e-15)


def test_dedupe_keeps_first_occurrence() -> None:
    assert dedupe(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]


def test_matched_ids_modes() -> None:
    retrieved = (
        Chunk("c1", "", metadata={"document_id": "docA"}),
        Chunk("c2", "", metadata={"document_id": "docA"}),
        Chunk("c3", ""),
        Chunk("c1", "", metadata={"document_id": "docA"}),
    )
    assert matched_ids(retrieved, "chunk") == ["c1", "c2", "c3"]
    assert matched_ids(retrieved, "document") == ["docA", "c3"]
    with pytest.raises(ValueError, match="source_match"):
        matched_ids(retrieved, "passage")


# --- properties ------------------------------------------------------------

IDS = st.sampled_from("abcdefgh")
DOCS = st.sampled_from(["docA", "docB", "docC", None])


@st.composite
def retrieval_inputs(draw: st.DrawFn) -> tuple[list[Chunk], frozenset[str], int]:
    n = draw(st.integers(0, 12))
    retrieved = [
        Chunk(
            draw(IDS),
            "",
            metadata={} if (doc := draw(DOCS)) is None else {"document_id": doc},
        )
        for _ in range(n)
    ]
    relevant = frozenset(draw(st.sets(st.sampled_from("abcdefgh") | DOCS.filter(bool), min_size=1)))
    k = draw(st.integers(1, 8))
    return retrieved, relevant, k


def scores_of(retrieved: list[Chunk], relevant: frozenset[str], k: int, mode: str) -> list[float]:
    case = Case("p", "q?", expected_source_ids=tuple(sorted(relevant)))
    output = CaseOutput("p", retrieved=tuple(retrieved))
    results = retrieval_results(case, output, RunSettings(k=k, source_match=mode))
    assert all(r.status is Status.SCORED for r in results)
    return [r.value for r in results]


@given(retrieval_inputs(), st.sampled_from(["chunk", "document"]))
def test_every_score_in_unit_interval(
    inputs: tuple[list[Chunk], frozenset[str], int], mode: str
) -> None:
    retrieved, relevant, k = inputs
    ranked = matched_ids(retrieved, mode)
    kernel_scores = [
        precision_at_k(ranked, relevant, k),
        recall_at_k(ranked, relevant, k),
        mrr(ranked, relevant),
        ndcg_at_k(ranked, relevant, k),
    ]
    for value in (*kernel_scores, *scores_of(retrieved, relevant, k, mode)):
        assert 0.0 <= value <= 1.0


@given(retrieval_inputs(), st.sampled_from(["chunk", "document"]))
def test_fused_scores_equal_the_kernels(
    inputs: tuple[list[Chunk], frozenset[str], int], mode: str
) -> None:
    retrieved, relevant, k = inputs
    ranked = matched_ids(retrieved, mode)
    assert retrieval_scores(ranked, relevant, k) == (
        precision_at_k(ranked, relevant, k),
        recall_at_k(ranked, relevant, k),
        mrr(ranked, relevant),
        ndcg_at_k(ranked, relevant, k),
    )


def matched(chunk: Chunk, mode: str) -> str:
    return chunk.id if mode == "chunk" else chunk.document_id


@given(
    retrieval_inputs(),
    st.sampled_from(["chunk", "document"]),
    st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1000), st.booleans()), max_size=6),
)
def test_duplicates_of_retrieved_ids_change_no_score(
    inputs: tuple[list[Chunk], frozenset[str], int],
    mode: str,
    insertions: list[tuple[int, int, bool]],
) -> None:
    retrieved, relevant, k = inputs
    if not retrieved:
        return
    before = scores_of(retrieved, relevant, k, mode)
    padded = list(retrieved)
    for source_pick, position_pick, new_chunk in insertions:
        source = padded[source_pick % len(padded)]
        key = matched(source, mode)
        first = next(i for i, chunk in enumerate(padded) if matched(chunk, mode) == key)
        # Anywhere after the id's first occurrence, including the very end.
        position = first + 1 + position_pick % (len(padded) - first)
        if new_chunk and mode == "document":
            # A different chunk of the same document is a duplicate too.
            source = Chunk(source.id + "-part2", "", metadata={"document_id": key})
        padded.insert(position, source)
    assert matched_ids(padded, mode) == matched_ids(retrieved, mode)
    assert scores_of(padded, relevant, k, mode) == before
