"""Stored calibrations: one Parquet file per calibration, the ``calibrations`` view,
and ``RunStore.calibrations`` (what ``show`` and the HTML report read)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ragproof_core.calibration.labels import MetricCalibration, RunCalibration
from ragproof_core.calibration.ppi import estimate
from ragproof_core.store.run_store import RunNotFound, RunStore
from tests.core.store import sample

RELEVANCE = "generation.answer_relevance"
GROUNDEDNESS = "generation.groundedness"


def calibration(run_id: str, human: list[float]) -> RunCalibration:
    return RunCalibration(
        run_id,
        (
            MetricCalibration(GROUNDEDNESS, estimate([1.0], [1.0], [1.0, 0.0])),
            MetricCalibration(RELEVANCE, estimate([0.5, 1.0], human, [1.0, 0.5, 0.0])),
        ),
        ({"case_id": "zz", "metric": RELEVANCE, "score": 1},),
    )


def test_a_calibration_is_stored_and_read_back_latest_first(store: RunStore) -> None:
    sample.write_run(store, "done")
    first = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    later = datetime(2026, 11, 30, 13, 0, tzinfo=UTC)
    old_id = store.write_calibration(calibration("done", [0.0, 0.0]), labels_file="a", now=first)
    new_id = store.write_calibration(calibration("done", [1.0, 0.5]), labels_file="b", now=later)
    assert store.layout.calibration_path("done", new_id).is_file()
    rows = store.calibrations("done")
    assert [(r["metric"], r["calibration_id"]) for r in rows] == [
        (GROUNDEDNESS, new_id),
        (RELEVANCE, new_id),
    ]
    relevance = rows[1]
    assert relevance["labels_file"] == "b"
    assert (relevance["n_judged"], relevance["n_labelled"], relevance["unmatched_labels"]) == (
        5,
        2,
        1,
    )
    # L: f = [0.5, 1], y = [1, 0.5] -> y - f = [0.5, -0.5]; U: f = [1, 0.5, 0].
    assert relevance["human_mean"] == 0.75
    assert relevance["ppi_mean"] == 0.5
    expected = estimate([0.5, 1.0], [1.0, 0.5], [1.0, 0.5, 0.0])
    assert (relevance["ppi_ci_low"], relevance["ppi_ci_high"]) == expected.ppi_ci
    # n = 1 for groundedness: its human and PPI figures are null.
    assert (rows[0]["human_mean"], rows[0]["ppi_ci_low"], rows[0]["judge_mean"]) == (
        None,
        None,
        pytest.approx(2 / 3, abs=1e-15),
    )
    everything = store.calibrations("done", latest=False)
    assert [r["calibration_id"] for r in everything] == [old_id, old_id, new_id, new_id]

    with store.connect() as con:
        view = con.execute(
            "SELECT calibration_id, metric, n_labelled, human_mean FROM calibrations "
            "WHERE run_id = 'done'"
        ).fetchall()
    # Ordered by run, time, calibration, then metric name.
    assert view == [
        (old_id, RELEVANCE, 2, 0.0),
        (old_id, GROUNDEDNESS, 1, None),
        (new_id, RELEVANCE, 2, 0.75),
        (new_id, GROUNDEDNESS, 1, None),
    ]


def test_only_finished_runs_are_calibrated(store: RunStore) -> None:
    sample.write_run(store, "killed", finish=False)
    with pytest.raises(RunNotFound, match="has not finished"):
        store.write_calibration(calibration("killed", [1.0, 1.0]), labels_file="x")
    assert store.calibrations("killed") == []
    with store.connect() as con:
        assert con.execute("SELECT count(*) FROM calibrations").fetchone() == (0,)
