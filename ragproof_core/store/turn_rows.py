"""Conversation lines as rows (CONTRACT section 16), for the fast paths of the run's
dataset and recording (``store/dataset_table.py``, ``store/recording.py``).

A block of JSON Lines read by pyarrow holds one row a line; a conversation's line
(its ``turns`` list valid) stands for one row per turn, ``ID#1``, ``ID#2``, ... in
order, and every other line for its own row. ``LineRows`` says where each stored
row comes from, in file order: which line, which turn, and its position in the
line's own columns followed by the flattened turns' (``expanded``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ragproof_core.model import turn_id
from ragproof_core.store.json_blocks import require

# turn_id's separator, for the vectorised ids below (turn_id("c1", 2) == "c1#2").
_SEPARATOR = turn_id("", 0)[:-1]


@dataclass(frozen=True, slots=True)
class LineRows:
    """The rows a block's lines stand for, in file order."""

    # The line each row comes from.
    line: np.ndarray
    # The row's turn number (1-based); 0 for a line's own row.
    turn: np.ndarray
    # The row's position in the line's own columns followed by the flattened turns'.
    source: pa.Array
    # The number of turns of each row's conversation; 0 for a line's own row.
    turns: np.ndarray

    @property
    def is_turn(self) -> np.ndarray:
        return self.turn > 0


def line_rows(turns: pa.ListArray, conversation: np.ndarray) -> LineRows:
    """Where each row comes from: a line whose ``conversation`` is true stands for its
    ``turns`` (none when the list is empty), any other line for itself."""
    lines = len(conversation)
    counts = np.asarray(pc.fill_null(pc.list_value_length(turns), 0), dtype=np.int64)
    turn_counts = np.where(conversation, counts, 0)
    per_line = np.where(conversation, counts, 1)
    line = np.repeat(np.arange(lines), per_line)
    first_row = np.concatenate(([0], np.cumsum(per_line)[:-1]))
    first_turn = np.concatenate(([0], np.cumsum(turn_counts)[:-1]))
    is_turn = conversation[line]
    within = np.arange(len(line)) - first_row[line]
    turn = np.where(is_turn, within + 1, 0)
    source = np.where(is_turn, lines + first_turn[line] + within, line)
    return LineRows(line, turn, pa.array(source, pa.int64()), np.where(is_turn, counts[line], 0))


def expanded(own: pa.Table, turns: pa.ListArray, rows: LineRows) -> pa.Table:
    """The rows in file order, from ``own`` (a row a line) and the turns of the lines
    that hold a list (only conversation lines may), whose fields are ``own``'s columns."""
    flat = pc.list_flatten(turns)
    require(flat.null_count == 0)  # a turn that is not an object: the exact path words it
    return pa.concat_tables([own, pa.Table.from_struct_array(flat)]).take(rows.source)


def row_ids(line_ids: pa.Array, rows: LineRows) -> pa.Array:
    """Each row's case id: its line's id, or ``ID#N`` for turn ``N`` of conversation ``ID``."""
    ids = line_ids.take(pa.array(rows.line, pa.int64()))
    numbered = pc.binary_join_element_wise(ids, pa.array(rows.turn).cast(pa.string()), _SEPARATOR)
    return pc.if_else(pa.array(rows.is_turn), numbered, ids)
