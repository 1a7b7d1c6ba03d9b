"""TREC import: trec_eval's ranking order, cases and recorded lines, and bad input."""

from __future__ import annotations

import pytest

from ragproof_core.data.dataset import DatasetError
from ragproof_core.data.importers.trec import RunEntry, import_trec, trec_eval_order
from tests.conftest import FIXTURES

TREC = FIXTURES / "importers" / "trec"


def test_ties_go_to_the_docid_that_is_larger_bytewise_like_strcmp():
    entries = [RunEntry(d, 1.0) for d in ("d1", "d10", "D2", "é", "d1x")] + [RunEntry("a", 2.0)]
    # "é" is 0xC3 0xA9 in UTF-8, above every ASCII byte; "d10" > "d1" (longer wins a prefix tie).
    assert [e.docid for e in trec_eval_order(entries)] == ["a", "é", "d1x", "d10", "d1", "D2"]


def test_cases_come_from_qrels_with_a_relevant_document_and_topics_give_questions():
    imported = import_trec(TREC / "qrels.txt", TREC / "run.txt", TREC / "topics.tsv")
    # The grades are kept (CONTRACT section 19): zeros and rel 2 as an object of grades,
    # all-1 judgments as the list they mean; 304 judged only non-relevant makes no case.
    assert [(c["id"], c["question"], c["expected_source_ids"]) for c in imported.cases] == [
        ("301", "international organized crime", {"d1": 1, "d2": 0, "d3": 1}),
        ("302", "poliomyelitis and post-polio", {"d4": 1, "d5": 2}),
        ("303", "303", ["d6"]),  # no topic: the qid is the question
    ]
    assert [[chunk["id"] for chunk in o["retrieve"]] for o in imported.outputs] == [
        ["d2", "d9", "d1", "d3"],
        ["d5", "d8", "d10", "d4"],
        [],  # no run lines: retrieves nothing, never "not exposed"
    ]
    assert all("answer" not in o for o in imported.outputs)


def test_without_topics_every_question_is_the_qid():
    imported = import_trec(TREC / "qrels.txt", TREC / "run.txt")
    assert [c["question"] for c in imported.cases] == ["301", "302", "303"]


@pytest.mark.parametrize(
    ("which", "text", "line", "reason"),
    [
        ("qrels", "q1 0 d1 1\nq1 0 d2\n", 2, "expected 4 fields 'qid iter docid rel', got 3"),
        ("qrels", "q1 0 d1 yes\n", 1, "relevance 'yes' is not an integer"),
        (
            "qrels",
            "q1 0 d1 1\n\nq1 0 d1 0\n",
            3,
            "docid 'd1' is listed twice for qid 'q1' (first on line 1)",
        ),
        ("run", "q1 Q0 d1 1 0.5\n", 1, "expected 6 fields 'qid Q0 docid rank score tag', got 5"),
        ("run", "q1 Q0 d1 1 high t\n", 1, "score 'high' is not a finite number"),
        ("run", "q1 Q0 d1 1 nan t\n", 1, "score 'nan' is not a finite number"),
        ("run", "q1 Q0 d1 1 1_0 t\n", 1, "score '1_0' is not a finite number"),
        ("topics", "q1 what is it\n", 1, "expected 'qid<TAB>text'"),
        ("topics", "q1\t  \n", 1, "topic 'q1' has no text"),
        ("topics", "q1\ta\nq1\tb\n", 2, "topic 'q1' is listed twice (first on line 1)"),
    ],
)
def test_bad_input_names_the_file_and_line(tmp_path, which, text, line, reason):
    paths = {name: tmp_path / f"{name}.txt" for name in ("qrels", "run", "topics")}
    paths["qrels"].write_text("q1 0 d1 1\n", encoding="utf-8")
    paths["run"].write_text("q1 Q0 d1 1 0.5 t\n", encoding="utf-8")
    paths["topics"].write_text("q1\tquestion\n", encoding="utf-8")
    paths[which].write_text(text, encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        import_trec(paths["qrels"], paths["run"], paths["topics"])
    assert str(info.value) == f"{paths[which]}:{line}: {reason}"


def test_a_missing_file_is_line_0(tmp_path):
    with pytest.raises(DatasetError) as info:
        import_trec(tmp_path / "nope.txt", TREC / "run.txt")
    assert str(info.value) == f"{tmp_path / 'nope.txt'}:0: no such file"
