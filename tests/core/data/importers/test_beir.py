"""BEIR import: cases per split, the corpus as chunks, and bad input."""

from __future__ import annotations

import shutil

import pytest

from ragproof_core.data.dataset import DatasetError
from ragproof_core.data.importers.beir import corpus_chunks, import_beir
from tests.conftest import FIXTURES

BEIR = FIXTURES / "importers" / "beir"


def test_only_queries_with_a_positive_qrel_in_the_split_become_cases():
    # q2's scores are kept as grades (CONTRACT section 19); q4, judged only 0, is no case.
    assert [(c["id"], c["expected_source_ids"]) for c in import_beir(BEIR).cases] == [
        ("q1", ["d1"]),
        ("q2", {"d2": 1, "d1": 2}),
    ]
    assert import_beir(BEIR, split="dev").cases == [
        {
            "id": "q3",
            "question": "What is the capital of Germany?",
            "expected_source_ids": ["d3"],
        }
    ]


def test_corpus_text_is_title_blank_line_text_and_an_empty_title_is_left_out():
    chunks = list(corpus_chunks(BEIR))
    assert chunks[0] == {
        "id": "d1",
        "text": "Paris\n\nParis is the capital and largest city of France.",
        "metadata": {"title": "Paris"},
    }
    assert chunks[1] == {
        "id": "d2",
        "text": "Lyon is the third-largest city in France.",
        "metadata": {},
    }


@pytest.fixture
def beir(tmp_path):
    folder = tmp_path / "beir"
    shutil.copytree(BEIR, folder)
    return folder


@pytest.mark.parametrize(
    ("file", "text", "line", "reason"),
    [
        ("qrels/test.tsv", "", 1, "empty qrels file: expected a header line"),
        (
            "qrels/test.tsv",
            "q1\td1\t1\n",
            1,
            "expected the header line 'query-id<TAB>corpus-id<TAB>score'",
        ),
        (
            "qrels/test.tsv",
            "query-id\tcorpus-id\tscore\nq1 d1 1\n",
            2,
            "expected 3 tab-separated fields, got 1",
        ),
        (
            "qrels/test.tsv",
            "query-id\tcorpus-id\tscore\nq1\td1\t0.5\n",
            2,
            "score '0.5' is not an integer",
        ),
        (
            "qrels/test.tsv",
            "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t2\n",
            3,
            "corpus-id 'd1' is listed twice for query-id 'q1' (first on line 2)",
        ),
        (
            "qrels/test.tsv",
            "query-id\tcorpus-id\tscore\nq1\td1\t1\nq9\td1\t1\n",
            3,
            "query-id 'q9' is not in queries.jsonl",
        ),
        (
            "queries.jsonl",
            '{"_id": "q1", "text": "a"}\n{"text": "b"}\n',
            2,
            "missing required field '_id'",
        ),
        (
            "queries.jsonl",
            '{"_id": 1, "text": "a"}\n',
            1,
            "'_id' must be a non-empty string, got number",
        ),
        (
            "queries.jsonl",
            '{"_id": "q1", "text": "a"}\n{"_id": "q1", "text": "b"}\n',
            2,
            "duplicate _id 'q1' (first used on line 1)",
        ),
        (
            "queries.jsonl",
            '{"_id": "q1", "text": " "}\n{"_id": "q2", "text": "b"}\n',
            1,
            "query 'q1' has empty 'text'",
        ),
    ],
)
def test_bad_input_names_the_file_and_line(beir, file, text, line, reason):
    (beir / file).write_text(text, encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        import_beir(beir)
    assert str(info.value) == f"{beir / file}:{line}: {reason}"


def test_a_missing_split_or_folder_is_line_0(tmp_path):
    with pytest.raises(DatasetError) as info:
        import_beir(BEIR, split="train")
    assert str(info.value) == (
        f"{BEIR / 'qrels' / 'train.tsv'}:0: no such file (splits here: dev, test)"
    )
    with pytest.raises(DatasetError) as info:
        import_beir(tmp_path / "nope")
    assert str(info.value) == f"{tmp_path / 'nope'}:0: no such folder"


def test_a_bad_corpus_line_is_found_while_streaming(beir):
    with (beir / "corpus.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"_id": "d1", "title": "", "text": "again"}\n')
    with pytest.raises(DatasetError) as info:
        list(corpus_chunks(beir))
    assert (
        str(info.value) == f"{beir / 'corpus.jsonl'}:5: duplicate _id 'd1' (first used on line 1)"
    )
