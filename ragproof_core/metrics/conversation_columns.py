"""A batch's conversations read from the store's columns, one entry per conversation.

A run without a judge scores a conversation's own metrics (``MetricSpec.conversation``)
from what its rows say: how many turns it has and which turn failed first, if one did
(CONTRACT section 16). ``conversations_of`` reads that from a batch's ``dataset`` rows
(``conversation_id``, ``turn``) and their ``outputs`` rows (``error``), with no
``Case`` or ``CaseOutput`` object per turn. A conversation's turns are consecutive
rows and a batch holds each conversation whole (``store.run_store.iter_run_batches``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# The dataset columns a batch of turns scored from columns reads beside the outputs'
# ``error``: ``conversations_of``'s, and ``turns``, by which a run's batches keep each
# conversation whole (``store.run_store.iter_run_batches``).
CONVERSATION_READS = ("conversation_id", "turn", "turns")


@dataclass(frozen=True, slots=True)
class ConversationColumns:
    """A batch's conversations in batch order: each one's id, the batch row of its first
    turn, its number of turns, and its first failed turn (``failed_at``: that turn's
    offset in the conversation, -1 if none failed; ``failed_turn``: its 1-based number;
    ``failure``: its error, null if none failed)."""

    conversation_id: pa.Array
    first_row: np.ndarray
    turns: np.ndarray
    failed_at: np.ndarray
    failed_turn: np.ndarray
    failure: pa.Array

    def __len__(self) -> int:
        return len(self.conversation_id)

    @property
    def last_row(self) -> np.ndarray:
        """The batch row of each conversation's last turn."""
        return self.first_row + self.turns - 1

    def turn_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Every turn's batch row, and which conversation (an index into these) it is of."""
        owner = np.repeat(np.arange(len(self), dtype=np.int64), self.turns)
        offset = np.arange(len(owner), dtype=np.int64) - np.repeat(
            np.cumsum(self.turns) - self.turns, self.turns
        )
        return self.first_row[owner] + offset, owner

    def after_failure(self, rows: int) -> np.ndarray:
        """A mask over the batch's ``rows`` rows: the turns that come after their
        conversation's first failed turn (the runner never asks the pipeline for them)."""
        turn_rows, owner = self.turn_rows()
        failed_at = self.failed_at[owner]
        offset = turn_rows - self.first_row[owner]
        mask = np.zeros(rows, dtype=bool)
        mask[turn_rows] = (failed_at >= 0) & (offset > failed_at)
        return mask


def conversations_of(dataset: pa.Table, outputs: pa.Table) -> ConversationColumns:
    """The conversations of a batch: ``dataset`` rows (``CONVERSATION_READS``) and their
    ``outputs`` rows (``error``), row for row; single cases have no entry."""
    if "conversation_id" not in dataset.column_names:
        return _none()
    ids = dataset.column("conversation_id").combine_chunks()
    rows = np.flatnonzero(ids.is_valid().to_numpy(zero_copy_only=False))
    if len(rows) == 0:
        return _none()
    turn_ids = ids.take(pa.array(rows))
    # A conversation starts where the id changes or the rows stop being consecutive
    # (two conversations with one id cannot both be in a dataset: ids are unique).
    starts = np.flatnonzero(
        np.r_[
            True,
            pc.not_equal(turn_ids.slice(1), turn_ids.slice(0, len(rows) - 1)).to_numpy(
                zero_copy_only=False
            )
            | (np.diff(rows) != 1),
        ]
    )
    counts = np.diff(np.r_[starts, len(rows)])
    failed = outputs.column("error").combine_chunks().is_valid().to_numpy(zero_copy_only=False)
    turn_failed = failed[rows]
    # Each conversation's first failed offset: its turns' offsets where failed, else its
    # length, at their minimum.
    offsets = np.arange(len(rows), dtype=np.int64) - np.repeat(starts, counts)
    first = np.minimum.reduceat(np.where(turn_failed, offsets, counts.max()), starts)
    failed_at = np.where(first < counts, first, -1)
    first_rows = rows[starts]
    failed_rows = first_rows + np.maximum(failed_at, 0)
    turn_numbers = dataset.column("turn").combine_chunks().to_numpy(zero_copy_only=False)
    errors = outputs.column("error").combine_chunks().take(pa.array(failed_rows))
    has_failed = pa.array(failed_at >= 0)
    return ConversationColumns(
        turn_ids.take(pa.array(starts)),
        first_rows,
        counts,
        failed_at,
        np.where(failed_at >= 0, turn_numbers[failed_rows], 0).astype(np.int64),
        pc.if_else(has_failed, errors, pa.scalar(None, pa.string())),
    )


def _none() -> ConversationColumns:
    empty = np.zeros(0, dtype=np.int64)
    return ConversationColumns(
        pa.array([], pa.string()), empty, empty, empty, empty, pa.array([], pa.string())
    )
