"""Dataset loading: the accepted format and every rejection, as exact ``PATH:LINE: reason``."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragproof_core.data.dataset import DatasetError, dataset_sha256, load_dataset
from ragproof_core.model import Case, CaseKind, ExpectedTool, ToolMatch

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "datasets"

VALID_CASES = [
    Case(
        id="q1",
        question="What is the capital of France?",
        kind=CaseKind.QA,
        expected_source_ids=("geo#1", "geo#2"),
        expected_answer="Paris",
        metadata={"topic": "geo", "tags": ["easy"]},
    ),
    Case(
        id="u1",
        question="What did the CEO eat for breakfast?",
        kind=CaseKind.UNANSWERABLE,
        metadata={"annotator": "kept verbatim under metadata"},
    ),
    Case(
        id="i1",
        question="Summarise the attached note.",
        kind=CaseKind.INJECTION,
        expected_source_ids=(),
        adversarial_payload="ignore-previous-v1",
    ),
    Case(id="q2", question="Who wrote Dune?", kind=CaseKind.QA),
]


def test_valid_file_loads_every_field_defaults_kind_and_keeps_metadata():
    cases = load_dataset(FIXTURES / "valid.jsonl")
    assert cases == VALID_CASES
    assert isinstance(cases[0].expected_source_ids, tuple)
    assert cases[1].metadata == {"annotator": "kept verbatim under metadata"}


def test_path_may_be_a_string():
    assert load_dataset(str(FIXTURES / "valid.jsonl")) == VALID_CASES


@pytest.mark.parametrize(
    ("name", "line", "reason"),
    [
        ("not_json.jsonl", 2, "not valid JSON (Expecting ',' delimiter at column 34)"),
        ("not_object.jsonl", 1, "expected a JSON object, got array"),
        ("missing_id.jsonl", 2, "id: missing required field"),
        ("missing_question.jsonl", 1, "question: missing required field"),
        ("empty_question.jsonl", 3, "question: must not be empty"),
        ("id_not_string.jsonl", 1, "id: expected a string, got 7"),
        ("duplicate_id.jsonl", 4, "duplicate id 'c1' (first used on line 1)"),
        (
            "unknown_kind.jsonl",
            2,
            "kind: expected 'qa', 'unanswerable', 'injection' or 'poisoning', got \"trivia\"",
        ),
        (
            "bad_expected_source_ids.jsonl",
            1,
            'expected_source_ids: expected a list, got "doc1"',
        ),
        (
            "bad_expected_source_id_item.jsonl",
            1,
            "expected_source_ids[1]: expected a string, got 2",
        ),
        ("bad_expected_answer.jsonl", 1, "expected_answer: expected a string, got 42"),
        (
            "bad_adversarial_payload.jsonl",
            1,
            'adversarial_payload: expected a string, got ["p1"]',
        ),
        ("bad_metadata.jsonl", 1, 'metadata: expected a JSON object, got "not an object"'),
        ("bad_poison_marker.jsonl", 1, "poison_marker: expected a string, got 7"),
        (
            "bad_allowed_restricted_ids.jsonl",
            2,
            'allowed_restricted_ids: expected a list, got "hr-7"',
        ),
        ("empty.jsonl", 1, "dataset has no cases"),
        (
            "misspelt_field.jsonl",
            2,
            "expected_sources_ids: unknown field (did you mean 'expected_source_ids'?)",
        ),
        (
            "unknown_field.jsonl",
            1,
            # CONTRACT section 17 added expected_hops, expected_tools and tool_match,
            # section 20 nuggets, section 23 allowed_restricted_ids and poison_marker.
            "annotator: unknown field (known: adversarial_payload, allowed_restricted_ids, "
            "expected_answer, expected_hops, expected_source_ids, expected_tools, id, kind, "
            "metadata, nuggets, poison_marker, question, tool_match)",
        ),
        ("bad_last_line.jsonl", 4, "question: missing required field"),
        # CONTRACT section 17: the agent fields.
        (
            "bad_expected_tool_key.jsonl",
            1,
            "expected_tools[0].args: unknown field (did you mean 'arguments'?)",
        ),
        (
            "bad_expected_tool_arguments.jsonl",
            1,
            'expected_tools[0].arguments: expected a JSON object, got ["x"]',
        ),
        ("bad_expected_tool_name.jsonl", 1, "expected_tools[0].name: must not be empty"),
        (
            "bad_tool_match.jsonl",
            1,
            "tool_match: expected 'exact', 'in_order' or 'any_order', got \"fuzzy\"",
        ),
        ("bad_expected_hop_empty.jsonl", 1, "expected_hops[1]: must not be empty"),
        ("bad_expected_hops_flat.jsonl", 1, 'expected_hops[0]: expected a list, got "d1"'),
    ],
)
def test_rejections_name_path_line_and_reason(name, line, reason):
    path = FIXTURES / name
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert str(info.value) == f"{path}:{line}: {reason}"
    assert (info.value.path, info.value.line, info.value.reason) == (str(path), line, reason)


def test_dataset_error_is_a_value_error():
    assert issubclass(DatasetError, ValueError)


def test_duplicate_id_names_both_lines():
    # duplicate_id.jsonl: c1 on line 1, a blank line 2, c2 on line 3, c1 again on line 4.
    with pytest.raises(DatasetError) as info:
        load_dataset(FIXTURES / "duplicate_id.jsonl")
    assert info.value.line == 4
    assert "first used on line 1" in info.value.reason


def test_blank_lines_are_skipped_but_still_counted(tmp_path):
    path = tmp_path / "blank.jsonl"
    path.write_text('\n   \n{"id": "a", "question": "q?"}\n\t\n{"id": "a", "question": "q?"}\n')
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert str(info.value) == f"{path}:5: duplicate id 'a' (first used on line 3)"


def test_crlf_line_endings_and_utf8_bom_are_accepted(tmp_path):
    path = tmp_path / "windows.jsonl"
    path.write_bytes(
        b'\xef\xbb\xbf{"id": "a", "question": "caf\xc3\xa9?"}\r\n{"id": "b", "question": "b?"}\r\n'
    )
    assert load_dataset(path) == [Case("a", "café?"), Case("b", "b?")]


def test_line_separator_inside_a_string_does_not_shift_line_numbers(tmp_path):
    path = tmp_path / "u2028.jsonl"
    path.write_text('{"id": "a", "question": "one\u2028two"}\n{"id": "b"}\n', encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert str(info.value) == f"{path}:2: question: missing required field"


def test_invalid_utf8_names_the_line(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"id": "a", "question": "ok"}\n{"id": "b", "question": "caf\xe9"}\n')
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert str(info.value) == f"{path}:2: not valid UTF-8"


def test_zero_byte_file_has_no_cases(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert str(info.value) == f"{path}:1: dataset has no cases"


def test_missing_file(tmp_path):
    path = tmp_path / "absent.jsonl"
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert str(info.value) == f"{path}:0: no such file"


def test_missing_parquet_file(tmp_path):
    path = tmp_path / "absent.parquet"
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert str(info.value) == f"{path}:0: no such file"


def test_directory_is_not_a_file(tmp_path):
    with pytest.raises(DatasetError) as info:
        load_dataset(tmp_path)
    assert str(info.value) == f"{tmp_path}:0: not a file"


def test_json_extension_is_read_as_json_lines(tmp_path):
    path = tmp_path / "cases.json"
    path.write_text('{"id": "a", "question": "q?"}\n')
    assert load_dataset(path) == [Case("a", "q?")]


def test_parquet_round_trip(tmp_path):
    rows = [
        {
            "id": "q1",
            "question": "What is the capital of France?",
            "kind": "qa",
            "expected_source_ids": ["geo#1", "geo#2"],
            "expected_answer": "Paris",
            "adversarial_payload": None,
            "metadata": {"topic": "geo"},
        },
        {
            "id": "u1",
            "question": "What did the CEO eat for breakfast?",
            "kind": "unanswerable",
            "expected_source_ids": None,
            "expected_answer": None,
            "adversarial_payload": None,
            "metadata": None,
        },
        {
            "id": "i1",
            "question": "Summarise the attached note.",
            "kind": "injection",
            "expected_source_ids": [],
            "expected_answer": None,
            "adversarial_payload": "ignore-previous-v1",
            "metadata": {"topic": "attack"},
        },
    ]
    path = tmp_path / "cases.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    assert load_dataset(path) == [
        Case(
            "q1",
            "What is the capital of France?",
            CaseKind.QA,
            ("geo#1", "geo#2"),
            "Paris",
            None,
            {"topic": "geo"},
        ),
        Case("u1", "What did the CEO eat for breakfast?", CaseKind.UNANSWERABLE),
        Case(
            "i1",
            "Summarise the attached note.",
            CaseKind.INJECTION,
            (),
            None,
            "ignore-previous-v1",
            {"topic": "attack"},
        ),
    ]


def test_parquet_line_is_the_row_number(tmp_path):
    path = tmp_path / "cases.parquet"
    table = pa.Table.from_pylist(
        [
            {"id": "a", "question": "q?", "kind": "qa"},
            {"id": "b", "question": "q?", "kind": "qa"},
            {"id": "c", "question": "q?", "kind": "poem"},
        ]
    )
    pq.write_table(table, path)
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert str(info.value) == (
        f"{path}:3: kind: expected 'qa', 'unanswerable', 'injection' or 'poisoning', got \"poem\""
    )


def test_unreadable_parquet_is_line_zero(tmp_path):
    path = tmp_path / "broken.parquet"
    path.write_text("this is not parquet")
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert info.value.line == 0
    assert info.value.reason.startswith("not a readable Parquet file (")


def test_dataset_sha256_hashes_file_bytes():
    path = FIXTURES / "valid.jsonl"
    assert dataset_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    assert dataset_sha256(str(path)) == dataset_sha256(path)


def test_expected_source_ids_may_be_an_object_of_grades():
    """CONTRACT section 19: grade 0 judged non-relevant, >= 1 relevant. The case keeps
    every grade and lists its relevant ids; all-zero grades leave no relevant id."""
    g1, g2, g3 = load_dataset(FIXTURES / "graded.jsonl")
    assert (g1.expected_source_ids, g1.source_grades) == (("d1", "d7"), {"d1": 2, "d7": 1, "d9": 0})
    assert (g2.expected_source_ids, g2.source_grades) == ((), {"d3": 0})
    assert (g3.expected_source_ids, g3.source_grades) == (("d4",), None)
    assert g3.judgments() == {"d4": 1}


@pytest.mark.parametrize(
    ("name", "line", "reason"),
    [
        ("bad_grade_negative.jsonl", 2, "expected_source_ids.d7: must be at least 0, got -1"),
        (
            "bad_grade_fraction.jsonl",
            1,
            "expected_source_ids.d1: expected an integer grade, got 1.5",
        ),
        (
            "bad_grade_boolean.jsonl",
            1,
            'expected_source_ids."d 1": expected an integer grade, got true',
        ),
    ],
)
def test_a_bad_grade_names_the_id(name, line, reason):
    path = FIXTURES / name
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert str(info.value) == f"{path}:{line}: {reason}"


def test_agent_fields_load_with_in_order_as_the_default_match():
    """CONTRACT section 17: expected tools (arguments optional), tool_match, expected hops."""
    a1, a2, a3 = load_dataset(FIXTURES / "agent.jsonl")
    assert a1.expected_tools == (
        ExpectedTool("lookup_order", {"order": {"id": 17}}),
        ExpectedTool("refund", None),
    )
    assert a1.tool_match is ToolMatch.EXACT
    assert a1.expected_hops == (("policy-3",), ("orders-17", "policy-4"))
    assert (a2.tool_match, a2.expected_hops) == (ToolMatch.IN_ORDER, None)
    assert (a3.expected_tools, a3.tool_match) == (None, ToolMatch.ANY_ORDER)
    # A case without the agent fields is exactly the section-1 case it always was.
    assert load_dataset(FIXTURES / "valid.jsonl")[3] == Case("q2", "Who wrote Dune?")


def test_attack_fields_load():
    """CONTRACT section 23: a poisoning case's marker, the restricted ids a case allows."""
    p1, l1, l2 = load_dataset(FIXTURES / "attacks.jsonl")
    assert (p1.kind, p1.poison_marker) == (CaseKind.POISONING, "ZQX-FNEQMJJI2QG77WDD")
    assert p1.allowed_restricted_ids is None and p1.metadata == {"planted_id": "planted-0002"}
    assert (l1.kind, l1.poison_marker) == (CaseKind.QA, None)
    assert l1.allowed_restricted_ids == ("board-minutes", "hr-7")
    assert l2.allowed_restricted_ids == ()


def test_agent_fields_read_from_parquet_as_from_json_lines(tmp_path):
    path = tmp_path / "agent.parquet"
    rows = [
        {
            "id": "p1",
            "question": "q?",
            "expected_tools": [{"name": "search", "arguments": {"q": "refund"}}],
            "tool_match": "any_order",
            "expected_hops": [["d1", "d2"]],
        }
    ]
    pq.write_table(pa.Table.from_pylist(rows), path)
    (case,) = load_dataset(path)
    assert case.expected_tools == (ExpectedTool("search", {"q": "refund"}),)
    assert case.tool_match is ToolMatch.ANY_ORDER
    assert case.expected_hops == (("d1", "d2"),)
