"""The stored result of ``ragproof calibrate --run RUN_ID --labels FILE``: one Parquet file
per calibration under its run's folder (``runs/<run_id>/calibrations/<id>.parquet``),
one row per judge metric, read by the ``calibrations`` view.

A run can be calibrated again as more labels arrive; every calibration is
kept, and readers take a run's latest (by ``created_at``, then id) as its
current one. Interval bounds are columns of their own (``*_ci_low``,
``*_ci_high``) so SQL reads them without JSON.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ragproof_core.store import tables

if TYPE_CHECKING:
    from ragproof_core.calibration.labels import RunCalibration

CALIBRATIONS_SCHEMA = tables.CALIBRATIONS.schema
COLUMNS: tuple[str, ...] = tables.CALIBRATIONS.names


def _bounds(interval: tuple[float, float] | None) -> tuple[float | None, float | None]:
    return (None, None) if interval is None else interval


def _agreement(agreement: Any) -> dict[str, Any]:
    if agreement is None:
        return {"annotators": None, "annotator_alpha": None, "judge_alpha": None}
    return agreement.to_dict()


def encode_calibration(
    calibration: RunCalibration, calibration_id: str, created_at: datetime, labels_file: str | None
) -> pa.Table:
    rows = []
    for item in calibration.metrics:
        e = item.estimate
        judge_low, judge_high = _bounds(e.judge_ci)
        human_low, human_high = _bounds(e.human_ci)
        ppi_low, ppi_high = _bounds(e.ppi_ci)
        rows.append(
            {
                "run_id": calibration.run_id,
                "calibration_id": calibration_id,
                "created_at": created_at,
                "labels_file": labels_file,
                "metric": item.metric,
                "n_judged": e.n_judged,
                "n_labelled": e.n_labelled,
                "judge_mean": e.judge_mean,
                "judge_ci_low": judge_low,
                "judge_ci_high": judge_high,
                "human_mean": e.human_mean,
                "human_ci_low": human_low,
                "human_ci_high": human_high,
                "ppi_mean": e.ppi_mean,
                "ppi_ci_low": ppi_low,
                "ppi_ci_high": ppi_high,
                "unmatched_labels": len(calibration.unmatched),
                **_agreement(item.agreement),
            }
        )
    return pa.Table.from_pylist(rows, schema=CALIBRATIONS_SCHEMA)


def latest_by_metric(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{metric: row} from a run's calibration rows, the latest calibration winning."""
    ordered = sorted(rows, key=lambda r: (r["created_at"], r["calibration_id"]))
    latest: dict[str, dict[str, Any]] = {}
    for row in ordered:
        latest[row["metric"]] = row
    return latest
