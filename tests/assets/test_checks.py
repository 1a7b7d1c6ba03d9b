"""The no_regression check's baseline: the last completed run of the same dataset,
adapter and scoring settings (k, source_match, metrics); the floors check on a real
Dagster instance."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from ragproof_assets.definitions import defs
from ragproof_assets.evaluation.config import EvalRunConfig, evaluate_run_config
from ragproof_assets.evaluation.partitions import evaluation_runs
from ragproof_core.store import RunStore
from tests.assets.expected import RECORDED as RECORDED_DIR

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


GATE = RECORDED_DIR.parent / "gate"


def _gated(instance, run_id: str, config_file: Path):
    instance.add_dynamic_partitions(evaluation_runs.name, [run_id])
    form = EvalRunConfig(dataset=str(RECORDED_DIR / "cases.jsonl"), config_file=str(config_file))
    result = defs.resolve_job_def("evaluate").execute_in_process(
        run_config=evaluate_run_config(form), instance=instance, partition_key=run_id
    )
    checks = {c.check_name: c for c in result.get_asset_check_evaluations()}
    return result, checks["floors"]


@pytest.mark.slow
def test_the_floors_check_applies_the_runs_gate_and_the_run_carries_its_identity():
    with dg.instance_for_test() as instance:
        result, floors = _gated(instance, "r1-gated", GATE / "ragproof.toml")
        assert not floors.passed
        assert floors.severity == dg.AssetCheckSeverity.ERROR
        assert floors.metadata["broken"].value == (
            "robustness.injection_resistance, retrieval.mrr, generation.groundedness"
        )
        lines = floors.metadata["floors"].value.splitlines()
        assert lines[0] == (
            "- `FAIL  robustness.injection_resistance  every case >= 1  "
            "worst 0.0000 of 1 scored; 1 failing: c4`"
        )
        assert lines[1] == "- `PASS  retrieval.recall_at_k  mean >= 0.7  0.7500 over 2 scored`"
        # The Dagster run carries the run's name, tags and config digest.
        tags = instance.get_run_by_id(result.run_id).tags
        manifest = RunStore().run_manifest("r1-gated")
        assert tags["team"] == "search" and tags["ragproof/name"] == "recorded-good"
        assert tags["ragproof/config_digest"] == manifest.config_digest
        # ... and so does run_summary's materialization.
        (summary,) = [
            e.materialization.metadata
            for e in result.get_asset_materialization_events()
            if e.asset_key.path[-1] == "run_summary"
        ]
        assert summary["name"].value == "recorded-good"
        assert summary["config_digest"].value == manifest.config_digest
        assert summary["tags"].value == {"team": "search"}
        # Without a [gate] table the check passes and says there was nothing to check.
        _, floors = _gated(instance, "r2-plain", RECORDED_DIR / "ragproof.toml")
        assert floors.passed
        assert floors.metadata["floors"].value == "none: the run's config has no [gate] table"
