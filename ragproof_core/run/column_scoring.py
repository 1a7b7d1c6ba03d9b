"""A batch of cases' results scored from the store's columns, with no object per case.

A run whose every selected metric scores columns (``score_columns`` of its group
or of its own declaration: ``run.evaluate``'s ``Selection.column_scorers``)
scores a batch of cases from two Arrow tables (the ``dataset`` rows and their
``outputs`` rows, as ``store.tables`` declares them) into ``ResultColumns``: the
rows ``evaluate`` gives the same cases, in the same order (per case, each name in
the run's order), without a ``MetricResult`` or ``Case`` object per case. A case
that failed is an error in every metric, its reason the failure, as
``evaluate.failure_results`` makes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ragproof_core.metrics.result_columns import ResultColumns, concat
from ragproof_core.metrics.spec import ColumnScore
from ragproof_core.model import Status

CASE_FAILED = "case failed"  # the reason of a failure that gave no error text
# The columns ``column_results`` and a batch's results read beside what its scorers
# declare (``MetricGroup.column_reads``): the cases' ids and the outputs' failures.
ROW_READS = ("id", "case_id", "error")


def failure_columns(case_ids: pa.Array, errors: pa.Array, names: Sequence[str]) -> ResultColumns:
    """Each failed case an error in every one of ``names``, its reason its failure."""
    cases, width = len(case_ids), len(names)
    reasons = pc.if_else(pc.equal(errors, ""), CASE_FAILED, errors)
    rows = pa.array(np.repeat(np.arange(cases, dtype=np.int64), width))
    return ResultColumns(
        case_ids.take(rows),
        pa.array(names, pa.string()).take(pa.array(np.tile(np.arange(width), cases))),
        pa.repeat(pa.scalar(Status.ERROR.value, pa.string()), cases * width),
        pa.nulls(cases * width, pa.float64()),
        reasons.take(rows),
        pa.nulls(cases * width, pa.string()),
    )


def column_results(
    dataset: pa.Table,
    outputs: pa.Table,
    settings: Any,
    scorers: Sequence[tuple[ColumnScore, Sequence[str]]],
    names: Sequence[str],
) -> ResultColumns:
    """The rows of ``dataset``'s cases (``outputs`` their outputs, row for row) for
    ``names``, each name scored by the one of ``scorers`` (a ``score_columns`` of a
    group or a metric, and the names it gives) that holds it: case after case, each
    case's rows in ``names`` order."""
    errors = outputs.column("error").combine_chunks()
    failed = errors.is_valid().to_numpy(zero_copy_only=False)
    ok = np.flatnonzero(~failed)
    if len(ok) < len(failed):
        chosen = pa.array(ok)
        dataset, scored_outputs = dataset.take(chosen), outputs.take(chosen)
    else:
        scored_outputs = outputs
    width = len(names)
    column = {name: i for i, name in enumerate(names)}
    # Where each (case, name) row sits in the parts' rows laid end to end.
    where = np.empty((len(failed), width), dtype=np.int64)
    parts: list[ResultColumns] = []
    start = 0
    for score_columns, wanted in scorers:
        part = score_columns(dataset, scored_outputs, settings, wanted)
        cut = len(wanted)
        where[ok[:, None], [column[name] for name in wanted]] = (
            start + np.arange(len(ok))[:, None] * cut + np.arange(cut)
        )
        parts.append(part)
        start += len(part)
    if len(ok) < len(failed):
        lost = np.flatnonzero(failed)
        chosen = pa.array(lost)
        parts.append(
            failure_columns(
                outputs.column("case_id").combine_chunks().take(chosen),
                errors.take(chosen),
                names,
            )
        )
        where[lost] = start + np.arange(len(lost))[:, None] * width + np.arange(width)
    rows = concat(parts)
    order = where.reshape(-1)
    if np.array_equal(order, np.arange(len(order))):
        return rows
    return rows.take(order)
