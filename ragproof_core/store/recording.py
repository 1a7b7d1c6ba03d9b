"""The run's copy of its recording (CONTRACT section 2): a recorded-outputs file read and
validated once, by the run's dataset step, and stored as the ``recorded_outputs`` table.

The table has the ``outputs`` columns (``tables.RECORDED_OUTPUTS``) and holds, row
for row beside the run's dataset, what ``RecordedAdapter`` replays for each case:
its line's output, a conversation turn's output, or the case failure the adapter
reports (``no recorded output for case <id>``, ``... has turns``). A shard step
reads its rows of both tables as Arrow columns and never parses JSON.

The file is read one of two ways, with the same rows stored either way:

- the fast path: pyarrow's JSON reader (C++, parsing a block on every core) with
  the explicit schema of the usual line: ``case_id``, ``retrieve``, ``answer``
  (``text``, ``retrieved_chunks``, ``citations``), ``error``, ``latency_s``;
  chunks with ``id``, ``text``, ``score``. Column checks then cover what the
  reader cannot express (non-blank ids, one object on every line, finite
  non-negative numbers, no duplicate id, ...).
- the exact path: the adapter's line-by-line validator, whose first bad line
  is the ``PATH:LINE: reason`` error. It is taken for any file the fast path
  does not accept whole: a bad line, a blank line, any key outside that schema
  (chunk metadata, steps, usage, conversations, keys ragproof ignores).

Nothing reaches the store while the file is read: the rows are staged in a local
temp file (file order), then written in dataset order by ``aligned_batches``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
import pyarrow.parquet as pq

from ragproof_core.adapters.recorded import iter_recording
from ragproof_core.model import CaseOutput
from ragproof_core.store import files, schema, tables

RECORDED_SCHEMA = tables.RECORDED_OUTPUTS.schema
# Bytes of whole lines handed to the JSON reader at a time: its threads split each
# block among the cores, and the process holds about two blocks' Arrow columns.
READ_BLOCK_BYTES = 32 << 20
# What one of the reader's threads parses at a time: a block is read in such chunks.
PARSE_CHUNK_BYTES = 4 << 20
# Rows encoded at a time on the exact path, and written per row group.
STAGE_ROWS = 50_000

_FAST_CHUNK = pa.struct([("id", pa.string()), ("text", pa.string()), ("score", pa.float64())])
_FAST_SCHEMA = pa.schema(
    [
        ("case_id", pa.string()),
        ("retrieve", pa.list_(_FAST_CHUNK)),
        (
            "answer",
            pa.struct(
                [
                    ("text", pa.string()),
                    ("retrieved_chunks", pa.list_(_FAST_CHUNK)),
                    ("citations", pa.list_(pa.string())),
                ]
            ),
        ),
        ("error", pa.string()),
        ("latency_s", pa.float64()),
    ]
)
_FAST_OPTIONS = pj.ParseOptions(explicit_schema=_FAST_SCHEMA, unexpected_field_behavior="error")
# A character str.strip() keeps: a string holding one is not blank (RecordedLine's rule).
_NOT_SPACE = (
    "[^\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}"
    "\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}]"
)
# What bytes.strip() removes: a line starting with one may be blank, which the fast
# path leaves to the exact one (it would not see a second object on another line).
_BLANK_CODES = np.frombuffer(b" \t\r\x0b\x0c\n", dtype=np.uint8)
_NEWLINE = ord("\n")


class _Refused(Exception):
    """The fast path cannot take this file whole; the exact path reads it."""


@dataclass
class StagedRecording:
    """A validated recording, staged outside the store: its direct lines' outputs in file
    order (``path``), their ids, and the outputs its conversation lines give turns."""

    path: Path
    case_ids: pa.ChunkedArray
    turns: dict[str, CaseOutput] = field(default_factory=dict)
    conversations: frozenset[str] = frozenset()
    # Read by the fast path (else by the exact one): benchmarks and tests report it.
    fast: bool = False

    @property
    def rows(self) -> int:
        return len(self.case_ids)


@contextmanager
def staged_recording(path: str, run_id: str, *, fast: bool = True) -> Iterator[StagedRecording]:
    """Read and validate the recording at ``path``; its rows staged in a temp file that
    is removed on exit. Raises ``AdapterLoadError`` (``PATH:LINE: reason``). ``fast``
    False: the exact path alone (the tests hold both paths to the same rows)."""
    handle, temp = tempfile.mkstemp(prefix="ragproof-recording-", suffix=".parquet")
    os.close(handle)
    staged = Path(temp)
    try:
        try:
            if not fast:
                raise _Refused
            recording = _stage_fast(path, run_id, staged)
        except _Refused:
            recording = _stage_exact(path, run_id, staged)
        yield recording
    finally:
        with suppress(FileNotFoundError):
            staged.unlink()


def _writer(staged: Path) -> pq.ParquetWriter:
    # As the store writes its tables: a recording in the dataset's order is copied in.
    return pq.ParquetWriter(staged, RECORDED_SCHEMA, compression="zstd")


def _stage_exact(path: str, run_id: str, staged: Path) -> StagedRecording:
    ids: list[pa.Array] = []
    pending: list[CaseOutput] = []
    turns: dict[str, CaseOutput] = {}
    conversations: set[str] = set()

    def flush(writer: pq.ParquetWriter) -> None:
        table = schema.encode_outputs(run_id, pending)
        writer.write_table(table, row_group_size=files.ROW_GROUP_SIZE)
        ids.append(table.column("case_id").combine_chunks())
        pending.clear()

    with _writer(staged) as writer:
        for _line, case_id, found in iter_recording(path):
            if isinstance(found, tuple):
                conversations.add(case_id)
                turns.update((output.case_id, output) for output in found)
                continue
            pending.append(found)
            if len(pending) >= STAGE_ROWS:
                flush(writer)
        flush(writer)
    return StagedRecording(
        staged, pa.chunked_array(ids, pa.string()), turns, frozenset(conversations)
    )


def _stage_fast(path: str, run_id: str, staged: Path) -> StagedRecording:
    ids: list[pa.Array] = []
    try:
        with _writer(staged) as writer:
            for block in _line_blocks(path):
                try:
                    read = pj.read_json(
                        pa.BufferReader(block.data),
                        read_options=pj.ReadOptions(block_size=PARSE_CHUNK_BYTES),
                        parse_options=_FAST_OPTIONS,
                    )
                    # The reader copies strings' bytes unchecked: invalid UTF-8 fails here.
                    read.validate(full=True)
                except (pa.ArrowInvalid, UnicodeDecodeError):
                    raise _Refused from None
                if read.num_rows != block.lines:
                    raise _Refused  # two objects on one line (the validator refuses it)
                table = _outputs_columns(run_id, read)
                writer.write_table(table, row_group_size=files.ROW_GROUP_SIZE)
                ids.append(table.column("case_id").combine_chunks())
    except OSError:
        # Missing or unreadable: the exact path words it (PATH:0: ...).
        raise _Refused from None
    case_ids = pa.chunked_array(ids, pa.string())
    if len(case_ids) == 0 or pc.count_distinct(case_ids).as_py() != len(case_ids):
        raise _Refused  # empty, or a duplicate id: the exact path names the lines
    return StagedRecording(staged, case_ids, fast=True)


@dataclass(frozen=True, slots=True)
class _Block:
    data: pa.Buffer
    lines: int


def _line_blocks(path: str) -> Iterator[_Block]:
    """The file in blocks of whole lines, each with its line count. A line that is
    blank, or starts with a blank byte, refuses the fast path (two objects on one line
    are found by counting rows against lines, which a blank line would offset)."""
    with open(path, "rb") as handle:
        carry = b""
        while True:
            data = handle.read(READ_BLOCK_BYTES)
            if not data:
                break
            if carry:
                data = carry + data
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                carry = data
                continue
            view = memoryview(data)
            carry = bytes(view[cut:])
            yield _Block(pa.py_buffer(view[:cut]), _lines_none_blank(view[:cut]))
        if carry:
            block = carry + b"\n"
            yield _Block(pa.py_buffer(block), _lines_none_blank(memoryview(block)))


def _lines_none_blank(block: memoryview) -> int:
    """How many lines a block of whole lines holds; ``_Refused`` when one of them
    starts with a blank byte (what ``bytes.strip()`` removes) or is empty."""
    raw = np.frombuffer(block, dtype=np.uint8)
    ends = np.flatnonzero(raw == _NEWLINE)
    starts = raw[np.concatenate(([0], ends[:-1] + 1))]
    _require(not np.isin(starts, _BLANK_CODES).any())
    return len(ends)


def _outputs_columns(run_id: str, read: pa.Table) -> pa.Table:
    """The reader's columns as ``recorded_outputs`` rows, after the checks the reader
    cannot make; ``_Refused`` when any fails."""
    # One chunk per column: the reader's chunks need not line up with computed masks'.
    read = read.combine_chunks()
    case_id, error = read.column("case_id"), read.column("error")
    retrieve, answer = read.column("retrieve"), read.column("answer")
    latency = read.column("latency_s")
    _require(case_id.null_count == 0 and _all_hold_text(case_id))
    _require(_all_hold_text(error.drop_null()))
    failed = pc.is_valid(error)
    answer_text = pc.struct_field(answer, "text")
    answer_chunks = pc.struct_field(answer, "retrieved_chunks")
    citations = pc.struct_field(answer, "citations")
    # A line needs retrieve, answer or error; an answer needs its text.
    _require(pc.all(pc.or_(failed, pc.or_(pc.is_valid(retrieve), pc.is_valid(answer)))).as_py())
    _require(pc.all(pc.or_(pc.is_null(answer), pc.is_valid(answer_text))).as_py())
    _require(pc.list_flatten(citations).null_count == 0)
    _require(_non_negative_finite(latency))
    kept = pc.invert(failed)
    has_answer = pc.and_(kept, pc.is_valid(answer))
    columns = {
        "run_id": pa.repeat(pa.scalar(run_id, pa.string()), read.num_rows),
        "case_id": case_id,
        "answer_text": pc.if_else(has_answer, answer_text, pa.scalar(None, pa.string())),
        "citations": _masked(citations, has_answer),
        "answer_chunks": _stored_chunks(answer_chunks, has_answer),
        "retrieved": _stored_chunks(retrieve, kept),
        "error": error,
        "latency_s": latency,
    }
    return pa.Table.from_arrays(
        [
            columns[name].cast(f.type) if name in columns else pa.nulls(read.num_rows, f.type)
            for name, f in zip(RECORDED_SCHEMA.names, RECORDED_SCHEMA, strict=True)
        ],
        schema=RECORDED_SCHEMA,
    )


def _require(condition: bool) -> None:
    if not condition:
        raise _Refused


def _all_hold_text(strings: pa.ChunkedArray | pa.Array) -> bool:
    """Every string has a character ``str.strip()`` keeps (none is blank)."""
    if len(strings) == 0:
        return True
    return pc.all(pc.match_substring_regex(strings, _NOT_SPACE)).as_py()


def _non_negative_finite(numbers: pa.ChunkedArray | pa.Array) -> bool:
    """Finite, >= 0 and never -0.0 (JSON's -0 is an integer, which Python reads as 0.0)."""
    values = numbers.drop_null()
    if len(values) == 0:
        return True
    array = np.asarray(values)
    return bool(np.all(np.isfinite(array)) and not np.signbit(array).any())


def _finite_unsigned_zero(numbers: pa.Array) -> bool:
    """Finite and never -0.0: what Python's reading of the same text gives for sure."""
    values = numbers.drop_null()
    if len(values) == 0:
        return True
    array = np.asarray(values)
    return bool(np.all(np.isfinite(array)) and not np.any((array == 0) & np.signbit(array)))


def _masked(lists: pa.ChunkedArray, keep: pa.ChunkedArray) -> pa.ChunkedArray:
    return pc.if_else(keep, lists, pa.scalar(None, lists.type))


def _stored_chunks(lists: pa.ChunkedArray, keep: pa.ChunkedArray) -> pa.ChunkedArray:
    """Chunk lists in the stored chunk type (``metadata_json`` ``{}``: a recorded chunk
    without metadata has an empty one), null where ``keep`` is false."""
    out = []
    for array, kept in zip(lists.chunks, _rechunked(keep, lists), strict=True):
        values = array.values
        ids, texts, scores = (values.field(i) for i in range(3))
        _require(values.null_count == 0 and ids.null_count == 0 and texts.null_count == 0)
        _require(_finite_unsigned_zero(scores))
        chunks = pa.StructArray.from_arrays(
            [ids, texts, scores, pa.repeat(pa.scalar("{}", pa.string()), len(values))],
            fields=list(tables.CHUNK_TYPE),
        )
        valid = pc.and_(pc.is_valid(array), kept)
        out.append(
            pa.ListArray.from_arrays(
                array.offsets,
                chunks,
                type=tables.CHUNK_LIST_TYPE,
                mask=pc.invert(valid),
            )
        )
    return pa.chunked_array(out, tables.CHUNK_LIST_TYPE)


def _rechunked(mask: pa.ChunkedArray, like: pa.ChunkedArray) -> list[pa.Array]:
    """``mask`` cut into the chunk lengths of ``like``."""
    whole, pieces, start = mask.combine_chunks(), [], 0
    for chunk in like.chunks:
        pieces.append(whole.slice(start, len(chunk)))
        start += len(chunk)
    return pieces


def in_dataset_order(staged: StagedRecording, case_ids: pa.Array) -> bool:
    """Whether the staged rows already are the dataset's, in its order (the usual
    recording): then the staged file is the stored table as it stands."""
    return (
        staged.rows == len(case_ids)
        and not staged.turns
        and pc.all(pc.equal(staged.case_ids.combine_chunks(), case_ids)).as_py() is not False
    )


def aligned_batches(
    staged: StagedRecording,
    case_ids: pa.Array,
    turn_cases: pa.Array,
    run_id: str,
    batch_rows: int,
) -> Iterator[pa.Table]:
    """The staged rows in dataset order (``case_ids``; ``turn_cases`` true for a
    conversation's turns): row i what the recording replays for case i."""
    index = pc.index_in(case_ids, value_set=staged.case_ids)
    if in_dataset_order(staged, case_ids):
        yield from (
            pa.Table.from_batches([b]) for b in pq.ParquetFile(staged.path).iter_batches(batch_rows)
        )
        return
    table = pq.read_table(staged.path)
    turn_flags = turn_cases.to_pylist()
    for start in range(0, len(case_ids), batch_rows):
        stop = min(start + batch_rows, len(case_ids))
        batch_index = index.slice(start, stop - start)
        found = pc.is_valid(batch_index)
        taken = table.take(batch_index.filter(found))
        missing = [
            _replayed(staged, case_id, turn_flags[start + offset])
            for offset, case_id in enumerate(case_ids.slice(start, stop - start).to_pylist())
            if batch_index[offset].as_py() is None
        ]
        positions = np.arange(stop - start)
        found_mask = np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool)
        order = np.concatenate([positions[found_mask], positions[~found_mask]])
        combined = pa.concat_tables([taken, schema.encode_outputs(run_id, missing)])
        yield combined.take(pa.array(np.argsort(order, kind="stable")))


def _replayed(staged: StagedRecording, case_id: str, is_turn: bool) -> CaseOutput:
    """A case without a line of its own: a conversation's turn, or a case failure
    worded as ``RecordedAdapter.run_case`` words it."""
    if is_turn and case_id in staged.turns:
        return staged.turns[case_id]
    if not is_turn and case_id in staged.conversations:
        return CaseOutput(case_id, error=f"recorded output for case {case_id} has turns")
    return CaseOutput(case_id, error=f"no recorded output for case {case_id}")


def dataset_keys(cases: Sequence) -> tuple[pa.Array, pa.Array]:
    """The dataset's case ids and whether each is a conversation's turn, for alignment."""
    return (
        pa.array([case.id for case in cases], pa.string()),
        pa.array([case.turn is not None for case in cases], pa.bool_()),
    )
