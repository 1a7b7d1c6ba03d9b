"""Per query, ragproof's retrieval metrics on an imported TREC pair equal trec_eval's
P_k, recall_k, recip_rank and ndcg_cut_k on binary qrels (CONTRACT section 11), and
with graded qrels those and map, Rprec, success_k, bpref and ir_measures' Judged@k
(CONTRACT section 19).

trec_eval runs as pytrec_eval (pytrec-eval-terrier, a dev dependency); the
generated pair and the comparison are in tests/support/trec_equality.py.
"""

from __future__ import annotations

import asyncio
import math

import pytest

from ragproof_core.adapters.recorded import RecordedAdapter
from ragproof_core.config.settings import RunSettings
from ragproof_core.data.dataset import DatasetError, load_dataset
from ragproof_core.data.importers.trec import import_trec
from ragproof_core.data.importers.writer import write_files
from ragproof_core.run.evaluate import evaluate
from tests.support.trec_equality import (
    CUTOFFS,
    DEPTH_METRICS,
    UNCUT,
    compare,
    write_trec_pair,
)

pytest.importorskip(
    "pytrec_eval",
    reason="pytrec_eval (pip package pytrec-eval-terrier, in the dev extra) is not installed",
)

QUERIES = 10_300  # about 3% of them have no relevant document and make no case


@pytest.mark.slow
def test_every_query_equals_trec_eval(tmp_path):
    pair = write_trec_pair(tmp_path / "in", QUERIES)
    tied = [qid for qid, scores in pair.run.items() if len(set(scores.values())) < len(scores)]
    assert len(tied) >= 8_000  # the docid tie-break decides most rankings
    result = compare(pair, tmp_path)
    assert result.queries >= 10_000
    assert result.without_run >= 700  # compared with 0, as trec_eval -c counts them
    assert set(result.max_abs_diff) == {
        f"{metric}@{k}"
        for k in CUTOFFS
        for metric in (
            "retrieval.precision_at_k",
            "retrieval.recall_at_k",
            "retrieval.ndcg_at_k",
        )
    } | {"retrieval.mrr"}
    # Same sums in the same order: not just close, equal.
    assert max(result.max_abs_diff.values()) == 0.0, result.max_abs_diff


def test_a_docid_listed_twice_for_one_query_is_refused_with_its_line(tmp_path):
    pair = write_trec_pair(tmp_path / "in", 200)
    line, qid, docid = pair.first_run_line
    lines = pair.run_path.read_text(encoding="utf-8").splitlines()
    lines.insert(line + 1, f"{qid} Q0 {docid} 99 0.5 tag")  # becomes line line + 2
    pair.run_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        import_trec(pair.qrels_path, pair.run_path)
    assert str(info.value) == (
        f"{pair.run_path}:{line + 2}: docid {docid!r} is listed twice for qid {qid!r} "
        f"(first on line {line}); trec_eval refuses duplicate documents"
    )


@pytest.mark.slow
def test_every_query_of_a_graded_collection_equals_trec_eval_in_every_measure(tmp_path):
    """Grades 0 to 3, score ties, queries without run lines, relevant documents never
    retrieved and retrieved documents never judged (bpref passes over them)."""
    pair = write_trec_pair(tmp_path / "in", 2_000, seed=24, graded=True)
    graded = [q for q, judged in pair.qrels.items() if max(judged.values()) > 1]
    missed = [
        q
        for q, judged in pair.qrels.items()
        if q in pair.run and any(g and doc not in pair.run[q] for doc, g in judged.items())
    ]
    unjudged = [
        q
        for q, scores in pair.run.items()
        if any(doc not in pair.qrels.get(q, {}) for doc in scores)
    ]
    assert min(len(graded), len(missed), len(unjudged)) >= 500
    result = compare(pair, tmp_path, DEPTH_METRICS)
    assert result.queries >= 1_500
    assert result.without_run >= 100
    assert set(result.max_abs_diff) == {
        metric if metric in UNCUT else f"{metric}@{k}" for k in CUTOFFS for metric in DEPTH_METRICS
    }
    # Same sums in the same order as trec_eval's C code: equal, not close.
    assert max(result.max_abs_diff.values()) == 0.0, result.max_abs_diff


def test_graded_qrels_score_with_the_grades_as_gains_as_trec_eval_does(tmp_path):
    """trec_eval's ndcg_cut uses the rel value as the gain, and so does ragproof on the
    imported grades (CONTRACT section 19); c, judged 0, is bpref's non-relevant."""
    import pytrec_eval

    (tmp_path / "qrels.txt").write_text("q1 0 a 2\nq1 0 b 1\nq1 0 c 0\n", encoding="utf-8")
    (tmp_path / "run.txt").write_text(
        "q1 Q0 b 1 2.0 t\nq1 Q0 c 2 1.0 t\nq1 Q0 a 3 0.5 t\n", encoding="utf-8"
    )
    imported = import_trec(tmp_path / "qrels.txt", tmp_path / "run.txt")
    assert imported.cases[0]["expected_source_ids"] == {"a": 2, "b": 1, "c": 0}
    write_files([(tmp_path / "c.jsonl", imported.cases), (tmp_path / "o.jsonl", imported.outputs)])
    evaluation = asyncio.run(
        evaluate(
            load_dataset(tmp_path / "c.jsonl"),
            RecordedAdapter(str(tmp_path / "o.jsonl")),
            RunSettings(k=5, metrics=DEPTH_METRICS),
        )
    )
    ours = {r.metric: r.value for r in evaluation.results}
    theirs = pytrec_eval.RelevanceEvaluator(
        {"q1": {"a": 2, "b": 1, "c": 0}},
        {"P_5", "recall_5", "recip_rank", "ndcg_cut_5", "map", "Rprec", "success_5", "bpref"},
    ).evaluate({"q1": {"b": 2.0, "c": 1.0, "a": 0.5}})["q1"]

    assert ours["retrieval.precision_at_k"] == theirs["P_5"] == 2 / 5
    assert ours["retrieval.recall_at_k"] == theirs["recall_5"] == 1.0
    assert ours["retrieval.mrr"] == theirs["recip_rank"] == 1.0
    # b (rel 1) ranked above a (rel 2): the graded nDCG notices.
    assert ours["retrieval.ndcg_at_k"] == theirs["ndcg_cut_5"]
    assert math.isclose(
        theirs["ndcg_cut_5"], (1 + 2 / math.log2(4)) / (2 + 1 / math.log2(3)), rel_tol=1e-12
    )
    assert ours["retrieval.map"] == theirs["map"] == (1 + 2 / 3) / 2
    assert ours["retrieval.r_precision"] == theirs["Rprec"] == 1 / 2
    assert ours["retrieval.hit_rate_at_k"] == theirs["success_5"] == 1.0
    # a is ranked below one of the N = 1 judged non-relevant: 1 - min(1, 2) / min(1, 2) = 0.
    assert ours["retrieval.bpref"] == theirs["bpref"] == (1 + 0) / 2
    assert ours["retrieval.judged_at_k"] == 3 / 5
