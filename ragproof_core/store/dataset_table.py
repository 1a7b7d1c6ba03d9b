"""The run's copy of its dataset (CONTRACT section 1): the dataset file read and validated
once, by the run's dataset step, as the rows of the ``dataset`` table.

The file is read one of two ways, with the same rows stored either way:

- the fast path: pyarrow's JSON reader (``store/json_blocks.py``) with the schema of
  the usual case: ``id``, ``question``, ``kind``, ``expected_source_ids`` (a list),
  ``expected_answer``, ``adversarial_payload``, every one a string or null; or a
  conversation's line: ``id``, ``kind`` ``conversation`` and ``turns``, each turn
  such a case without ``id``, stored a row per turn (``turn_rows.py``). Column
  checks then cover what the reader cannot express (non-blank id and question, a
  known kind, no null in the ids' list, at least one turn, no duplicate id among
  cases, conversations and turns, at least one case).
- the exact path: ``load_dataset``'s line-by-line validator, whose first bad line
  is the ``PATH:LINE: reason`` error, and the store's encoder. It is taken for any
  file the fast path does not accept whole: Parquet, a bad line, a blank line, any
  key outside that schema (``metadata``, graded ids, the agent fields).

Nothing is stored here: the caller writes ``StagedDataset.stored(run_id)``.
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from ragproof_core.data.dataset import load_dataset
from ragproof_core.model import CONVERSATION_KIND, CaseKind, ToolMatch, units
from ragproof_core.store import files, schema, tables
from ragproof_core.store.json_blocks import (
    Refused,
    all_distinct,
    all_hold_text,
    line_blocks,
    read_block,
    require,
)
from ragproof_core.store.turn_rows import expanded, line_rows, row_ids

DATASET_SCHEMA = tables.DATASET.schema

# What a plain case's line holds besides its id, and what each turn of a conversation holds.
_FAST_CASE = [
    pa.field("question", pa.string()),
    pa.field("kind", pa.string()),
    pa.field("expected_source_ids", pa.list_(pa.string())),
    pa.field("expected_answer", pa.string()),
    pa.field("adversarial_payload", pa.string()),
]
_CASE_NAMES = [f.name for f in _FAST_CASE]
_FAST_SCHEMA = pa.schema(
    [("id", pa.string()), *_FAST_CASE, ("turns", pa.list_(pa.struct(_FAST_CASE)))]
)
_FAST_OPTIONS = pj.ParseOptions(explicit_schema=_FAST_SCHEMA, unexpected_field_behavior="error")
# What the exact path stores for a case without metadata and without agent fields.
_NO_METADATA = "{}"
_TOOL_MATCH = str(ToolMatch.IN_ORDER)
_QA = str(CaseKind.QA)


@functools.cache
def _plain_kinds() -> pa.Array:
    """The kinds a plain case or a turn may name; built on first use, not at import,
    as ``pa.array`` imports pandas (``schema._status_texts`` says why)."""
    return pa.array([str(kind) for kind in CaseKind], pa.string())


@dataclass(frozen=True, slots=True)
class StagedDataset:
    """A validated dataset as the rows of the ``dataset`` table (its ``run_id`` column
    blank until ``stored``), and how many units a run may shard it into (a case, or a
    conversation with its turns)."""

    table: pa.Table
    units: int
    # Read by the fast path (else by the exact one): benchmarks and tests report it.
    fast: bool = False
    # The rows as one run stores them, already written to a local file
    # (``staged_dataset_file``); None: not written.
    file: StagedFile | None = None

    @property
    def rows(self) -> int:
        return self.table.num_rows

    def stored(self, run_id: str) -> pa.Table:
        """The rows as run ``run_id`` stores them."""
        return self.table.set_column(
            0, DATASET_SCHEMA.field("run_id"), pa.repeat(pa.scalar(run_id), self.rows)
        )

    def case_ids(self) -> pa.Array:
        return self.table.column("id").combine_chunks()

    def turn_cases(self) -> pa.Array:
        """Whether each case is a conversation's turn."""
        return pc.is_valid(self.table.column("conversation_id")).combine_chunks()

    def kinds(self) -> dict[str, int]:
        """How many cases of each kind, in order of first appearance."""
        counts = pc.value_counts(self.table.column("kind")).to_pylist()
        return {count["values"]: count["counts"] for count in counts}


@dataclass(frozen=True, slots=True)
class StagedFile:
    """A local Parquet file holding the ``dataset`` rows of run ``run_id``, written as the
    store writes them (``files.write_parquet``)."""

    path: Path
    run_id: str


@contextmanager
def staged_dataset_file(path: str | Path, run_id: str) -> Iterator[StagedDataset]:
    """``staged_dataset``, its rows as run ``run_id`` stores them also written to a local
    temp file (``StagedDataset.file``, removed on exit): the run's dataset step writes
    them on the thread that read them, while the recording is still being read, and
    the store takes the file as it stands."""
    staged = staged_dataset(path)
    handle, temp = tempfile.mkstemp(prefix="ragproof-dataset-", suffix=".parquet")
    os.close(handle)
    written = Path(temp)
    try:
        files.write_parquet(written, staged.stored(run_id))
        yield replace(staged, file=StagedFile(written, run_id))
    finally:
        with suppress(FileNotFoundError):
            written.unlink()


def staged_dataset(path: str | Path, *, fast: bool = True) -> StagedDataset:
    """Read and validate the dataset at ``path`` (``.parquet`` or JSON Lines). Raises
    ``DatasetError`` (``PATH:LINE: reason``). ``fast`` False: the exact path alone (the
    tests hold both paths to the same rows)."""
    if fast and Path(path).suffix.lower() != ".parquet":
        try:
            return _stage_fast(str(path))
        except Refused:
            pass
    cases = load_dataset(path)
    return StagedDataset(schema.encode_dataset("", cases), sum(1 for _ in units(cases)))


def _stage_fast(path: str) -> StagedDataset:
    parts = [_block_rows(read_block(block, _FAST_OPTIONS)) for block in line_blocks(path)]
    table = pa.concat_tables([part.table for part in parts]) if parts else None
    require(table is not None and table.num_rows > 0)
    # Every id distinct, a conversation's and its turns' included (the exact path names
    # the lines of a duplicate).
    conversations = [part.conversations for part in parts]
    require(all_distinct(pa.chunked_array([*table.column("id").chunks, *conversations])))
    return StagedDataset(table, sum(part.lines for part in parts), fast=True)


@dataclass(frozen=True, slots=True)
class _BlockRows:
    """A block's ``dataset`` rows, how many lines it held and its conversations' ids."""

    table: pa.Table
    lines: int
    conversations: pa.Array


def _block_rows(read: pa.Table) -> _BlockRows:
    """The reader's lines as ``dataset`` rows: a plain case's line its own row, a
    conversation's line a row per turn (``turn_rows.py``); ``Refused`` when a check
    the reader cannot make fails."""
    lines = read.num_rows
    turns = read.column("turns")
    conversation = pc.fill_null(pc.equal(read.column("kind"), CONVERSATION_KIND), False)
    if not pc.any(conversation).as_py():
        require(turns.null_count == lines)  # turns on a plain case: the exact path words it
        no_conversation = pa.array([], pa.string())
        return _BlockRows(_dataset_columns(read, read.column("id")), lines, no_conversation)
    read = read.combine_chunks()
    line_ids, turns = read.column("id").chunk(0), read.column("turns").chunk(0)
    conversation = conversation.combine_chunks()
    require(line_ids.null_count == 0 and all_hold_text(line_ids))
    # Turns on a conversation's line alone, at least one; nothing else of a case beside them.
    require(pc.all(pc.equal(pc.is_valid(turns), conversation)).as_py())
    require(pc.min(pc.list_value_length(turns)).as_py() != 0)
    for name in _CASE_NAMES:
        if name != "kind":
            require(pc.all(pc.or_(pc.invert(conversation), pc.is_null(read[name]))).as_py())
    rows = line_rows(turns, np.asarray(conversation))
    cases = expanded(read.select(_CASE_NAMES), turns, rows)
    is_turn = pa.array(rows.is_turn)
    turn_of = {
        "conversation_id": pc.if_else(
            is_turn, line_ids.take(pa.array(rows.line)), pa.scalar(None, pa.string())
        ),
        "turn": _null_where_zero(rows.turn),
        "turns": _null_where_zero(rows.turns),
    }
    table = _dataset_columns(cases, row_ids(line_ids, rows), turn_of)
    return _BlockRows(table, lines, line_ids.filter(conversation))


def _null_where_zero(numbers: np.ndarray) -> pa.Array:
    return pa.array(numbers, pa.int32(), mask=numbers == 0)


def _dataset_columns(
    read: pa.Table, case_id: pa.ChunkedArray | pa.Array, turn_of: dict | None = None
) -> pa.Table:
    """The cases' columns (``read``) as ``dataset`` rows with ids ``case_id`` (and for
    a conversation's turns, ``turn_of``'s columns), after the checks the reader cannot
    make; ``Refused`` when any fails."""
    question = read.column("question")
    kind, sources = read.column("kind"), read.column("expected_source_ids")
    require(case_id.null_count == 0 and question.null_count == 0)
    require(all_hold_text(case_id) and all_hold_text(question))
    require(pc.all(pc.is_in(kind.drop_null(), value_set=_plain_kinds())).as_py() is not False)
    require(pc.list_flatten(sources).null_count == 0)
    rows = read.num_rows
    columns = {
        "id": case_id,
        "question": question,
        "kind": pc.fill_null(kind, _QA),
        "expected_source_ids": sources,
        "expected_answer": read.column("expected_answer"),
        "adversarial_payload": read.column("adversarial_payload"),
        "metadata_json": pa.repeat(pa.scalar(_NO_METADATA), rows),
        "tool_match": pa.repeat(pa.scalar(_TOOL_MATCH), rows),
        **(turn_of or {}),
    }
    return pa.Table.from_arrays(
        [
            columns[name].cast(f.type) if name in columns else pa.nulls(rows, f.type)
            for name, f in zip(DATASET_SCHEMA.names, DATASET_SCHEMA, strict=True)
        ],
        schema=DATASET_SCHEMA,
    )
