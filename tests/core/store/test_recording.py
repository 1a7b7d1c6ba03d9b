"""The run's copy of its recording (store/recording.py): row i replays exactly what
``RecordedAdapter`` replays from the file for the dataset's case i, whichever path
(fast or exact) read the file, and a file either path refuses fails the same way."""

from __future__ import annotations

import asyncio
import json

import pyarrow as pa
import pytest

from ragproof_core.adapters.loading import AdapterLoadError
from ragproof_core.adapters.recorded import RecordedAdapter
from ragproof_core.data.dataset import load_dataset
from ragproof_core.model import Case
from ragproof_core.store import json_blocks
from ragproof_core.store.recording import (
    aligned_batches,
    dataset_keys,
    in_dataset_order,
    staged_recording,
)
from ragproof_core.store.schema import decode_outputs
from tests.conftest import FIXTURES

HERE = FIXTURES / "recording"
CASES = HERE / "cases.jsonl"


def _replayed_from_file(dataset, recording) -> list:
    adapter = RecordedAdapter(str(recording))

    async def replay():
        return [await adapter.run_case(case) for case in load_dataset(dataset)]

    try:
        return asyncio.run(replay())
    finally:
        adapter.close()


def _stored(dataset, recording, *, fast: bool, batch_rows: int = 3) -> tuple[list, bool]:
    cases = load_dataset(dataset)
    with staged_recording(str(recording), "r1", fast=fast) as staged:
        ids, turns = dataset_keys(cases)
        tables = list(aligned_batches(staged, ids, turns, "r1", batch_rows))
        read_fast = staged.fast
    table = pa.concat_tables(tables)
    assert table.column("run_id").to_pylist() == ["r1"] * len(cases)
    return decode_outputs(table), read_fast


@pytest.mark.parametrize(
    ("dataset", "recording", "fast_path"),
    [
        (CASES, HERE / "unordered.jsonl", False),
        (CASES, HERE / "plain.jsonl", True),
        (FIXTURES / "recorded" / "cases.jsonl", FIXTURES / "recorded" / "outputs.jsonl", True),
        (
            FIXTURES / "conversations" / "mixed.jsonl",
            FIXTURES / "conversations" / "outputs.jsonl",
            True,  # conversation lines too
        ),
        (FIXTURES / "system" / "cases.jsonl", FIXTURES / "system" / "outputs_slow.jsonl", None),
        (
            FIXTURES / "agent_compare" / "cases.jsonl",
            FIXTURES / "agent_compare" / "outputs_a.jsonl",
            False,
        ),
    ],
    ids=["unordered", "plain", "recorded", "conversations", "system", "agent"],
)
def test_each_case_replays_what_the_adapter_replays(dataset, recording, fast_path):
    expected = _replayed_from_file(dataset, recording)
    stored_fast, read_fast = _stored(dataset, recording, fast=True)
    stored_exact, _ = _stored(dataset, recording, fast=False, batch_rows=2)
    assert stored_fast == expected
    assert stored_exact == expected
    if fast_path is not None:
        assert read_fast is fast_path


GOOD = '{"case_id": "c1", "answer": {"text": "a"}}'
# Lines the fast path must not take as they stand: each is refused by the exact
# validator, or read by it to a value only it gets right.
EDGE_FILES = {
    "blank_line": f"{GOOD}\n\n" + '{"case_id": "c2", "retrieve": []}\n',
    "blank_line_of_spaces": f"{GOOD}\n  \t\n" + '{"case_id": "c2", "retrieve": []}\n',
    "two_objects_on_a_line": GOOD + ' {"case_id": "c2", "retrieve": []}\n',
    "no_final_newline": GOOD + '\n{"case_id": "c2", "retrieve": []}',
    "duplicate_id": f"{GOOD}\n{GOOD}\n",
    "blank_id": '{"case_id": " ", "retrieve": []}\n',
    "ideographic_space_id": '{"case_id": "\\u3000", "retrieve": []}\n',
    "separator_id": '{"case_id": "\\u001c", "retrieve": []}\n',
    "blank_error": '{"case_id": "c1", "error": "\\u2003"}\n',
    "nothing_recorded": '{"case_id": "c1", "latency_s": 1}\n',
    "answer_without_text": '{"case_id": "c1", "answer": {"citations": []}}\n',
    "null_citation": '{"case_id": "c1", "answer": {"text": "a", "citations": [null]}}\n',
    "null_chunk": '{"case_id": "c1", "retrieve": [null]}\n',
    "chunk_without_text": '{"case_id": "c1", "retrieve": [{"id": "d"}]}\n',
    "negative_latency": '{"case_id": "c1", "retrieve": [], "latency_s": -1}\n',
    "minus_zero_latency": '{"case_id": "c1", "retrieve": [], "latency_s": -0}\n',
    "minus_zero_float_latency": '{"case_id": "c1", "retrieve": [], "latency_s": -0.0}\n',
    "nan_latency": '{"case_id": "c1", "retrieve": [], "latency_s": NaN}\n',
    "huge_latency": '{"case_id": "c1", "retrieve": [], "latency_s": ' + "9" * 400 + "}\n",
    "minus_zero_score": '{"case_id": "c1", "retrieve": [{"id": "d", "text": "t", "score": -0}]}\n',
    "huge_int_score": '{"case_id": "c1", "retrieve": [{"id": "d", "text": "t", "score": '
    + "1"
    + "0" * 400
    + "}]}\n",
    "huge_int_cost": '{"case_id": "c1", "answer": {"text": "a", "usage": {"cost_usd": '
    + "9" * 400
    + "}}}\n",
    "infinite_score": '{"case_id": "c1", "retrieve": [{"id": "d", "text": "t", "score": 1e999}]}\n',
    "boolean_score": '{"case_id": "c1", "retrieve": [{"id": "d", "text": "t", "score": true}]}\n',
    "lone_surrogate": '{"case_id": "c1", "answer": {"text": "\\ud800"}}\n',
    "surrogate_pair": '{"case_id": "c1", "answer": {"text": "\\ud83d\\ude00"}}\n',
    "control_character": '{"case_id": "c1", "answer": {"text": "a\tb"}}\n',
    "byte_order_mark": "\ufeff" + GOOD + "\n",
    "not_utf8": None,
    "an_array": "[1, 2]\n",
    "error_beside_a_bad_answer": '{"case_id": "c1", "error": "boom", "answer": {"text": 5}}\n',
    "empty_file": "",
    "steps": '{"case_id": "c1", "answer": {"text": "a", "steps": [{"type": "tool", '
    '"name": "search", "arguments": {}}]}}\n',
    "usage": '{"case_id": "c1", "answer": {"text": "a", "usage": {"cost_usd": 0.5}}}\n',
}


@pytest.mark.parametrize("name", list(EDGE_FILES))
def test_both_paths_store_the_same_rows_or_fail_the_same_way(tmp_path, name):
    path = tmp_path / "outputs.jsonl"
    text = EDGE_FILES[name]
    if text is None:
        path.write_bytes(GOOD.encode()[:-3] + b'\xff"}}\n')
    else:
        path.write_text(text, encoding="utf-8")
    dataset = tmp_path / "cases.jsonl"
    dataset.write_text(
        '{"id": "c1", "question": "q?"}\n{"id": "c2", "question": "r?"}\n', encoding="utf-8"
    )
    results = []
    for fast in (True, False):
        try:
            results.append(_stored(dataset, path, fast=fast)[0])
        except AdapterLoadError as exc:
            results.append(str(exc))
    assert results[0] == results[1]
    try:
        expected = _replayed_from_file(dataset, path)
    except AdapterLoadError as exc:
        expected = str(exc)
    assert results[0] == expected


def test_a_bad_line_is_named_as_the_adapter_names_it():
    recording = FIXTURES / "errors" / "bad_recording.jsonl"
    with pytest.raises(AdapterLoadError) as raised, staged_recording(str(recording), "r1"):
        pass
    assert str(raised.value) == (
        f"{recording}:2: not valid JSON (Expecting ',' delimiter at column 42)"
    )


def _copies_of_plain(tmp_path, copies: int):
    """plain.jsonl's lines ``copies`` times (ids made unique), and a dataset of their ids."""
    plain = (HERE / "plain.jsonl").read_text(encoding="utf-8").splitlines()
    lines, cases = [], []
    for n in range(copies):
        for line in plain:
            row = json.loads(line)
            row["case_id"] = f"{row['case_id']}-{n}"
            lines.append(json.dumps(row))
            cases.append({"id": row["case_id"], "question": "q?"})
    path = tmp_path / "outputs.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    dataset = tmp_path / "cases.jsonl"
    dataset.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return dataset, path


def test_a_file_read_in_many_chunks_stores_the_same_rows(tmp_path, monkeypatch):
    """The reader parses a block in chunks on its threads: rows line up across them."""
    monkeypatch.setattr(json_blocks, "PARSE_CHUNK_BYTES", 1024)
    dataset, path = _copies_of_plain(tmp_path, 60)
    stored, fast = _stored(dataset, path, fast=True, batch_rows=100)
    assert fast
    assert stored == _replayed_from_file(dataset, path)


@pytest.mark.parametrize("block_bytes", [4096, 64])
def test_a_file_read_in_many_blocks_stores_the_same_rows(tmp_path, monkeypatch, block_bytes):
    """Each block is written while the next is parsed, a block shorter than a line grows
    to its end: the rows stay in file order, one a line."""
    monkeypatch.setattr(json_blocks, "READ_BLOCK_BYTES", block_bytes)
    dataset, path = _copies_of_plain(tmp_path, 40)
    stored, fast = _stored(dataset, path, fast=True, batch_rows=100)
    assert fast
    assert stored == _replayed_from_file(dataset, path)


CONVERSATION = '{"case_id": "c1", "turns": [{"answer": {"text": "a"}}, {"retrieve": []}, %s]}'
THIRD = '{"error": "boom", "latency_s": 0.5}'
SINGLE = '{"case_id": "s1", "answer": {"text": "s"}}'
# Recordings of a conversation of three turns (c1) beside a single case (s1): the
# fast path stores a conversation's turns itself, in file order, or leaves the file
# to the exact validator; either way the rows replay what the adapter replays.
CONVERSATION_FILES = {
    "in_order": f"{CONVERSATION % THIRD}\n{SINGLE}\n",
    "single_first": f"{SINGLE}\n{CONVERSATION % THIRD}\n",
    "fewer_turns": '{"case_id": "c1", "turns": [{"answer": {"text": "a"}}]}\n' + SINGLE + "\n",
    "more_turns": CONVERSATION % f"{THIRD}, {THIRD}" + "\n",
    "no_turns": '{"case_id": "c1", "turns": []}\n' + SINGLE + "\n",
    "a_turn_line_wins": f'{CONVERSATION % THIRD}\n{{"case_id": "c1#2", "error": "own"}}\n',
    "turns_for_a_single_case": '{"case_id": "s1", "turns": [{"answer": {"text": "s"}}]}\n',
    "turns_null": '{"case_id": "c1", "turns": null, "answer": {"text": "a"}}\n',
    "beside_an_answer": '{"case_id": "c1", "answer": {"text": "x"}, "turns": [{"retrieve": []}]}\n',
    "null_turn": CONVERSATION % "null" + "\n",
    "turn_with_its_own_id": CONVERSATION % '{"case_id": "x", "retrieve": []}' + "\n",
    "turn_with_nothing": CONVERSATION % '{"latency_s": 1}' + "\n",
    "turn_with_a_bad_chunk": CONVERSATION % '{"retrieve": [{"id": "d"}]}' + "\n",
    "turns_not_a_list": '{"case_id": "c1", "turns": {"answer": {"text": "a"}}}\n',
    "blank_conversation_id": '{"case_id": " ", "turns": [{"retrieve": []}]}\n',
    "duplicate_conversation": f"{CONVERSATION % THIRD}\n{CONVERSATION % THIRD}\n",
    "conversation_and_line_of_one_id": CONVERSATION % THIRD
    + '\n{"case_id": "c1", "retrieve": []}\n',
}
CONVERSATIONS_TAKEN_FAST = {
    "in_order",
    "single_first",
    "fewer_turns",
    "more_turns",
    "no_turns",
    "a_turn_line_wins",
    "turns_for_a_single_case",
    "turns_null",
}


@pytest.mark.parametrize("name", list(CONVERSATION_FILES))
def test_conversation_lines_are_stored_the_same_either_way(tmp_path, name):
    path = tmp_path / "outputs.jsonl"
    path.write_text(CONVERSATION_FILES[name], encoding="utf-8")
    dataset = tmp_path / "cases.jsonl"
    dataset.write_text(
        '{"id": "c1", "kind": "conversation", "turns": [{"question": "a?"}, {"question": "b?"}, '
        '{"question": "c?"}]}\n{"id": "s1", "question": "q?"}\n',
        encoding="utf-8",
    )
    results, paths = [], []
    for fast in (True, False):
        try:
            stored, read_fast = _stored(dataset, path, fast=fast)
            results.append(stored)
            paths.append(read_fast)
        except AdapterLoadError as exc:
            results.append(str(exc))
    assert results[0] == results[1]
    try:
        expected = _replayed_from_file(dataset, path)
    except AdapterLoadError as exc:
        expected = str(exc)
    assert results[0] == expected
    assert (paths[:1] == [True]) is (name in CONVERSATIONS_TAKEN_FAST)


@pytest.mark.parametrize(
    ("name", "as_it_stands"),
    [("in_order", True), ("single_first", False), ("a_turn_line_wins", False)],
)
def test_a_recording_in_the_datasets_order_is_stored_as_staged(tmp_path, name, as_it_stands):
    """Turns included: the staged file becomes the stored table as it stands only when
    its rows are the dataset's, row for row, turns where the dataset has turns."""
    path = tmp_path / "outputs.jsonl"
    path.write_text(CONVERSATION_FILES[name], encoding="utf-8")
    cases = load_dataset(FIXTURES / "conversations" / "mixed.jsonl")[1:4]  # c1's three turns
    cases.append(Case(id="s1", question="q?"))
    with staged_recording(str(path), "r1") as staged:
        assert staged.fast
        assert in_dataset_order(staged, *dataset_keys(cases)) is as_it_stands
