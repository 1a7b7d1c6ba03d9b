"""A materialized run stores one manifest: the dataset step writes it, every step reads it
typed, and the run record's config_json is exactly it."""

from __future__ import annotations

import json

import dagster as dg

from ragproof_assets.definitions import defs
from ragproof_assets.evaluation.config import EvalRunConfig, evaluate_run_config
from ragproof_assets.evaluation.partitions import evaluation_runs
from ragproof_core.config.manifest import RunManifest
from ragproof_core.store.run_store import RunStore
from tests.assets.expected import RECORDED


def test_the_run_records_config_json_is_the_manifest_the_steps_read(store_path):
    form = EvalRunConfig(
        dataset=str(RECORDED / "cases.jsonl"),
        config_file=str(RECORDED / "ragproof.toml"),
        k=3,
        metrics=["retrieval.*"],
        no_cache=True,
    )
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(evaluation_runs.name, ["m1"])
        result = defs.resolve_job_def("evaluate").execute_in_process(
            run_config=evaluate_run_config(form), instance=instance, partition_key="m1"
        )
        assert result.success
    store = RunStore(store_path)
    manifest = store.run_manifest("m1")
    record = store.get_run("m1")
    assert RunManifest.from_json(record.config_json) == manifest
    assert json.loads(record.config_json) == store.read_manifest("m1")
    assert (manifest.run.k, manifest.run.concurrency, manifest.use_cache) == (3, 4, False)
    assert manifest.run.metrics == tuple(s["metric"] for s in store.summaries("m1"))
    assert manifest.adapter.options["path"] == str(RECORDED / "outputs.jsonl")
    assert (manifest.cases, manifest.dagster_run_id) == (6, result.run_id)
    assert record.started_at == manifest.started_at
