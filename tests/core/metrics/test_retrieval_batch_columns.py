"""The retrieval batch from Arrow columns (``retrieval_batch_columns``,
``retrieval_column_results``) against the object path (``BatchBuilder``,
``retrieval_batch_results``) on the generated collections of
test_retrieval_batch: graded and binary judgments, grade 0, ties, empty and
absent retrievals, repeated ranked and expected ids, cases without a relevant
id, chunk and document mode, k 1, 5 and 10 and ``@N`` cut-offs. The columns are
the store's own: the cases and outputs encoded as a run stores them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from ragproof_core.config.settings import RunSettings
from ragproof_core.metrics.registry import REGISTRY
from ragproof_core.metrics.result_columns import ResultColumns, concat
from ragproof_core.metrics.retrieval import (
    RETRIEVAL_GROUP,
    matched_ids,
    retrieval_batch_results,
    retrieval_column_results,
)
from ragproof_core.metrics.retrieval_batch import BatchBuilder
from ragproof_core.metrics.retrieval_batch_columns import (
    IDS_PER_PIECE,
    IdLists,
    batch_from_lists,
    document_ids,
    judged_ids,
    ranked_ids,
)
from ragproof_core.model import Case, CaseOutput, Chunk, MetricResult, Status
from ragproof_core.store.schema import encode_dataset, encode_outputs
from tests.core.metrics.test_retrieval_batch import SELECTIONS, collection


def tables(cases, outputs):
    return encode_dataset("r", cases), encode_outputs("r", outputs)


@pytest.mark.parametrize("document", [False, True])
# The default piece holds all 500 cases; 1 id a piece puts each case in its own, 50 cuts
# the batch into pieces of a few cases.
@pytest.mark.parametrize("ids_per_piece", [IDS_PER_PIECE, 1, 50])
def test_the_arrow_builder_equals_the_object_builder(document, ids_per_piece):
    cases, outputs, _, _ = collection(seed=31 + document, n=500, document=document)
    source_match = "document" if document else "chunk"
    scored = [
        i for i, (c, o) in enumerate(zip(cases, outputs, strict=True))
        if o.retrieved is not None and c.expected_source_ids
    ]  # fmt: skip
    builder = BatchBuilder()
    for i in scored:
        builder.add(matched_ids(outputs[i].retrieved, source_match), cases[i].judgments())
    dataset, stored = tables([cases[i] for i in scored], [outputs[i] for i in scored])
    columns = batch_from_lists(
        ranked_ids(stored.column("retrieved").combine_chunks(), source_match),
        judged_ids(
            dataset.column("expected_source_ids").combine_chunks(),
            dataset.column("expected_source_grades_json").combine_chunks(),
        ),
        ids_per_piece,
    )
    expected = builder.build()
    assert columns.cases == expected.cases == len(scored)
    for name in ("case", "rank", "grade", "relevant", "judged", "judged_case", "judged_grade"):
        mine, theirs = getattr(columns, name), getattr(expected, name)
        assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs), name
    # Both kinds of judgments and repeated ranked ids were in the batch.
    assert dataset.column("expected_source_grades_json").null_count not in (0, len(scored))
    assert len(expected.case) < sum(len(outputs[i].retrieved) for i in scored)


@pytest.mark.parametrize("document", [False, True])
@pytest.mark.parametrize("k", [1, 5, 10])
def test_column_rows_equal_the_object_rows(document, k):
    cases, outputs, _, _ = collection(seed=k + 100 * document, n=400, document=document)
    settings = RunSettings(k=k, source_match="document" if document else "chunk")
    dataset, stored = tables(cases, outputs)
    for selected in SELECTIONS:
        wanted = REGISTRY.select(selected)
        by_objects = [r for rows in retrieval_batch_results(cases, outputs, settings, wanted)
                      for r in rows]  # fmt: skip
        columns = retrieval_column_results(dataset, stored, settings, wanted)
        assert columns.results() == by_objects, selected
    assert {r.status for r in by_objects} == {Status.SCORED, Status.SKIPPED}


def test_the_retrieval_group_scores_columns():
    assert RETRIEVAL_GROUP.score_columns is retrieval_column_results


def test_column_rows_of_skipped_cases_only_and_of_no_case():
    cases = [Case("a", "q?", expected_source_ids=None), Case("b", "q?", expected_source_ids=("x",))]
    outputs = [CaseOutput("a", retrieved=()), CaseOutput("b", retrieved=None)]
    wanted = REGISTRY.select(SELECTIONS[0])
    columns = retrieval_column_results(*tables(cases, outputs), RunSettings(), wanted)
    by_objects = retrieval_batch_results(cases, outputs, RunSettings(), wanted)
    assert columns.results() == [r for rows in by_objects for r in rows]
    assert columns.status_counts() == {"skipped": 2 * len(wanted)}
    assert len(retrieval_column_results(*tables([], []), RunSettings(), wanted)) == 0


def test_dataset_and_outputs_must_hold_the_same_cases():
    cases = [Case("a", "q?", expected_source_ids=("x",)), Case("b", "q?")]
    outputs = [CaseOutput("b", retrieved=()), CaseOutput("a", retrieved=())]
    with pytest.raises(ValueError, match="same order"):
        retrieval_column_results(*tables(cases, outputs), RunSettings())


def test_document_ids_read_the_metadata_as_the_chunk_does():
    chunks = [
        Chunk("c1", "", metadata={"document_id": "d1"}),
        Chunk("c2", ""),
        Chunk("c3", "", metadata={"document_id": 7}),
        Chunk("c4", "", metadata={"document_id": None, "x": 1}),
        Chunk("c5", "", metadata={"note": '"document_id"'}),
    ]
    stored = encode_outputs("r", [CaseOutput("a", retrieved=tuple(chunks))])
    flat = stored.column("retrieved").combine_chunks().flatten()
    found = document_ids(flat.field("id"), flat.field("metadata_json"))
    assert found.to_pylist() == [c.document_id for c in chunks] == ["d1", "c2", "7", "c4", "c5"]


def test_repeated_judged_ids_keep_their_first_grade():
    batch = batch_from_lists(
        IdLists.of(pa.array([["a", "b"]])),
        IdLists.of(pa.array([["b", "a", "b"]]), pa.array([[2, 0, 3]])),
    )
    assert batch.grade.tolist() == [0, 2]
    assert batch.judged_grade.tolist() == [2, 0]


def test_result_columns_round_trip_result_objects():
    rows = [
        MetricResult("a", "m1", Status.SCORED, 0.25),
        MetricResult("a", "m2", Status.SKIPPED, None, "why"),
        MetricResult("b", "m1", Status.JUDGE_ERROR, None, "bad", '{"raw": 1}'),
    ]
    columns = ResultColumns.from_results(rows)
    assert columns.results() == rows
    assert concat([columns, columns.take(np.array([2, 0]))]).results() == [*rows, rows[2], rows[0]]
    assert columns.status_counts() == {"scored": 1, "skipped": 1, "judge_error": 1}


def test_each_retrieval_metric_declares_its_batch_kernel():
    from ragproof_core.metrics import retrieval
    from ragproof_core.metrics.spec import MetricSpec

    assert {spec.name: spec.kernel.__name__ for spec in retrieval.METRICS} == {
        "retrieval.precision_at_k": "precision_at_k",
        "retrieval.recall_at_k": "recall_at_k",
        "retrieval.mrr": "mrr",
        "retrieval.ndcg_at_k": "ndcg_at_k",
        "retrieval.map": "average_precision",
        "retrieval.r_precision": "r_precision",
        "retrieval.hit_rate_at_k": "hit_rate_at_k",
        "retrieval.bpref": "bpref",
        "retrieval.judged_at_k": "judged_at_k",
    }
    with pytest.raises(ValueError, match="batch kernel belongs to a group's member"):
        MetricSpec("x.y", True, "never", (), "", score=lambda *a: None, kernel=len)


def test_string_document_ids_are_read_by_the_json_reader_as_the_chunk_reads_them():
    chunks = [
        Chunk("c1", "", metadata={"document_id": "d1", "page": 3}),
        Chunk("c2", "", metadata={"document_id": None}),
        Chunk("c3", "", metadata={"nested": {"document_id": "no"}, "é": "line\nbreak"}),
        Chunk("c4", "", metadata={"document_id": "d\u2028é"}),
        Chunk("c5", ""),
    ]
    stored = encode_outputs("r", [CaseOutput("a", retrieved=tuple(chunks))])
    flat = stored.column("retrieved").combine_chunks().flatten()
    found = document_ids(flat.field("id"), flat.field("metadata_json"))
    assert found.to_pylist() == [c.document_id for c in chunks]
    assert found.to_pylist() == ["d1", "c2", "c3", "d\u2028é", "c5"]
