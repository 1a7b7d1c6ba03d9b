"""The run's copy of its dataset (store/dataset_table.py): whichever path (fast or exact)
reads the file, the stored rows are the same, and a file either path refuses fails with
the same ``PATH:LINE: reason``."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragproof_core.data.dataset import DatasetError, load_dataset
from ragproof_core.store import RunStore, json_blocks
from ragproof_core.store.dataset_table import staged_dataset, staged_dataset_file
from ragproof_core.store.schema import decode_dataset, encode_dataset
from tests.conftest import FIXTURES


def _stored(path, *, fast: bool) -> tuple[pa.Table | str, bool | None]:
    try:
        staged = staged_dataset(path, fast=fast)
    except DatasetError as exc:
        return str(exc), None
    return staged.stored("r1"), staged.fast


def _both(path) -> tuple[pa.Table | str, bool | None]:
    """The fast path's result, after checking the exact path gives the same."""
    fast, read_fast = _stored(path, fast=True)
    exact, read_exact = _stored(path, fast=False)
    assert read_exact in (False, None)
    if isinstance(exact, str):
        assert fast == exact
    else:
        assert isinstance(fast, pa.Table)
        assert fast.equals(exact, check_metadata=True)
        # What the store held before this path existed: the validator's cases, encoded.
        assert exact.equals(encode_dataset("r1", load_dataset(path)))
    return fast, read_fast


@pytest.mark.parametrize(
    ("name", "fast_path"),
    [
        ("recorded/cases.jsonl", True),
        ("datasets/valid.jsonl", False),  # metadata
        ("datasets/graded.jsonl", False),
        ("datasets/agent.jsonl", False),
        ("datasets/attacks.jsonl", False),
        ("conversations/mixed.jsonl", False),
    ],
)
def test_fixture_datasets_store_the_same_rows_either_way(name, fast_path):
    stored, read_fast = _both(FIXTURES / name)
    assert isinstance(stored, pa.Table)
    if fast_path is not None:
        assert read_fast is fast_path


# Every dataset the suite holds (good and bad), and the demo's.
DATASETS = sorted(
    {*(FIXTURES / "datasets").glob("*.jsonl"), *FIXTURES.glob("**/*cases*.jsonl")}
) + [FIXTURES.parents[1] / "data" / "demo" / "cases.jsonl"]


@pytest.mark.parametrize("path", DATASETS, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_every_dataset_fixture_is_stored_or_refused_the_same_way(path):
    _both(path)


GOOD = '{"id": "c1", "question": "q?"}'
SECOND = '{"id": "c2", "question": "r?"}'
# Files the fast path must store exactly as the exact path does, or leave to it.
EDGE_FILES = {
    "every_plain_field": '{"id": "c1", "question": "q?", "kind": "injection", '
    '"expected_source_ids": ["d1", "d2"], "expected_answer": "a", '
    '"adversarial_payload": "p"}\n' + SECOND + "\n",
    "every_field_null": '{"id": "c1", "question": "q?", "kind": null, '
    '"expected_source_ids": null, "expected_answer": null, "adversarial_payload": null}\n',
    "unanswerable": '{"id": "c1", "question": "q?", "kind": "unanswerable"}\n',
    "empty_list": '{"id": "c1", "question": "q?", "expected_source_ids": []}\n',
    "empty_answer": '{"id": "c1", "question": "q?", "expected_answer": ""}\n',
    "blank_source_id": '{"id": "c1", "question": "q?", "expected_source_ids": [" "]}\n',
    "null_source_id": '{"id": "c1", "question": "q?", "expected_source_ids": [null]}\n',
    "number_source_id": '{"id": "c1", "question": "q?", "expected_source_ids": [1]}\n',
    "source_ids_string": '{"id": "c1", "question": "q?", "expected_source_ids": "d1"}\n',
    "graded": '{"id": "c1", "question": "q?", "expected_source_ids": {"d1": 2, "d2": 0}}\n',
    "unicode": '{"id": "c\\u00e9", "question": "Qu\'est-ce que \\u2028 \\ud83d\\ude00 ?", '
    '"expected_answer": "\u00e9t\u00e9 \u4e2d\u6587"}\n',
    "nul_character": '{"id": "c1", "question": "a\\u0000b"}\n',
    "escaped_key": '{"\\u0069d": "c1", "question": "q?"}\n',
    "lone_surrogate": '{"id": "c1", "question": "\\ud800"}\n',
    "control_character": '{"id": "c1", "question": "a\tb"}\n',
    "id_a_number": '{"id": 1, "question": "q?"}\n',
    "id_a_boolean": '{"id": true, "question": "q?"}\n',
    "huge_int": '{"id": "c1", "question": ' + "9" * 5000 + "}\n",
    "huge_int_in_list": '{"id": "c1", "question": "q?", "expected_source_ids": ['
    + "9" * 30
    + "]}\n",
    "question_a_list": '{"id": "c1", "question": ["q?"]}\n',
    "question_an_object": '{"id": "c1", "question": {"q": 1}}\n',
    "missing_id": '{"question": "q?"}\n',
    "missing_question": '{"id": "c1"}\n',
    "empty_object": "{}\n",
    "null_id": '{"id": null, "question": "q?"}\n',
    "blank_id": '{"id": " ", "question": "q?"}\n',
    "ideographic_space_question": '{"id": "c1", "question": "\\u3000"}\n',
    "separator_question": '{"id": "c1", "question": "\\u001c"}\n',
    "unknown_kind": '{"id": "c1", "question": "q?", "kind": "trivia"}\n',
    "conversation_kind": '{"id": "c1", "question": "q?", "kind": "conversation"}\n',
    "kind_a_number": '{"id": "c1", "question": "q?", "kind": 1}\n',
    "unknown_field": '{"id": "c1", "question": "q?", "notes": "x"}\n',
    "metadata": '{"id": "c1", "question": "q?", "metadata": {"b": 1, "a": [true, null]}}\n',
    "metadata_null": '{"id": "c1", "question": "q?", "metadata": null}\n',
    "agent_fields": '{"id": "c1", "question": "q?", "expected_tools": [{"name": "search"}], '
    '"tool_match": "exact", "expected_hops": [["d1"], ["d2", "d3"]]}\n',
    "conversation": '{"id": "v1", "kind": "conversation", "turns": [{"question": "a?"}, '
    '{"question": "b?", "expected_source_ids": ["d1"]}]}\n' + GOOD + "\n",
    "duplicate_id": f"{GOOD}\n{SECOND}\n{GOOD}\n",
    "duplicate_key": '{"id": "c1", "id": "c2", "question": "q?"}\n',
    "blank_line": f"{GOOD}\n\n{SECOND}\n",
    "blank_line_of_spaces": f"{GOOD}\n  \t\n{SECOND}\n",
    "leading_space": f"{GOOD}\n  {SECOND}\n",
    "trailing_blank_lines": f"{GOOD}\n{SECOND}\n\n\n",
    "two_objects_on_a_line": f"{GOOD} {SECOND}\n",
    "no_final_newline": f"{GOOD}\n{SECOND}",
    "crlf": f"{GOOD}\r\n{SECOND}\r\n",
    "byte_order_mark": f"\ufeff{GOOD}\n{SECOND}\n",
    "byte_order_mark_on_line_2": f"{GOOD}\n\ufeff{SECOND}\n",
    "not_json": f"{GOOD}\n" + '{"id": "c2", "question": "r?",}\n',
    "an_array": "[1, 2]\n",
    "a_string": '"c1"\n',
    "nan": '{"id": "c1", "question": NaN}\n',
    "empty_file": "",
    "only_blank_lines": "\n\n",
    "not_utf8": None,
}


# The edge files the fast path stores itself; it leaves every other to the validator.
TAKEN_FAST = {
    "every_plain_field",
    "every_field_null",
    "unanswerable",
    "empty_list",
    "empty_answer",
    "blank_source_id",
    "unicode",
    "nul_character",
    "escaped_key",
    "no_final_newline",
    "crlf",
    "byte_order_mark",
    "conversation",
}


@pytest.mark.parametrize("name", list(EDGE_FILES))
def test_both_paths_store_the_same_rows_or_fail_the_same_way(tmp_path, name):
    path = tmp_path / "cases.jsonl"
    text = EDGE_FILES[name]
    if text is None:
        path.write_bytes(GOOD.encode()[:-3] + b'\xff"}\n')
    else:
        path.write_text(text, encoding="utf-8")
    _, fast = _both(path)
    assert (fast is True) is (name in TAKEN_FAST)


def test_the_usual_dataset_takes_the_fast_path_and_keeps_every_value(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text(EDGE_FILES["every_plain_field"], encoding="utf-8")
    stored, fast = _both(path)
    assert fast is True
    first = decode_dataset(stored)[0]
    assert (first.id, first.question, str(first.kind)) == ("c1", "q?", "injection")
    assert first.expected_source_ids == ("d1", "d2")
    assert (first.expected_answer, first.adversarial_payload, first.metadata) == ("a", "p", {})


def test_a_missing_file_is_named_as_the_validator_names_it(tmp_path):
    missing = tmp_path / "absent.jsonl"
    with pytest.raises(DatasetError, match=r"absent\.jsonl:0: no such file$"):
        staged_dataset(missing)


def _generated(rng: random.Random, count: int) -> list[dict]:
    words = ["alpha", "b\u00eata", "\u4e2d", "d\u00e9j\u00e0", "e", "\U0001f600", 'q"uote']
    rows = []
    for number in range(count):
        row: dict = {"id": f"case-{number}", "question": " ".join(rng.sample(words, 3)) + "?"}
        if rng.random() < 0.7:
            row["kind"] = rng.choice(["qa", "unanswerable", "injection", None])
        if rng.random() < 0.8:
            row["expected_source_ids"] = [f"d{rng.randrange(50)}" for _ in range(rng.randrange(4))]
        if rng.random() < 0.5:
            row["expected_answer"] = rng.choice(words + [""])
        if rng.random() < 0.2:
            row["adversarial_payload"] = rng.choice(words)
        rows.append(dict(rng.sample(list(row.items()), len(row))))
    return rows


@pytest.mark.parametrize(("seed", "block_bytes"), [(0, 2048), (1, 2048), (2, 16)])
def test_generated_datasets_read_in_many_chunks_store_the_same_rows(
    tmp_path, monkeypatch, seed, block_bytes
):
    """Blocks and the reader's chunks split the file anywhere, a block shorter than a
    line grows to the line's end: rows line up across them."""
    monkeypatch.setattr(json_blocks, "READ_BLOCK_BYTES", block_bytes)
    monkeypatch.setattr(json_blocks, "PARSE_CHUNK_BYTES", 512)
    rng = random.Random(seed)
    path = tmp_path / "cases.jsonl"
    lines = [json.dumps(row, ensure_ascii=rng.random() < 0.5) for row in _generated(rng, 400)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    stored, fast = _both(path)
    assert fast is True
    assert stored.num_rows == 400
    # One bad line anywhere: the fast path leaves it to the validator, which names it.
    lines[rng.randrange(400)] = '{"id": "bad", "question": " "}'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    refused, _ = _both(path)
    assert isinstance(refused, str) and ": question: must not be empty" in refused


FIRST_TURN = '{"question": "a?", "kind": "unanswerable"}'
TURNS = f'[{FIRST_TURN}, {{"question": "b?", "expected_source_ids": ["d1"]}}]'
CONVERSATION = '{"id": "v1", "kind": "conversation", "turns": %s}'
# Conversations (CONTRACT section 16) the fast path stores as the exact path does, a
# row per turn, or leaves to it.
CONVERSATION_FILES = {
    "conversations_and_cases": f"{GOOD}\n{CONVERSATION % TURNS}\n{SECOND}\n"
    '{"id": "v2", "kind": "conversation", "turns": [{"question": "c?", '
    '"expected_answer": "x", "adversarial_payload": "p", "kind": "injection"}]}\n',
    "only_conversations": f"{CONVERSATION % TURNS}\n",
    "fields_null": '{"id": "v1", "kind": "conversation", "question": null, '
    f'"expected_answer": null, "turns": {TURNS}}}\n',
    "metadata": '{"id": "v1", "kind": "conversation", "metadata": {"a": 1}, '
    f'"turns": {TURNS}}}\n',
    "no_turns": CONVERSATION % "[]" + "\n",
    "turns_null": CONVERSATION % "null" + "\n",
    "turns_missing": '{"id": "v1", "kind": "conversation"}\n',
    "null_turn": CONVERSATION % '[{"question": "a?"}, null]' + "\n",
    "turn_a_string": CONVERSATION % '["a?"]' + "\n",
    "top_level_question": '{"id": "v1", "kind": "conversation", "question": "q?", '
    f'"turns": {TURNS}}}\n',
    "top_level_answer": '{"id": "v1", "kind": "conversation", "expected_answer": "a", '
    f'"turns": {TURNS}}}\n',
    "turn_with_id": CONVERSATION % '[{"id": "t", "question": "a?"}]' + "\n",
    "turn_with_null_id": CONVERSATION % '[{"id": null, "question": "a?"}]' + "\n",
    "turn_without_question": CONVERSATION % '[{"question": "a?"}, {"kind": "qa"}]' + "\n",
    "turn_blank_question": CONVERSATION % '[{"question": "\\u3000"}]' + "\n",
    "turn_of_kind_conversation": CONVERSATION % '[{"question": "a?", "kind": "conversation"}]'
    + "\n",
    "turn_unknown_kind": CONVERSATION % '[{"question": "a?", "kind": "trivia"}]' + "\n",
    "turn_graded": CONVERSATION % '[{"question": "a?", "expected_source_ids": {"d1": 1}}]' + "\n",
    "turn_null_source": CONVERSATION % '[{"question": "a?", "expected_source_ids": [null]}]' + "\n",
    "turns_on_a_case": '{"id": "c1", "question": "q?", "turns": [{"question": "a?"}]}\n',
    "blank_conversation_id": '{"id": " ", "kind": "conversation", "turns": [{"question": "a?"}]}\n',
    "duplicate_conversation": f"{CONVERSATION % TURNS}\n{CONVERSATION % TURNS}\n",
    "conversation_id_of_a_case": CONVERSATION % TURNS + '\n{"id": "v1", "question": "q?"}\n',
    "turn_id_of_a_case": CONVERSATION % TURNS + '\n{"id": "v1#2", "question": "q?"}\n',
    "case_id_then_turn_id": '{"id": "v1#1", "question": "q?"}\n' + CONVERSATION % TURNS + "\n",
}
CONVERSATIONS_TAKEN_FAST = {"conversations_and_cases", "only_conversations", "fields_null"}


@pytest.mark.parametrize("name", list(CONVERSATION_FILES))
def test_conversations_are_stored_the_same_either_way(tmp_path, name):
    path = tmp_path / "cases.jsonl"
    path.write_text(CONVERSATION_FILES[name], encoding="utf-8")
    stored, fast = _both(path)
    assert (fast is True) is (name in CONVERSATIONS_TAKEN_FAST)


def test_a_conversation_counts_as_one_unit_and_its_turns_as_cases(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text(CONVERSATION_FILES["conversations_and_cases"], encoding="utf-8")
    staged = staged_dataset(path)
    assert staged.fast and (staged.rows, staged.units) == (5, 4)
    assert staged.case_ids().to_pylist() == ["c1", "v1#1", "v1#2", "c2", "v2#1"]
    assert staged.turn_cases().to_pylist() == [False, True, True, False, True]


@pytest.mark.parametrize(("seed", "block_bytes"), [(3, 2048), (4, 64)])
def test_generated_conversations_read_in_many_blocks_store_the_same_rows(
    tmp_path, monkeypatch, seed, block_bytes
):
    """Conversations among plain cases, the file split into blocks and the reader's
    chunks anywhere: each conversation's turns are its rows, in file order."""
    monkeypatch.setattr(json_blocks, "READ_BLOCK_BYTES", block_bytes)
    monkeypatch.setattr(json_blocks, "PARSE_CHUNK_BYTES", 512)
    rng = random.Random(seed)
    rows = _generated(rng, 300)
    lines = []
    for number in range(0, 300, 3):
        turns = [{k: v for k, v in row.items() if k != "id"} for row in rows[number : number + 3]]
        lines.append(json.dumps({"id": f"v{number}", "kind": "conversation", "turns": turns}))
        lines.append(json.dumps(rows[number]))  # a case beside it (its id unused by a turn)
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    stored, fast = _both(path)
    assert fast is True
    assert stored.num_rows == 400


def test_the_rows_written_beside_the_staging_are_stored_as_written(tmp_path):
    """staged_dataset_file writes a run's rows while the recording is still read; the
    store takes that file for that run (and writes its own for any other run), and the
    file is gone after the stage."""
    store = RunStore(tmp_path / "store")
    for run_id in ("r1", "r2"):
        store.write_manifest(run_id, {})
    with staged_dataset_file(FIXTURES / "recorded" / "cases.jsonl", "r1") as staged:
        assert staged.file is not None and staged.file.path.is_file()
        for run_id in ("r1", "r2"):
            store.write_staged_dataset(run_id, staged)
            stored = pq.read_table(store.layout.table_path(run_id, "dataset"))
            assert stored.equals(staged.stored(run_id))
    assert not staged.file.path.exists()


def test_the_attack_fields_are_stored_and_read_back():
    """CONTRACT section 23: poison_marker and allowed_restricted_ids, in their columns."""
    cases = load_dataset(FIXTURES / "datasets" / "attacks.jsonl")
    stored = staged_dataset(FIXTURES / "datasets" / "attacks.jsonl").stored("r1")
    assert stored.column("poison_marker").to_pylist() == ["ZQX-FNEQMJJI2QG77WDD", None, None]
    assert stored.column("allowed_restricted_ids").to_pylist() == [
        None,
        ["board-minutes", "hr-7"],
        [],
    ]
    assert decode_dataset(stored) == cases
