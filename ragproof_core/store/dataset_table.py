"""The run's copy of its dataset (CONTRACT section 1): the dataset file read and validated
once, by the run's dataset step, as the rows of the ``dataset`` table.

The file is read one of two ways, with the same rows stored either way:

- the fast path: pyarrow's JSON reader (``store/json_blocks.py``) with the schema of
  the usual case: ``id``, ``question``, ``kind``, ``expected_source_ids`` (a list),
  ``expected_answer``, ``adversarial_payload``, every one a string or null. Column
  checks then cover what the reader cannot express (non-blank id and question, a
  known kind, no null in the ids' list, no duplicate id, at least one case).
- the exact path: ``load_dataset``'s line-by-line validator, whose first bad line
  is the ``PATH:LINE: reason`` error, and the store's encoder. It is taken for any
  file the fast path does not accept whole: Parquet, a bad line, a blank line, any
  key outside that schema (``metadata``, graded ids, the agent fields,
  conversations).

Nothing is stored here: the caller writes ``StagedDataset.stored(run_id)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from ragproof_core.data.dataset import load_dataset
from ragproof_core.model import CaseKind, ToolMatch, units
from ragproof_core.store import schema, tables
from ragproof_core.store.json_blocks import (
    Refused,
    all_distinct,
    all_hold_text,
    line_blocks,
    read_block,
    require,
)

DATASET_SCHEMA = tables.DATASET.schema

_FAST_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("question", pa.string()),
        ("kind", pa.string()),
        ("expected_source_ids", pa.list_(pa.string())),
        ("expected_answer", pa.string()),
        ("adversarial_payload", pa.string()),
    ]
)
_FAST_OPTIONS = pj.ParseOptions(explicit_schema=_FAST_SCHEMA, unexpected_field_behavior="error")
# The kinds a plain case may name (a conversation has turns, which the fast path refuses).
_PLAIN_KINDS = pa.array([str(kind) for kind in CaseKind], pa.string())
# What the exact path stores for a case without metadata and without agent fields.
_NO_METADATA = "{}"
_TOOL_MATCH = str(ToolMatch.IN_ORDER)
_QA = str(CaseKind.QA)


@dataclass(frozen=True, slots=True)
class StagedDataset:
    """A validated dataset as the rows of the ``dataset`` table (its ``run_id`` column
    blank until ``stored``), and how many units a run may shard it into (a case, or a
    conversation with its turns)."""

    table: pa.Table
    units: int
    # Read by the fast path (else by the exact one): benchmarks and tests report it.
    fast: bool = False

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
    parts = [_dataset_columns(read_block(block, _FAST_OPTIONS)) for block in line_blocks(path)]
    table = pa.concat_tables(parts) if parts else None
    # Empty, or a duplicate id: the exact path names the file or the lines.
    require(table is not None and table.num_rows > 0 and all_distinct(table.column("id")))
    return StagedDataset(table, table.num_rows, fast=True)


def _dataset_columns(read: pa.Table) -> pa.Table:
    """The reader's columns as ``dataset`` rows, after the checks the reader cannot
    make; ``Refused`` when any fails."""
    case_id, question = read.column("id"), read.column("question")
    kind, sources = read.column("kind"), read.column("expected_source_ids")
    require(case_id.null_count == 0 and question.null_count == 0)
    require(all_hold_text(case_id) and all_hold_text(question))
    require(pc.all(pc.is_in(kind.drop_null(), value_set=_PLAIN_KINDS)).as_py() is not False)
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
    }
    return pa.Table.from_arrays(
        [
            columns[name].cast(f.type) if name in columns else pa.nulls(rows, f.type)
            for name, f in zip(DATASET_SCHEMA.names, DATASET_SCHEMA, strict=True)
        ],
        schema=DATASET_SCHEMA,
    )
