"""The stored path (``compare_stored_runs``: DuckDB over the runs' Parquet files, a
metric at a time) gives exactly the comparison the frame path (``compare_runs`` over
whole ``case_results`` frames) gives for the same rows."""

import secrets
from pathlib import Path

import pandas as pd
import pytest

from ragproof_core.compare.comparison import RunSide, compare_runs, compare_stored_runs
from ragproof_core.model import CaseOutput, MetricResult, Status
from ragproof_core.store.run_store import RunStore
from tests.core.compare.test_comparison import FIXTURES, record


def results(files: tuple[str, ...]) -> pd.DataFrame:
    return pd.concat(
        [pd.read_csv(FIXTURES / f, comment="#", dtype={"case_id": str}) for f in files],
        ignore_index=True,
    )


def metric_results(frame: pd.DataFrame) -> list[MetricResult]:
    return [
        MetricResult(
            row.case_id,
            row.metric,
            Status(row.status),
            None if pd.isna(row.value) else float(row.value),
            None if pd.isna(row.reason) else row.reason,
        )
        for row in frame.itertuples()
    ]


def stored(root: Path | str, frames: dict[str, pd.DataFrame]) -> RunStore:
    """Each run's rows written as a sharded run writes them: two shard files."""
    store = RunStore(root)
    for run_id, frame in frames.items():
        store.write_manifest(run_id, {"run_id": run_id})
        half = len(frame) // 2
        for shard, rows in enumerate((frame.iloc[:half], frame.iloc[half:])):
            with store.results_writer(run_id, shard=shard) as writer:
                outputs = [CaseOutput(case_id=c) for c in dict.fromkeys(rows["case_id"])]
                writer.write(outputs, metric_results(rows))
        store.write_run(record(run_id))
    return store


CASES = {
    "fixtures": (("results_a.csv",), ("results_b.csv",)),
    "with a p95 metric, ties and non-ASCII ids": (
        ("results_a.csv", "results_tail_a.csv"),
        ("results_b.csv", "results_tail_b.csv"),
    ),
}


@pytest.mark.parametrize("files", CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize("top", [10, 3, 0])
def test_stored_path_equals_the_frame_path(tmp_path, files, top):
    frames = {"run-a": results(files[0]), "run-b": results(files[1])}
    store = stored(tmp_path / "store", frames)
    a, b = store.get_run("run-a"), store.get_run("run-b")
    by_frames = compare_runs(RunSide(a, frames["run-a"]), RunSide(b, frames["run-b"]),
                             top_regressions=top)  # fmt: skip
    by_files = compare_stored_runs(store, a, b, top_regressions=top)
    assert by_files == by_frames
    assert by_files.to_dict() == by_frames.to_dict()
    # The fixtures reach every branch the comparison has.
    verdicts = {m.verdict for m in by_files.metrics}
    assert {"better", "worse", "no significant change", "scored in A only"} <= verdicts
    assert any(m.transitions for m in by_files.metrics)
    if len(files[0]) > 1:
        assert any(m.p95 is not None for m in by_files.metrics)
    assert len(by_files.regressions) == min(top, len(compare_runs(
        RunSide(a, frames["run-a"]), RunSide(b, frames["run-b"]), top_regressions=100
    ).regressions))  # fmt: skip


def test_a_metric_only_one_stored_run_has_is_named_not_compared(tmp_path):
    b_rows = results(("results_b.csv",))
    b_rows = b_rows[~b_rows["metric"].isin(["generation.groundedness", "echo.exact_match"])]
    store = stored(tmp_path / "store", {"run-a": results(("results_a.csv",)), "run-b": b_rows})
    comparison = compare_stored_runs(store, store.get_run("run-a"), store.get_run("run-b"))
    assert comparison.only_in_a == ("generation.groundedness", "echo.exact_match")
    assert "generation.groundedness" not in {m.metric for m in comparison.metrics}


def test_a_stored_duplicate_result_is_refused_naming_run_case_and_metric(tmp_path):
    a_rows = results(("results_a.csv",))
    doubled = pd.concat([a_rows, a_rows[a_rows["case_id"] == "c3"].head(1)], ignore_index=True)
    store = stored(tmp_path / "store", {"run-a": doubled, "run-b": results(("results_b.csv",))})
    with pytest.raises(
        ValueError, match="run-a has more than one result for case c3 metric retrieval.recall_at_k"
    ):
        compare_stored_runs(store, store.get_run("run-a"), store.get_run("run-b"))


def test_a_store_on_an_object_store_pairs_the_same():
    """Through fsspec's in-memory filesystem: the code path of an S3 store."""
    frames = {"run-a": results(("results_a.csv",)), "run-b": results(("results_b.csv",))}
    store = stored(f"memory://bucket-{secrets.token_hex(4)}/store", frames)
    a, b = store.get_run("run-a"), store.get_run("run-b")
    by_frames = compare_runs(RunSide(a, frames["run-a"]), RunSide(b, frames["run-b"]))
    assert compare_stored_runs(store, a, b).to_dict() == by_frames.to_dict()
