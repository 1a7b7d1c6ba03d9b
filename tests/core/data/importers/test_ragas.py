"""RAGAS import: JSON Lines and CSV, list columns, ids, and bad input."""

from __future__ import annotations

import json

import pytest

from ragproof_core.data.dataset import DatasetError, load_dataset
from ragproof_core.data.importers.ragas import import_ragas, parse_list
from ragproof_core.data.importers.writer import Imported, write_files


def write_cases(folder, imported: Imported):
    """The imported cases as a dataset file, to check ragproof reads them back."""
    path = folder / "cases.jsonl"
    write_files([(path, imported.cases)])
    return path


ROW = '{"user_input": "Why?", "response": "Because."}'


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ('["a", "b"]', ["a", "b"]),
        ("['a', \"it's\"]", ["a", "it's"]),  # what pandas writes for a Python list
        ("('a',)", ["a"]),
        ("[]", []),
        (["already", "a list"], ["already", "a list"]),
    ],
)
def test_a_list_cell_is_a_json_array_or_a_python_literal(cell, expected):
    assert parse_list(cell, "retrieved_contexts") == expected


@pytest.mark.parametrize("cell", ["__import__('os').system('true')", "[a, b]", "['unclosed"])
def test_anything_else_in_a_list_cell_is_refused_and_never_evaluated(cell):
    with pytest.raises(ValueError, match="'retrieved_contexts' must hold a JSON array"):
        parse_list(cell, "retrieved_contexts")


def test_ids_come_from_an_id_column_else_row_n(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(f'{{"id": "faq-7", "user_input": "Why?"}}\n\n{ROW}\n', encoding="utf-8")
    assert [c["id"] for c in import_ragas(path).cases] == ["faq-7", "row-2"]


def test_csv_records_spanning_lines_keep_their_first_line_for_messages(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text('user_input,response\n"Why\nnot?",ok\n\n"",empty question\n', encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        import_ragas(path)
    assert str(info.value) == f"{path}:5: missing required field 'user_input'"


@pytest.mark.parametrize(
    ("name", "text", "line", "reason"),
    [
        ("d.jsonl", '{"response": "x"}\n', 1, "missing required field 'user_input'"),
        (
            "d.jsonl",
            '{"question": "q", "answer": "a"}\n',
            1,
            "missing required field 'user_input' (RAGAS 0.1 names such as 'question' are not read)",
        ),
        (
            "d.jsonl",
            f'{ROW}\n{{"user_input": [{{"content": "hi"}}]}}\n',
            2,
            "'user_input' item 0: 'type' must be 'human', 'ai' or 'tool', got null",
        ),
        (
            "d.jsonl",
            '{"user_input": 7}\n',
            1,
            "'user_input' must be a string or a list of messages, got number",
        ),
        ("d.jsonl", '{"user_input": []}\n', 1, "'user_input' has no user message"),
        (
            "d.jsonl",
            '{"user_input": [{"content": "hi", "type": "ai"}, '
            '{"content": "q", "type": "human"}]}\n',
            1,
            "'user_input' item 0: an assistant message before the first user message",
        ),
        (
            "d.jsonl",
            '{"user_input": [{"content": "a", "type": "human"}, '
            '{"content": "b", "type": "human"}]}\n',
            1,
            "'user_input' item 1: two user messages in a row (turn 1 has no reply)",
        ),
        (
            "d.jsonl",
            '{"user_input": [{"content": " ", "type": "human"}]}\n',
            1,
            "'user_input' item 0: a human message's 'content' must not be empty",
        ),
        (
            "d.jsonl",
            '{"user_input": [{"content": ["x"], "type": "human"}]}\n',
            1,
            "'user_input' item 0: 'content' must be a string, got array",
        ),
        (
            "d.jsonl",
            '{"user_input": [{"content": "q", "type": "human"}], "reference_topics": "refunds"}\n',
            1,
            "'reference_topics' must be a list of strings, got string",
        ),
        (
            "d.jsonl",
            '{"user_input": ["q"]}\n',
            1,
            "'user_input' item 0: expected a JSON object, got string",
        ),
        ("d.jsonl", '{"user_input": "  "}\n', 1, "'user_input' must not be empty"),
        (
            "d.jsonl",
            '{"user_input": "q", "retrieved_contexts": ["a", 3]}\n',
            1,
            "'retrieved_contexts' item 1 must be a string, got number",
        ),
        (
            "d.jsonl",
            '{"user_input": "q", "reference": 42}\n',
            1,
            "'reference' must be a string, got number",
        ),
        (
            "d.jsonl",
            '{"id": "a", "user_input": "q"}\n{"id": "a", "user_input": "r"}\n',
            2,
            "duplicate id 'a' (first used on line 1)",
        ),
        ("d.jsonl", "\n", 1, "no rows to import"),
        ("d.csv", "", 1, "empty CSV file: expected a header row"),
        (
            "d.csv",
            "question,answer\nq,a\n",
            1,
            "missing column 'user_input' (columns: question, answer)",
        ),
        (
            "d.csv",
            "user_input,response\nq,a,extra\n",
            2,
            "expected 2 columns as in the header, got 3",
        ),
        (
            "d.csv",
            'user_input,retrieved_contexts\nq,"[oops]"\n',
            2,
            "'retrieved_contexts' must hold a JSON array or a Python list literal, got '[oops]'",
        ),
    ],
)
def test_bad_input_names_the_file_and_line(tmp_path, name, text, line, reason):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        import_ragas(path)
    assert str(info.value) == f"{path}:{line}: {reason}"


def test_a_multi_turn_sample_is_a_conversation_and_tool_messages_are_no_turn(tmp_path):
    path = tmp_path / "d.jsonl"
    messages = [
        {"content": "Where is order 7?", "type": "human"},
        {"content": "", "type": "ai", "tool_calls": [{"name": "track", "args": {"id": 7}}]},
        {"content": "shipped", "type": "tool"},
        {"content": "It has shipped.", "type": "ai"},
        {"content": "When does it arrive?", "type": "human"},
    ]
    path.write_text(json.dumps({"id": "c7", "user_input": messages}) + "\n", encoding="utf-8")
    imported = import_ragas(path)
    # The last question has no reply: no recorded line for it (a failure when run).
    assert imported.cases == [
        {
            "id": "c7",
            "kind": "conversation",
            "turns": [{"question": "Where is order 7?"}, {"question": "When does it arrive?"}],
        }
    ]
    assert imported.outputs == [
        {"case_id": "c7", "turns": [{"answer": {"text": "It has shipped."}}]}
    ]
    assert [case.id for case in load_dataset(write_cases(tmp_path, imported))] == ["c7#1", "c7#2"]


def test_a_conversation_of_questions_only_has_no_recording(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"user_input": [{"content": "q", "type": "human"}]}\n', encoding="utf-8")
    imported = import_ragas(path)
    assert imported.cases == [{"id": "row-1", "kind": "conversation", "turns": [{"question": "q"}]}]
    assert imported.outputs == []
