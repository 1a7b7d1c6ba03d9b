"""Many cases' metric results as columns: the rows of ``case_results`` without objects.

``ResultColumns`` holds what a list of ``MetricResult`` holds, one Arrow array per
field, row after row in the same order. A metric scored over a whole batch of
cases returns its rows this way and the store writes them as they are
(``store.run_store.ResultsWriter``): a million-case run's results never become
millions of Python objects. ``by_case`` lays out rows that come as one block per
case with a fixed number of rows each (a group's ``wanted`` names), the usual
shape: a (cases x names) grid of statuses, values and reasons, read row-major.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ragproof_core.model import MetricResult, Status

STATUS_NAMES: tuple[str, ...] = tuple(status.value for status in Status)
_STATUS_OF = {status.value: status for status in Status}
# The index of each status in STATUS_NAMES: what the grids of ``by_case`` hold.
STATUS_CODE = {status: index for index, status in enumerate(Status)}


@dataclass(frozen=True, slots=True)
class ResultColumns:
    """Result rows as equal-length Arrow arrays (``case_results``' columns after run_id)."""

    case_id: pa.Array
    metric: pa.Array
    status: pa.Array
    value: pa.Array
    reason: pa.Array
    judge_raw_json: pa.Array

    def __len__(self) -> int:
        return len(self.case_id)

    @classmethod
    def empty(cls) -> ResultColumns:
        return cls.from_results(())

    @classmethod
    def from_results(cls, results: Sequence[MetricResult]) -> ResultColumns:
        """The columns of result objects (the rows any metric scored one case at a time)."""
        return cls(
            pa.array([r.case_id for r in results], pa.string()),
            pa.array([r.metric for r in results], pa.string()),
            pa.array([r.status.value for r in results], pa.string()),
            pa.array([r.value for r in results], pa.float64()),
            pa.array([r.reason for r in results], pa.string()),
            pa.array([r.judge_raw_json for r in results], pa.string()),
        )

    @classmethod
    def by_case(
        cls,
        case_ids: pa.Array,
        names: Sequence[str],
        status: np.ndarray,
        value: np.ndarray,
        reason: np.ndarray,
        reasons: Sequence[str | None],
    ) -> ResultColumns:
        """Each case's rows for ``names``, in that order, case after case.

        ``status``, ``value`` and ``reason`` are (cases x names) grids: a status code
        (``STATUS_CODE``), the value (read only where the status is scored: null
        elsewhere) and the index into ``reasons`` of the row's reason (None: none).
        """
        cases, width = len(case_ids), len(names)
        rows = np.repeat(np.arange(cases, dtype=np.int64), width)
        codes = np.ascontiguousarray(status, dtype=np.int64).reshape(-1)
        values = np.ascontiguousarray(value, dtype=np.float64).reshape(-1)
        unscored = codes != STATUS_CODE[Status.SCORED]
        reason_at = np.ascontiguousarray(reason).reshape(-1)
        return cls(
            case_ids.take(pa.array(rows)),
            pa.array(names, pa.string()).take(pa.array(np.tile(np.arange(width), cases))),
            # Every row scored, the usual batch: no status or reason to look up.
            pa.array(STATUS_NAMES, pa.string()).take(pa.array(codes))
            if unscored.any()
            else pa.repeat(pa.scalar(Status.SCORED.value, pa.string()), len(codes)),
            pa.array(values, pa.float64(), mask=unscored),
            pa.array(reasons, pa.string()).take(pa.array(reason_at))
            if reason_at.any() or (len(reasons) and reasons[0] is not None)
            else pa.nulls(len(reason_at), pa.string()),
            pa.nulls(cases * width, pa.string()),
        )

    def results(self) -> list[MetricResult]:
        """The rows as ``MetricResult`` objects (for callers that read them one by one)."""
        status_of = _STATUS_OF.__getitem__
        return [
            MetricResult(case_id, metric, status_of(status), value, reason, raw)
            for case_id, metric, status, value, reason, raw in zip(
                self.case_id.to_pylist(),
                self.metric.to_pylist(),
                self.status.to_pylist(),
                self.value.to_pylist(),
                self.reason.to_pylist(),
                self.judge_raw_json.to_pylist(),
                strict=True,
            )
        ]

    def take(self, indices: np.ndarray) -> ResultColumns:
        """The rows at ``indices``, in that order."""
        chosen = pa.array(indices, pa.int64())
        return ResultColumns(*(column.take(chosen) for column in self.arrays()))

    def arrays(self) -> tuple[pa.Array, ...]:
        return (
            self.case_id,
            self.metric,
            self.status,
            self.value,
            self.reason,
            self.judge_raw_json,
        )

    def status_counts(self) -> dict[str, int]:
        """How many rows have each status."""
        counted = self.status.value_counts()
        return dict(
            zip(
                counted.field("values").to_pylist(),
                counted.field("counts").to_pylist(),
                strict=True,
            )
        )


def concat(parts: Sequence[ResultColumns]) -> ResultColumns:
    """The rows of ``parts``, one part after another."""
    if not parts:
        return ResultColumns.empty()
    if len(parts) == 1:
        return parts[0]  # concat_arrays would copy every column
    return ResultColumns(
        *(
            pa.concat_arrays(list(columns))
            for columns in zip(*(p.arrays() for p in parts), strict=True)
        )
    )
