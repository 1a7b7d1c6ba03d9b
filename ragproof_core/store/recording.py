"""The run's copy of its recording (CONTRACT section 2): a recorded-outputs file read and
validated once, by the run's dataset step, and stored as the ``recorded_outputs`` table.

The table has the ``outputs`` columns (``tables.RECORDED_OUTPUTS``) and holds, row
for row beside the run's dataset, what ``RecordedAdapter`` replays for each case:
its line's output, a conversation turn's output, or the case failure the adapter
reports (``no recorded output for case <id>``, ``... has turns``). A shard step
reads its rows of both tables as Arrow columns and never parses JSON. A recording
whose rows (a conversation's line standing for a row per turn) are the dataset's
in its order is stored as it was staged, without being read again.

The file is read one of two ways, with the same rows stored either way:

- the fast path: pyarrow's JSON reader (C++, parsing a block on every core) with
  the explicit schema of the usual line: ``case_id``, ``retrieve``, ``answer``
  (``text``, ``retrieved_chunks``, ``citations``), ``error``, ``latency_s``;
  chunks with ``id``, ``text``, ``score``; or a conversation's line: ``case_id``
  and ``turns``, each turn such a line without ``case_id`` (``turn_rows.py``
  makes its rows). Column checks then cover what the reader cannot express
  (non-blank ids, one object on every line, finite non-negative numbers, no
  duplicate id, ...).
- the exact path: the adapter's line-by-line validator, whose first bad line
  is the ``PATH:LINE: reason`` error. It is taken for any file the fast path
  does not accept whole: a bad line, a blank line, any key outside that schema
  (chunk metadata, steps, usage, keys ragproof ignores, a conversation's line
  holding more than its id and turns).

Nothing reaches the store while the file is read: the rows are staged in a local
temp file (file order), then written in dataset order by ``aligned_batches``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
import pyarrow.parquet as pq

from ragproof_core.adapters.recorded import iter_recording
from ragproof_core.masking import NO_SECRETS, Masker
from ragproof_core.model import CaseOutput
from ragproof_core.store import files, schema, tables
from ragproof_core.store.json_blocks import (
    Refused,
    all_distinct,
    all_hold_text,
    line_blocks,
    read_block,
    require,
)
from ragproof_core.store.masked_columns import masked_table
from ragproof_core.store.turn_rows import expanded, line_rows, row_ids

RECORDED_SCHEMA = tables.RECORDED_OUTPUTS.schema
STAGED_COMPRESSION = "snappy"
# Rows encoded at a time on the exact path, and written per row group.
STAGE_ROWS = 50_000

_FAST_CHUNK = pa.struct([("id", pa.string()), ("text", pa.string()), ("score", pa.float64())])
# What a line holds besides its case id, and what each turn of a conversation's line holds.
_FAST_LINE = [
    pa.field("retrieve", pa.list_(_FAST_CHUNK)),
    pa.field(
        "answer",
        pa.struct(
            [
                ("text", pa.string()),
                ("retrieved_chunks", pa.list_(_FAST_CHUNK)),
                ("citations", pa.list_(pa.string())),
            ]
        ),
    ),
    pa.field("error", pa.string()),
    pa.field("latency_s", pa.float64()),
]
_LINE_NAMES = [f.name for f in _FAST_LINE]
_FAST_SCHEMA = pa.schema(
    [("case_id", pa.string()), *_FAST_LINE, ("turns", pa.list_(pa.struct(_FAST_LINE)))]
)
_FAST_OPTIONS = pj.ParseOptions(explicit_schema=_FAST_SCHEMA, unexpected_field_behavior="error")


@dataclass
class StagedRecording:
    """A validated recording, staged outside the store: in file order, the outputs of its
    lines and of its conversation lines' turns (``path``), their ids (a turn's is
    ``ID#N``), which rows are turns, and the ids of its conversation lines."""

    path: Path
    case_ids: pa.ChunkedArray
    # Which rows are a conversation's turns; None: no row is.
    turn_rows: pa.ChunkedArray | None = None
    conversations: frozenset[str] = frozenset()
    # Read by the fast path (else by the exact one): benchmarks and tests report it.
    fast: bool = False

    @property
    def rows(self) -> int:
        return len(self.case_ids)

    def turn_flags(self) -> pa.Array:
        if self.turn_rows is None:
            return pa.repeat(pa.scalar(False), self.rows)
        return self.turn_rows.combine_chunks()


@contextmanager
def staged_recording(
    path: str, run_id: str, *, fast: bool = True, masker: Masker = NO_SECRETS
) -> Iterator[StagedRecording]:
    """Read and validate the recording at ``path``; its rows staged in a temp file that
    is removed on exit. Raises ``AdapterLoadError`` (``PATH:LINE: reason``). ``fast``
    False: the exact path alone (the tests hold both paths to the same rows).
    ``masker``: the run's secret values, masked in every staged row as it enters the
    run (CONTRACT section 28) and counted on it."""
    handle, temp = tempfile.mkstemp(prefix="ragproof-recording-", suffix=".parquet")
    os.close(handle)
    staged = Path(temp)
    try:
        attempt = masker.fresh()  # the fast path may give up half-way: count once
        try:
            if not fast:
                raise Refused
            recording = _stage_fast(path, run_id, staged, attempt)
        except Refused:
            attempt = masker.fresh()
            recording = _stage_exact(path, run_id, staged, attempt)
        masker.count(attempt.masked)
        yield recording
    finally:
        with suppress(FileNotFoundError):
            staged.unlink()


def _writer(staged: Path) -> pq.ParquetWriter:
    """The staged file, which a recording in the dataset's order becomes as it stands.
    Snappy, not the store's zstd: at 100,000 cases it wrote in 0.49 s of CPU against
    0.70 s, and shards and DuckDB read it no slower (1.25 s against 1.33 s, 0.26 s
    against 0.32 s; docs/benchmarks.md), for 48 MB against 32 MB."""
    return pq.ParquetWriter(staged, RECORDED_SCHEMA, compression=STAGED_COMPRESSION)


def _stage_exact(path: str, run_id: str, staged: Path, masker: Masker) -> StagedRecording:
    ids: list[pa.Array] = []
    flags: list[pa.Array] = []
    pending: list[CaseOutput] = []
    pending_turns: list[bool] = []
    conversations: set[str] = set()

    def flush(writer: pq.ParquetWriter) -> None:
        table = schema.encode_outputs(run_id, pending)
        writer.write_table(masked_table(table, masker), row_group_size=files.ROW_GROUP_SIZE)
        ids.append(table.column("case_id").combine_chunks())
        flags.append(pa.array(pending_turns, pa.bool_()))
        pending.clear()
        pending_turns.clear()

    with _writer(staged) as writer:
        for _line, case_id, found in iter_recording(path):
            if isinstance(found, tuple):
                conversations.add(case_id)
                pending.extend(found)
                pending_turns.extend(True for _ in found)
            else:
                pending.append(found)
                pending_turns.append(False)
            if len(pending) >= STAGE_ROWS:
                flush(writer)
        flush(writer)
    turn_rows = pa.chunked_array(flags, pa.bool_()) if conversations else None
    return StagedRecording(
        staged, pa.chunked_array(ids, pa.string()), turn_rows, frozenset(conversations)
    )


def _stage_fast(path: str, run_id: str, staged: Path, masker: Masker) -> StagedRecording:
    ids: list[pa.Array] = []
    line_ids: list[pa.Array] = []
    flags: list[pa.Array] = []
    conversations: list[str] = []
    try:
        # A block is written on a thread while the next is parsed (the writer releases
        # the GIL); one write waits at most, so the process holds about two blocks.
        with _writer(staged) as writer, ThreadPoolExecutor(1) as write_behind:
            written: Future | None = None
            for block in line_blocks(path):
                rows = _block_rows(run_id, read_block(block, _FAST_OPTIONS))
                if written is not None:
                    written.result()
                written = write_behind.submit(
                    writer.write_table,
                    masked_table(rows.table, masker),
                    row_group_size=files.ROW_GROUP_SIZE,
                )
                ids.append(rows.table.column("case_id").combine_chunks())
                line_ids.append(rows.line_ids)
                flags.append(rows.turn_rows)
                conversations.extend(rows.conversations)
            if written is not None:
                written.result()
    except OSError:
        # Missing or unreadable: the exact path words it (PATH:0: ...).
        raise Refused from None
    lines = pa.chunked_array(line_ids, pa.string())
    if len(lines) == 0 or not all_distinct(lines):
        raise Refused  # empty, or a duplicate id: the exact path names the lines
    turn_rows = pa.chunked_array(flags, pa.bool_()) if conversations else None
    return StagedRecording(
        staged, pa.chunked_array(ids, pa.string()), turn_rows, frozenset(conversations), fast=True
    )


@dataclass(frozen=True, slots=True)
class _BlockRows:
    """A block's ``recorded_outputs`` rows, its lines' ids, which rows are turns and
    the ids of its conversation lines."""

    table: pa.Table
    line_ids: pa.Array
    turn_rows: pa.Array
    conversations: list[str]


def _block_rows(run_id: str, read: pa.Table) -> _BlockRows:
    """The reader's rows as stored rows: a line's own, or one per turn of a
    conversation's line (``turn_rows.py``); ``Refused`` when a check fails."""
    turns = read.column("turns")
    if turns.null_count == len(turns):
        table = _outputs_columns(run_id, read)
        ids = table.column("case_id").combine_chunks()
        return _BlockRows(table, ids, pa.repeat(pa.scalar(False), len(ids)), [])
    read = read.combine_chunks()
    line_ids, turns = read.column("case_id").chunk(0), read.column("turns").chunk(0)
    require(line_ids.null_count == 0 and all_hold_text(line_ids))
    conversation = pc.is_valid(turns)
    # A conversation's line holds its id and turns alone (the exact path ignores the rest).
    for name in _LINE_NAMES:
        require(pc.all(pc.or_(pc.invert(conversation), pc.is_null(read.column(name)))).as_py())
    rows = line_rows(turns, np.asarray(conversation))
    lines = expanded(read.select(_LINE_NAMES), turns, rows)
    table = _outputs_columns(run_id, lines.append_column("case_id", row_ids(line_ids, rows)))
    return _BlockRows(
        table,
        line_ids,
        pa.array(rows.is_turn),
        line_ids.filter(conversation).to_pylist(),
    )


def _outputs_columns(run_id: str, read: pa.Table) -> pa.Table:
    """The reader's columns as ``recorded_outputs`` rows, after the checks the reader
    cannot make; ``Refused`` when any fails."""
    case_id, error = read.column("case_id"), read.column("error")
    retrieve, answer = read.column("retrieve"), read.column("answer")
    latency = read.column("latency_s")
    require(case_id.null_count == 0 and all_hold_text(case_id))
    require(all_hold_text(error.drop_null()))
    failed = pc.is_valid(error)
    answer_text = pc.struct_field(answer, "text")
    answer_chunks = pc.struct_field(answer, "retrieved_chunks")
    citations = pc.struct_field(answer, "citations")
    # A line needs retrieve, answer or error; an answer needs its text.
    require(pc.all(pc.or_(failed, pc.or_(pc.is_valid(retrieve), pc.is_valid(answer)))).as_py())
    require(pc.all(pc.or_(pc.is_null(answer), pc.is_valid(answer_text))).as_py())
    require(pc.list_flatten(citations).null_count == 0)
    require(_non_negative_finite(latency))
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
        require(values.null_count == 0 and ids.null_count == 0 and texts.null_count == 0)
        require(_finite_unsigned_zero(scores))
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


def in_dataset_order(staged: StagedRecording, case_ids: pa.Array, turn_cases: pa.Array) -> bool:
    """Whether the staged rows already are the dataset's, in its order (the usual
    recording, a conversation's turns included): then the staged file is the stored
    table as it stands. Row for row the same ids, and turns where the dataset has
    turns: the ids being distinct, no line's output was meant to win over a turn's."""
    return (
        staged.rows == len(case_ids)
        and pc.all(pc.equal(staged.case_ids.combine_chunks(), case_ids)).as_py() is not False
        and pc.all(pc.equal(staged.turn_flags(), turn_cases)).as_py() is not False
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
    if in_dataset_order(staged, case_ids, turn_cases):
        yield from (
            pa.Table.from_batches([b]) for b in pq.ParquetFile(staged.path).iter_batches(batch_rows)
        )
        return
    index = _staged_rows(staged, case_ids, turn_cases)
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


def _staged_rows(staged: StagedRecording, case_ids: pa.Array, turn_cases: pa.Array) -> pa.Array:
    """The staged row each case replays, null where none does: the line of its own id,
    else, for a conversation's turn, that turn in its conversation's line."""
    ids, turns = staged.case_ids.combine_chunks(), staged.turn_flags()
    no_id = pa.scalar(None, pa.string())
    own = pc.index_in(case_ids, value_set=pc.if_else(turns, no_id, ids))
    turn = pc.index_in(case_ids, value_set=pc.if_else(turns, ids, no_id))
    return pc.coalesce(own, pc.if_else(turn_cases, turn, pa.scalar(None, turn.type)))


def _replayed(staged: StagedRecording, case_id: str, is_turn: bool) -> CaseOutput:
    """A case without a row of its own: a case failure worded as
    ``RecordedAdapter.run_case`` words it."""
    if not is_turn and case_id in staged.conversations:
        return CaseOutput(case_id, error=f"recorded output for case {case_id} has turns")
    return CaseOutput(case_id, error=f"no recorded output for case {case_id}")


def dataset_keys(cases: Sequence) -> tuple[pa.Array, pa.Array]:
    """The dataset's case ids and whether each is a conversation's turn, for alignment."""
    return (
        pa.array([case.id for case in cases], pa.string()),
        pa.array([case.turn is not None for case in cases], pa.bool_()),
    )
