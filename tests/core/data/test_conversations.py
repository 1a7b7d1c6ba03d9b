"""Conversation cases in datasets (CONTRACT section 16): turn ids, validation naming the
file, line and turn, and the Parquet form."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragproof_core.data.dataset import DatasetError, load_dataset
from ragproof_core.model import CaseKind, TurnOf, conversations_of, units

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "conversations"


def test_a_conversation_becomes_its_turns_with_ids_c_hash_t_beside_single_cases() -> None:
    cases = load_dataset(FIXTURES / "mixed.jsonl")
    assert [c.id for c in cases] == ["s1", "c1#1", "c1#2", "c1#3", "c2#1"]
    assert [c.turn for c in cases] == [
        None,
        TurnOf("c1", 1, 3),
        TurnOf("c1", 2, 3),
        TurnOf("c1", 3, 3),
        TurnOf("c2", 1, 1),
    ]
    first, second, third = cases[1:4]
    # Each turn keeps its own fields: its gold ids, its kind, its payload.
    assert (first.question, first.expected_source_ids, first.expected_answer) == (
        "What is the refund window?",
        ("policy-3",),
        "30 days",
    )
    assert (second.question, second.expected_source_ids, second.kind) == (
        "And for opened items?",
        ("policy-4",),
        CaseKind.QA,
    )
    assert (third.kind, third.adversarial_payload) == (CaseKind.INJECTION, "ZQX-1")
    # The conversation's metadata goes with every turn.
    assert [c.metadata for c in cases[1:4]] == [{"channel": "chat"}] * 3
    assert list(units(cases)) == [(0, 1), (1, 4), (4, 5)]
    conversations = conversations_of(cases)
    assert [(c.id, [t.id for t in c.turns], c.metadata) for c in conversations] == [
        ("c1", ["c1#1", "c1#2", "c1#3"], {"channel": "chat"}),
        ("c2", ["c2#1"], {}),
    ]


@pytest.mark.parametrize(
    ("name", "line", "reason"),
    [
        ("bad_turn_question.jsonl", 2, "turn 2: question: must not be empty"),
        (
            "bad_turn_field.jsonl",
            1,
            "turn 1: expected_sources: unknown field (did you mean 'expected_source_ids'?)",
        ),
        (
            "bad_turn_kind.jsonl",
            1,
            "turn 2: kind: a turn is a qa, unanswerable, injection or poisoning case, "
            "not a conversation",
        ),
        (
            "turn_with_id.jsonl",
            1,
            "turn 1: id: a turn has no id of its own "
            "(it is the conversation's id, '#' and its number)",
        ),
        ("no_turns.jsonl", 1, "turns: a conversation needs at least one turn"),
        (
            "top_level_question.jsonl",
            1,
            "question: a conversation has no top-level question (its turns hold them)",
        ),
        ("duplicate_turn_id.jsonl", 2, "duplicate id 'c1#2' (first used on line 1)"),
    ],
)
def test_a_bad_conversation_names_the_file_line_and_turn(name, line, reason) -> None:
    path = FIXTURES / name
    with pytest.raises(DatasetError) as caught:
        load_dataset(path)
    assert str(caught.value) == f"{path}:{line}: {reason}"


def test_a_conversation_in_parquet_reads_like_its_json_lines(tmp_path: Path) -> None:
    turn = pa.struct(
        [
            ("question", pa.string()),
            ("expected_source_ids", pa.list_(pa.string())),
            ("kind", pa.string()),
        ]
    )
    table = pa.table(
        {
            "id": ["s1", "c1"],
            "question": ["Single?", None],
            "kind": [None, "conversation"],
            "turns": pa.array(
                [
                    None,
                    [
                        {"question": "First?", "expected_source_ids": ["d1"], "kind": None},
                        {"question": "Then?", "expected_source_ids": ["d2"], "kind": "qa"},
                    ],
                ],
                pa.list_(turn),
            ),
        }
    )
    path = tmp_path / "cases.parquet"
    pq.write_table(table, path)
    cases = load_dataset(path)
    assert [(c.id, c.question, c.expected_source_ids, c.turn) for c in cases] == [
        ("s1", "Single?", None, None),
        ("c1#1", "First?", ("d1",), TurnOf("c1", 1, 2)),
        ("c1#2", "Then?", ("d2",), TurnOf("c1", 2, 2)),
    ]
