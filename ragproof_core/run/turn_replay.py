"""A stored recording's turns as a run replays them, on columns (CONTRACT section 16).

The runner (``adapters.runner``) asks the pipeline for a conversation's turns in
order and stops at the first failed one: every later turn of that conversation is
a case failure ``an earlier turn failed``, whatever the recording holds for it.
``replayed_turns`` gives a batch's recorded rows that outputs, row for row, as
``encode_outputs`` encodes such a failure (its id and error, every other column
null); ``replays_as_recorded`` says whether a run's recording needs no such change
anywhere, so that its outputs table can be the recording itself.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ragproof_core.adapters.history import EARLIER_TURN_FAILED
from ragproof_core.metrics.conversation_columns import ConversationColumns

# The outputs columns a turn replayed as a failure keeps: it is still the run's and its own.
_KEPT = ("run_id", "case_id")


def replayed_turns(recorded: pa.Table, conversations: ConversationColumns) -> pa.Table:
    """``recorded`` (a batch's recorded outputs, any of their columns) with each turn
    after its conversation's first failed turn replayed as ``EARLIER_TURN_FAILED``."""
    after = conversations.after_failure(recorded.num_rows)
    if not after.any():
        return recorded
    mask = pa.array(after)
    columns = []
    for name, column in zip(recorded.column_names, recorded.columns, strict=True):
        if name == "error":
            column = pc.if_else(mask, pa.scalar(EARLIER_TURN_FAILED, column.type), column)
        elif name not in _KEPT:
            column = pc.if_else(mask, pa.scalar(None, column.type), column)
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=recorded.schema)


def replays_as_recorded(unit_starts: Sequence[int], failed: np.ndarray) -> bool:
    """Whether a run's stored recording is what its run replays, row for row: no failed
    row (``failed``, one flag per dataset row) is followed by a turn of its own
    conversation. ``unit_starts``: each unit's first row (``model.units``)."""
    if len(failed) == 0:
        return True
    last_rows = np.r_[np.asarray(unit_starts[1:], dtype=np.int64), len(failed)] - 1
    not_last = np.ones(len(failed), dtype=bool)
    not_last[last_rows] = False
    return not bool(np.any(failed & not_last))
