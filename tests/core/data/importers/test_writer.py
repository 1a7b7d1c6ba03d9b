"""The importers' shared writer: recorded lines and all-or-nothing files."""

from __future__ import annotations

import pytest

from ragproof_core.data.dataset import DatasetError
from ragproof_core.data.importers.writer import recorded_row, write_files


def test_recorded_lines_from_contexts_and_response():
    assert recorded_row("c1", ["a", "b"], "yes") == {
        "case_id": "c1",
        "retrieve": [{"id": "c1:ctx-1", "text": "a"}, {"id": "c1:ctx-2", "text": "b"}],
        "answer": {"text": "yes"},
    }
    assert recorded_row("c1", ["a"], None) == {
        "case_id": "c1",
        "retrieve": [{"id": "c1:ctx-1", "text": "a"}],
    }
    assert recorded_row("c1", None, "yes") == {"case_id": "c1", "answer": {"text": "yes"}}
    assert recorded_row("c1", None, None) is None


def test_a_failure_while_writing_leaves_every_destination_as_it_was(tmp_path):
    first, second = tmp_path / "cases.jsonl", tmp_path / "chunks.jsonl"
    second.write_text("before\n", encoding="utf-8")

    def rows():
        yield {"id": "d1"}
        raise DatasetError("corpus.jsonl", 2, "bad")

    with pytest.raises(DatasetError):
        write_files([(first, [{"id": "c1", "question": "q"}]), (second, rows())])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chunks.jsonl"]
    assert second.read_text(encoding="utf-8") == "before\n"


def test_rows_are_written_one_a_line_in_readable_utf8(tmp_path):
    path = tmp_path / "out" / "cases.jsonl"
    assert write_files([(path, [{"id": "é", "question": "q"}, {"id": "b", "question": "r"}])]) == [
        2
    ]
    assert path.read_text(encoding="utf-8") == (
        '{"id": "é", "question": "q"}\n{"id": "b", "question": "r"}\n'
    )


def test_an_output_that_is_a_folder_is_refused_before_anything_is_written(tmp_path):
    first, folder = tmp_path / "cases.jsonl", tmp_path / "outputs"
    folder.mkdir()
    with pytest.raises(IsADirectoryError) as info:
        write_files([(first, [{"id": "c1", "question": "q"}]), (folder, [])])
    assert (info.value.filename, info.value.strerror) == (str(folder), "is a folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outputs"]


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ({"id": "c2", "metadata": {"x": float("nan")}}, "a NaN or an infinity"),
        ({"id": "c2", "metadata": {"x": float("-inf")}}, "a NaN or an infinity"),
        ({"id": "c2", "question": "\ud800"}, "half of a surrogate pair"),
    ],
)
def test_a_row_that_is_not_strict_json_is_never_written(tmp_path, row, reason):
    # The last guard behind the importers' own checks: no NaN, no unencodable text.
    out = tmp_path / "cases.jsonl"
    with pytest.raises(DatasetError) as raised:
        write_files([(out, [{"id": "c1"}, row])])
    assert str(raised.value) == f"{out}:2: row 2 cannot be written as JSON ({reason})"
    assert list(tmp_path.iterdir()) == []
