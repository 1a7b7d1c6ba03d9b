"""A batch's rows for a few metrics, filled in by rule and then case by case.

Most rows of a run without a judge are the same for whole classes of cases: every
judged metric skips with "no judge configured", the agent metrics skip every case
without steps, a robustness metric skips every case of another kind. A column
scorer (``MetricSpec.score_columns``) starts from such rules, set at once over
the cases they cover (``ResultGrid.set``), and computes only the remaining cases
one at a time, with the very function that scores a case on its own
(``ResultGrid.put``), so both paths give the same rows. ``columns()`` lays the
grid out as ``ResultColumns``: each case's rows in ``names`` order, case after
case.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ragproof_core.metrics.result_columns import STATUS_CODE, ResultColumns
from ragproof_core.model import MetricResult, Status

SCORED_CODE = STATUS_CODE[Status.SCORED]
SKIPPED_CODE = STATUS_CODE[Status.SKIPPED]


class ResultGrid:
    """A (cases x names) grid of statuses, values and reasons; every row starts as a
    skip for ``reason``."""

    def __init__(self, case_ids: pa.Array, names: Sequence[str], reason: str) -> None:
        self.case_ids = case_ids
        self.names = tuple(names)
        shape = (len(case_ids), len(self.names))
        self.reasons: list[str | None] = [reason]
        self._reason_index = {reason: 0}
        self.status = np.full(shape, SKIPPED_CODE, dtype=np.int64)
        self.value = np.zeros(shape)
        self.reason = np.zeros(shape, dtype=np.int64)

    def _index(self, reason: str | None) -> int:
        found = self._reason_index.get(reason)
        if found is None:
            found = self._reason_index[reason] = len(self.reasons)
            self.reasons.append(reason)
        return found

    def set(self, rows: np.ndarray | Sequence[int], status: Status, reason: str) -> None:
        """Every name's row of the cases ``rows`` (a mask or indices): ``status`` with
        ``reason`` and no value."""
        if not isinstance(rows, np.ndarray):
            rows = np.asarray(rows, dtype=np.int64)
        self.status[rows] = STATUS_CODE[status]
        self.reason[rows] = self._index(reason)

    def score(self, rows: Sequence[int] | np.ndarray, values: Sequence[float]) -> None:
        """The one metric of a grid of one name scored ``values`` at ``rows``, at once
        (a row at a time, numpy's item assignments cost more than most metrics)."""
        rows = np.asarray(rows, dtype=np.int64)
        self.status[rows, 0] = SCORED_CODE
        self.value[rows, 0] = np.asarray(values, dtype=np.float64)
        self.reason[rows, 0] = self._index(None)

    def put(self, row: int, results: Sequence[MetricResult]) -> None:
        """Case ``row``'s results, one per name in ``names`` order, as a metric scored
        them on their own (a scorer with a judge's reply is never read here: no row of
        a grid carries ``judge_raw_json``)."""
        for column, result in enumerate(results):
            self.status[row, column] = STATUS_CODE[result.status]
            if result.value is not None:
                self.value[row, column] = result.value
            self.reason[row, column] = self._index(result.reason)

    def columns(self) -> ResultColumns:
        return ResultColumns.by_case(
            self.case_ids, self.names, self.status, self.value, self.reason, self.reasons
        )


def null_mask(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """True where ``column`` is null, as a numpy mask."""
    return column.is_null().to_numpy(zero_copy_only=False)


def blank_mask(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """True where a string column is null or only whitespace (``not text.strip()``)."""
    return np.array([text is None or not text.strip() for text in column.to_pylist()], bool)


def case_ids(dataset: pa.Table) -> pa.Array:
    """The dataset rows' case ids: the first column of every grid."""
    return dataset.column("id").combine_chunks()


def every_case_skips(reason: str) -> Callable[[Any, Any, Any, Sequence[str]], ResultColumns]:
    """The ``score_columns`` of metrics that skip every case that did not fail with
    ``reason`` (the judged ones in a run without a judge)."""

    def score_columns(
        dataset: pa.Table, outputs: pa.Table, params: Any, wanted: Sequence[str]
    ) -> ResultColumns:
        return ResultGrid(case_ids(dataset), wanted, reason).columns()

    return score_columns
