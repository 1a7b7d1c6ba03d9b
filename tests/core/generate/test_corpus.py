import pytest

from ragproof_core.data.dataset import DatasetError
from ragproof_core.generate.corpus import CorpusChunk, load_corpus
from tests.conftest import FIXTURES

CORPUS = FIXTURES / "generation" / "corpus.jsonl"


def test_loads_chunks_with_their_documents():
    chunks = load_corpus(CORPUS)
    assert [(c.id, c.document_id) for c in chunks] == [
        ("kettle-1", "kettle"), ("kettle-2", "kettle"), ("kettle-3", "kettle"),
        ("leave-1", "leave"), ("leave-2", "leave"), ("tram-1", "tram"), ("tram-2", "tram"),
        ("bikes-1", "bikes"),
    ]  # fmt: skip
    assert chunks[0].as_input() == {
        "id": "kettle-1",
        "text": "The KT-2 kettle boils one litre of water in about two and a half minutes. "
        "Its base swivels through 360 degrees.",
    }


def test_a_chunk_without_document_id_is_its_own_document(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "a", "text": "Alpha."}\n{"id": "b", "text": "Beta.", "metadata": {}}\n')
    assert load_corpus(path) == [CorpusChunk("a", "Alpha.", "a"), CorpusChunk("b", "Beta.", "b")]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"id": "a", "text": "x"}\n{"id": "b"}\n', "c.jsonl:2: 'text' must be a non-empty string"),
        ('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n',
         "c.jsonl:2: duplicate chunk id 'a' (first used on line 1)"),
        ('{"text": "x"}\n', "c.jsonl:1: 'id' must be a non-empty string"),
        ('{"id": "a", "text": "x", "metadata": []}\n',
         "c.jsonl:1: 'metadata' must be a JSON object"),
        ("[1]\n", "c.jsonl:1: expected a JSON object with id, text and metadata"),
        ("{oops\n", "c.jsonl:1: not valid JSON (Expecting property name enclosed in double "
         "quotes at column 2)"),
        ("\n", "c.jsonl:1: corpus has no chunks"),
    ],
)  # fmt: skip
def test_bad_lines_name_file_and_line(tmp_path, content, message):
    path = tmp_path / "c.jsonl"
    path.write_text(content)
    with pytest.raises(DatasetError) as caught:
        load_corpus(path)
    assert str(caught.value) == f"{tmp_path}/{message}"
