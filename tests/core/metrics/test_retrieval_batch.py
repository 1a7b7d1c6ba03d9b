"""The batch path of the retrieval metrics (``retrieval_batch_results``, the one a run
takes) against the per-case path (``retrieval_results``) row by row, and against
pytrec_eval (trec_eval's own code) per query, on generated collections: graded and
binary judgments, grade-0 judgments, score ties, empty and absent retrievals,
duplicated ids, duplicated expected ids, cases without a relevant id and
document-mode ids."""

from __future__ import annotations

import random

import pytest

from ragproof_core.config.settings import RunSettings
from ragproof_core.data.importers.trec import RunEntry, trec_eval_order
from ragproof_core.metrics.registry import REGISTRY
from ragproof_core.metrics.retrieval import (
    RETRIEVAL_GROUP,
    SCORED_RETRIEVAL,
    retrieval_batch_results,
    retrieval_results,
)
from ragproof_core.metrics.retrieval_batch import batch_of
from ragproof_core.metrics.retrieval_batch_kernels import mrr, precision_at_k, recall_at_k
from ragproof_core.metrics.spec import MetricParams
from ragproof_core.model import Case, CaseOutput, Chunk, Status
from tests.support.trec_equality import MEASURES

NINE = SCORED_RETRIEVAL
# What a run may select: the four, the nine, and cut-offs beside them (some equal to k).
SELECTIONS = (
    NINE[:4],
    NINE,
    ("retrieval.mrr", "retrieval.ndcg_at_k"),
    (*NINE, "retrieval.ndcg_at_k@3", "retrieval.precision_at_k@5", "retrieval.judged_at_k@20"),
    ("retrieval.recall_at_k@1", "retrieval.hit_rate_at_k@2", "retrieval.bpref"),
)
POOL = [f"d{i}" for i in range(30)] + ["D3", "é7", "doc-010", "d010"]


def collection(seed: int, n: int, document: bool):
    """``n`` cases, their outputs, and the qrels and runs pytrec_eval reads of them."""
    rng = random.Random(seed)
    cases, outputs, qrels, runs = [], [], {}, {}
    for index in range(n):
        case_id = f"q{index}"
        judged = {
            doc: rng.choice((0, 0, 1, 1, 2, 3)) for doc in rng.sample(POOL, rng.randint(1, 9))
        }
        relevant = tuple(doc for doc, grade in judged.items() if grade >= 1)
        if rng.random() < 0.5:
            case = Case(case_id, "q?", expected_source_ids=relevant, source_grades=judged)
            qrels[case_id] = judged
        else:
            # A list of ids, sometimes naming one twice.
            listed = relevant + relevant[:1] if rng.random() < 0.2 else relevant
            case = Case(case_id, "q?", expected_source_ids=listed or None)
            qrels[case_id] = dict.fromkeys(relevant, 1)
        cases.append(case)
        draw = rng.random()
        if draw < 0.05:
            outputs.append(CaseOutput(case_id, retrieved=None))
            continue
        docs = [] if draw < 0.12 else rng.sample(POOL, rng.randint(1, 25))
        # Scores on a coarse grid: ties, ordered as trec_eval orders them.
        scores = {doc: rng.randint(0, 12) / 4 for doc in docs}
        ranked = [e.docid for e in trec_eval_order([RunEntry(d, s) for d, s in scores.items()])]
        runs[case_id] = {doc: scores[doc] for doc in ranked}
        # Repeats after an id's first rank (overlapping chunks): deduplication drops them.
        for _ in range(rng.randint(0, 4)):
            if ranked:
                at = rng.randrange(len(ranked))
                ranked.insert(rng.randrange(at + 1, len(ranked) + 1), ranked[at])
        if document:
            chunks = tuple(
                Chunk(f"{doc}#{rng.randint(0, 3)}", "", metadata={"document_id": doc})
                for doc in ranked
            )
        else:
            chunks = tuple(Chunk(doc, "") for doc in ranked)
        outputs.append(CaseOutput(case_id, retrieved=chunks))
    return cases, outputs, qrels, runs


@pytest.mark.parametrize("document", [False, True])
@pytest.mark.parametrize("k", [1, 5, 10])
def test_batch_rows_equal_the_per_case_rows(document, k):
    cases, outputs, _, _ = collection(seed=k + 100 * document, n=400, document=document)
    settings = RunSettings(k=k, source_match="document" if document else "chunk")
    statuses = set()
    for selected in SELECTIONS:
        wanted = REGISTRY.select(selected)
        per_case = [
            retrieval_results(c, o, settings, wanted) for c, o in zip(cases, outputs, strict=True)
        ]
        batch = retrieval_batch_results(cases, outputs, settings, wanted)
        assert batch == per_case, selected
        statuses |= {(r.status, r.reason) for rows in batch for r in rows}
    # Every kind of row was compared: scored, and both skips.
    assert {status for status, _ in statuses} == {Status.SCORED, Status.SKIPPED}
    assert len({reason for _, reason in statuses}) == 3


@pytest.mark.parametrize("k", [1, 5])
def test_batch_rows_of_lists_of_ids_only_equal_the_per_case_rows(k):
    # Every judgment at grade 1: nDCG's ideal ranking is taken as it comes, unsorted.
    cases, outputs, _, _ = collection(seed=50 + k, n=400, document=False)
    listed = [i for i, case in enumerate(cases) if case.source_grades is None]
    cases, outputs = [cases[i] for i in listed], [outputs[i] for i in listed]
    settings = RunSettings(k=k)
    wanted = REGISTRY.select(NINE)
    per_case = [
        retrieval_results(c, o, settings, wanted) for c, o in zip(cases, outputs, strict=True)
    ]
    assert retrieval_batch_results(cases, outputs, settings, wanted) == per_case
    assert sum(r.status == Status.SCORED for rows in per_case for r in rows) > 100


def test_the_retrieval_group_scores_in_batches():
    assert RETRIEVAL_GROUP.score_batch is retrieval_batch_results


def test_a_batch_of_skipped_cases_only():
    cases = [Case("a", "q?", expected_source_ids=None), Case("b", "q?", expected_source_ids=("x",))]
    outputs = [CaseOutput("a", retrieved=()), CaseOutput("b", retrieved=None)]
    rows = retrieval_batch_results(cases, outputs, RunSettings(), NINE[:4])
    assert rows == [
        retrieval_results(c, o, RunSettings(), NINE[:4])
        for c, o in zip(cases, outputs, strict=True)
    ]
    assert all(r.status == Status.SKIPPED for case_rows in rows for r in case_rows)


def test_kernels_on_a_hand_built_batch():
    # Case 0 ranks x, a, a (a repeat), b: a relevant at rank 2, c never retrieved.
    # Case 1 retrieved nothing; it judges z relevant and y not.
    batch = batch_of([["x", "a", "a", "b"], []], [["a", "c"], {"z": 2, "y": 0}])
    assert (batch.case.tolist(), batch.rank.tolist()) == ([0, 0, 0], [0, 1, 2])
    assert batch.grade.tolist() == [-1, 1, -1]
    assert (batch.relevant.tolist(), batch.judged.tolist()) == ([2.0, 1.0], [2.0, 2.0])
    assert mrr(batch).tolist() == [0.5, 0.0]
    assert precision_at_k(batch, 2).tolist() == [0.5, 0.0]
    assert recall_at_k(batch, 2).tolist() == [0.5, 0.0]


@pytest.mark.parametrize("document", [False, True])
def test_batch_values_equal_trec_eval_per_query(document):
    import pytrec_eval

    cases, outputs, qrels, runs = collection(seed=7 + document, n=600, document=document)
    cutoffs = (3, 5, 10)
    measures = {"P", "recall", "recip_rank", "ndcg_cut", "map", "Rprec", "bpref", "success"}
    measures |= {f"P.{','.join(map(str, cutoffs))}", f"success.{','.join(map(str, cutoffs))}"}
    measures |= {f"ndcg_cut.{','.join(map(str, cutoffs))}", f"recall.{','.join(map(str, cutoffs))}"}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(runs)
    raised = {q: {d: g + 1 for d, g in judged.items()} for q, judged in qrels.items()}
    for qid, values in (
        pytrec_eval.RelevanceEvaluator(raised, {f"P.{cutoffs[-1]},3,5"}).evaluate(runs).items()
    ):
        theirs[qid].update({f"judged_{k}": values[f"P_{k}"] for k in cutoffs})
    compared = empty = 0
    for k in cutoffs:
        settings = RunSettings(k=k, source_match="document" if document else "chunk")
        rows = retrieval_batch_results(cases, outputs, settings, NINE)
        for case_rows in rows:
            for row in case_rows:
                if row.status != Status.SCORED:
                    continue
                measured = theirs.get(row.case_id)
                # A query pytrec_eval leaves out is trec_eval -c's 0 in every measure.
                want = 0.0 if measured is None else measured[MEASURES[row.metric].format(k=k)]
                assert abs(row.value - want) <= 1e-12, (row, want)
                compared += 1
                empty += not runs[row.case_id]
    assert compared > 3 * 9 * 400 and empty > 0


def test_an_unknown_source_match_is_refused_as_the_per_case_path_refuses_it():
    case, output = Case("a", "q?", expected_source_ids=("x",)), CaseOutput("a", retrieved=())
    settings = MetricParams(source_match="section")
    with pytest.raises(ValueError) as per_case:
        retrieval_results(case, output, settings)
    with pytest.raises(ValueError) as batch:
        retrieval_batch_results([case], [output], settings)
    assert str(batch.value) == str(per_case.value)
