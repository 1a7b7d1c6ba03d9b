"""The no_regression check's baseline: the last completed run of the same dataset,
adapter and scoring settings (k, source_match, metrics)."""

from __future__ import annotations

import json

import dagster as dg
import pytest

from ragproof_assets.definitions import defs
from ragproof_assets.evaluation.config import EvalRunConfig, evaluate_run_config
from ragproof_assets.evaluation.partitions import evaluation_runs

RECORDER = "ragproof_core.adapters.recorded:RecordedAdapter"


def _evaluate(instance, tmp_path, run_id: str, outputs: str, k: int):
    instance.add_dynamic_partitions(evaluation_runs.name, [run_id])
    config = {
        "dataset": str(tmp_path / "cases.jsonl"),
        "adapter": RECORDER,
        "adapter_options_json": json.dumps({"path": str(tmp_path / f"{outputs}.jsonl")}),
        "k": k,
        "metrics": ["retrieval.*"],
    }
    result = defs.resolve_job_def("evaluate").execute_in_process(
        run_config=evaluate_run_config(EvalRunConfig(**config)),
        instance=instance,
        partition_key=run_id,
    )
    return {c.check_name: c for c in result.get_asset_check_evaluations()}["no_regression"]


@pytest.mark.slow
def test_a_run_with_other_settings_is_no_baseline(regression_fixture):
    tmp_path = regression_fixture  # 20 cases, good and bad outputs: tests/assets/conftest.py
    with dg.instance_for_test() as instance:
        _evaluate(instance, tmp_path, "r1-good-k3", "good", k=3)
        # Worse outputs, but scored at k = 5: the k = 3 run cannot say whether it regressed.
        check = _evaluate(instance, tmp_path, "r2-bad-k5", "bad", k=5)
        assert check.passed
        assert check.metadata["baseline"].value == (
            "none: first completed run of this dataset and adapter with these settings "
            "(k, source_match, metrics)"
        )
        # The same settings again: r2 is the baseline, and r3 (good) did not regress.
        check = _evaluate(instance, tmp_path, "r3-good-k5", "good", k=5)
        assert check.passed
        assert check.metadata["baseline"].value == "r2-bad-k5"
        assert check.metadata["regressed"].value == "none"
