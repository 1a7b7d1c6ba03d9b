"""DeepEval import: JSON arrays with element line numbers, key spellings, bad input."""

from __future__ import annotations

import json

import pytest

from ragproof_core.data.dataset import DatasetError
from ragproof_core.data.importers.deepeval import import_deepeval, json_array_items


def test_each_element_reports_the_line_it_starts_on(tmp_path):
    path = tmp_path / "g.json"
    path.write_text(
        '\n[\n  {"input": "a"},\n\n  {\n    "input": "b"\n  }, 3\n]\n', encoding="utf-8"
    )
    assert list(json_array_items(path)) == [(3, {"input": "a"}), (5, {"input": "b"}), (7, 3)]


def test_snake_case_wins_over_camel_case_and_unknown_keys_are_ignored(tmp_path):
    path = tmp_path / "g.json"
    path.write_text(
        '[{"input": "q", "actual_output": "snake", "actualOutput": "camel", "tools_called": []}]',
        encoding="utf-8",
    )
    imported = import_deepeval(path)
    assert imported.outputs == [{"case_id": "row-1", "answer": {"text": "snake"}}]


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("", 1, "empty file: expected a JSON array"),
        ('\n{"goldens": []}', 2, "expected a JSON array of goldens or test cases"),
        ("[]", 1, "no goldens or test cases to import"),
        (
            '[\n{"input": "a"},\n{"input": "b",}\n]',
            3,
            "not valid JSON (Expecting property name enclosed in double quotes at column 15)",
        ),
        ('[{"input": "a"} {"input": "b"}]', 1, "expected ',' or ']' after an element"),
        ('[{"input": "a"}]\n[]', 2, "extra data after the array"),
        ('[\n  {"input": "a"},\n  "b"\n]', 3, "expected a JSON object, got string"),
        ('[\n  {"actual_output": "a"}\n]', 2, "missing required field 'input'"),
        (
            '[{"input": "a", "retrieval_context": "one string"}]',
            1,
            "'retrieval_context' must be a list of strings, got string",
        ),
        (
            '[{"input": "a", "additional_metadata": [1]}]',
            1,
            "'additional_metadata' must be an object, got array",
        ),
        ('[{"input": "a", "actual_output": 1}]', 1, "'actual_output' must be a string, got number"),
        ('[\n{"turns": "hi"}]', 2, "'turns' must be a list of turns, got string"),
        ('[{"turns": []}]', 1, "'turns' has no user message"),
        ('[{"turns": [3]}]', 1, "'turns' item 0: expected a JSON object, got number"),
        (
            '[{"input": "a"},\n {"turns": [{"role": "system", "content": "x"}]}]',
            2,
            "'turns' item 0: 'role' must be 'user' or 'assistant', got \"system\"",
        ),
        (
            '[{"turns": [{"role": "user", "content": null}]}]',
            1,
            "'turns' item 0: 'content' must be a string, got null",
        ),
        (
            '[{"turns": [{"role": "assistant", "content": "Hello!"}]}]',
            1,
            "'turns' item 0: an assistant message before the first user message",
        ),
        (
            '[{"turns": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}]',
            1,
            "'turns' item 1: two user messages in a row (turn 1 has no reply)",
        ),
        (
            '[{"turns": [{"role": "user", "content": "a"}, '
            '{"role": "assistant", "content": "b", "retrieval_context": [1]}]}]',
            1,
            "'turns' item 1: 'retrieval_context' item 0 must be a string, got number",
        ),
        (
            '[{"turns": [{"role": "user", "content": "a"}], "scenario": 5}]',
            1,
            "'scenario' must be a string, got number",
        ),
        (
            '[{"id": "c", "turns": [{"role": "user", "content": "a"}]},\n'
            '{"id": "c", "input": "b"}]',
            2,
            "duplicate id 'c' (first used on line 1)",
        ),
    ],
)
def test_bad_input_names_the_file_and_line(tmp_path, text, line, reason):
    path = tmp_path / "g.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        import_deepeval(path)
    assert str(info.value) == f"{path}:{line}: {reason}"


def test_a_conversational_test_case_is_a_conversation_with_per_turn_recordings(tmp_path):
    path = tmp_path / "c.json"
    turn = {"role": "assistant", "content": "Two.", "retrieval_context": ["one", "two"]}
    path.write_text(
        json.dumps(
            [
                {
                    "id": "c1",
                    "expected_outcome": "counts",
                    "context": ["numbers"],
                    "turns": [
                        {"role": "user", "content": "How many?"},
                        {
                            "role": "assistant",
                            "content": "Let me look.",
                            "retrieval_context": ["zero"],
                        },
                        turn,
                        {"role": "user", "content": "Sure?"},
                        {"role": "assistant", "content": "Yes."},
                    ],
                }
            ]
        ),
        encoding="utf-8",
    )
    imported = import_deepeval(path)
    assert imported.cases == [
        {
            "id": "c1",
            "kind": "conversation",
            "turns": [{"question": "How many?"}, {"question": "Sure?"}],
            "metadata": {"expected_outcome": "counts", "context": ["numbers"]},
        }
    ]
    # A turn's answer is its last reply; its chunks are every reply's contexts, in order.
    assert imported.outputs == [
        {
            "case_id": "c1",
            "turns": [
                {
                    "retrieve": [
                        {"id": "c1#1:ctx-1", "text": "zero"},
                        {"id": "c1#1:ctx-2", "text": "one"},
                        {"id": "c1#1:ctx-3", "text": "two"},
                    ],
                    "answer": {"text": "Two."},
                },
                {"answer": {"text": "Yes."}},
            ],
        }
    ]


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        (
            '[{"input": "a"},\n {"input": "b", "additional_metadata": {"x": NaN}}]',
            2,
            "NaN is not a JSON number (JSON numbers are finite)",
        ),
        ('[{"input": "a", "actual_output": Infinity}]', 1, "Infinity is not a JSON number"),
        ('[{"input": "a"},\n{"input": "b\\ud800"}]', 2, "element.input: a lone surrogate"),
        (
            '[{"input": "a", "additional_metadata": {"k": "\\udfff"}}]',
            1,
            "element.additional_metadata.k: a lone surrogate is not valid text",
        ),
    ],
    ids=["nan-in-metadata", "infinity", "lone-surrogate", "surrogate-in-metadata"],
)
def test_hostile_values_are_bad_input_naming_the_line(tmp_path, text, line, reason):
    # Issue 39, item 3: each was exit 3 (a surrogate) or written out as bare NaN.
    path = tmp_path / "g.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        import_deepeval(path)
    assert str(info.value).startswith(f"{path}:{line}: {reason}")


def test_a_surrogate_pair_is_text(tmp_path):
    path = tmp_path / "g.json"
    path.write_text('[{"input": "smile \\ud83d\\ude00"}]', encoding="utf-8")
    assert import_deepeval(path).cases[0]["question"] == "smile \U0001f600"
