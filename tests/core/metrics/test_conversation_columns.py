"""A batch's conversations read from columns (``metrics.conversation_columns``) and
``conversation.knowledge_retention``'s rows without a judge from them, against the rows
``plan_knowledge_retention`` gives each conversation's objects."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from ragproof_core.data.dataset import load_dataset
from ragproof_core.metrics.conversation import (
    knowledge_retention_columns,
    plan_knowledge_retention,
)
from ragproof_core.metrics.conversation_columns import conversations_of
from ragproof_core.metrics.result_columns import ResultColumns
from ragproof_core.model import CaseOutput
from ragproof_core.store.schema import encode_dataset, encode_outputs

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "turn_replay"


def test_conversations_of_a_batch_and_their_retention_rows_without_a_judge():
    cases = load_dataset(FIXTURE / "cases.jsonl")
    # Turn failures as a run gives them: every turn after a failed one failed too.
    failing = {"c1#2": "upstream timed out", "c1#3": "an earlier turn failed",
               "c3#3": "no recorded output for case c3#3", "s2": "connection reset",
               "c6#1": "", "c6#2": "an earlier turn failed"}  # fmt: skip
    outputs = [CaseOutput(c.id, error=failing.get(c.id)) for c in cases]
    dataset = encode_dataset("r", cases)
    conversations = conversations_of(dataset, encode_outputs("r", outputs))
    assert conversations.conversation_id.to_pylist() == ["c1", "c2", "c3", "c4", "c5", "c6"]
    assert conversations.first_row.tolist() == [1, 4, 5, 9, 11, 13]
    assert conversations.turns.tolist() == [3, 1, 3, 2, 2, 2]
    assert conversations.last_row.tolist() == [3, 4, 7, 10, 12, 14]
    assert conversations.failed_at.tolist() == [1, -1, 2, -1, -1, 0]
    assert conversations.failed_turn.tolist() == [2, 0, 3, 0, 0, 1]
    assert conversations.failure.to_pylist() == [
        "upstream timed out", None, "no recorded output for case c3#3", None, None, ""
    ]  # fmt: skip
    assert conversations.after_failure(len(cases)).nonzero()[0].tolist() == [3, 14]
    expected = []
    for start, count in zip(conversations.first_row, conversations.turns, strict=True):
        turns = cases[start : start + count]
        expected.append(plan_knowledge_retention(turns, outputs[start : start + count], False))
    assert knowledge_retention_columns(conversations) == ResultColumns.from_results(expected)


def test_a_batch_of_single_cases_has_no_conversation():
    cases = load_dataset(FIXTURE / "cases.jsonl")[:1]
    dataset = encode_dataset("r", cases)
    outputs = encode_outputs("r", [CaseOutput(cases[0].id, error="down")])
    assert len(conversations_of(dataset, outputs)) == 0
    assert len(conversations_of(dataset.drop_columns(["conversation_id"]), outputs)) == 0
    assert len(knowledge_retention_columns(conversations_of(dataset, outputs))) == 0
    assert conversations_of(dataset, outputs).conversation_id.type == pa.string()
