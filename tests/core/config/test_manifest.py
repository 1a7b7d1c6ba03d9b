"""The run manifest: settings -> manifest -> manifest.json and config_json -> the same manifest."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ragproof_core.config.gate import Floor
from ragproof_core.config.identity import config_digest
from ragproof_core.config.manifest import RunManifest
from ragproof_core.config.settings import RUN_KEYS, Config, RunSettings, load_config
from ragproof_core.judge.settings import JudgeSettings
from ragproof_core.store.run_store import RunStore
from tests.core.store import sample

CONFIG = Path(__file__).parents[2] / "fixtures" / "manifest" / "ragproof.toml"
T0 = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)


def _manifest(config: Config) -> RunManifest:
    return RunManifest(
        run_id="r1",
        dataset="cases.jsonl",
        dataset_path="/data/cases.jsonl",
        dataset_sha256="c" * 64,
        cases=6,
        started_at=T0,
        run=config.run,
        adapter=config.adapter,
        judge=config.judge,
        use_cache=False,
        judge_api_base="http://127.0.0.1:4000",
        dagster_run_id="d1",
        gate=config.gate,
    )


def test_every_setting_survives_manifest_json_and_config_json(tmp_path):
    manifest = _manifest(load_config(CONFIG).with_overrides(k=7))
    defaults = RunSettings()
    assert all(getattr(manifest.run, key) != getattr(defaults, key) for key in RUN_KEYS)
    assert manifest.judge != JudgeSettings()
    assert manifest.run.k == 7  # the flag over the file
    assert manifest.run.metrics == (
        "retrieval.precision_at_k",
        "retrieval.recall_at_k",
        "retrieval.mrr",
        "retrieval.ndcg_at_k",
        "retrieval.context_relevance",
        "retrieval.judged_ndcg_at_k",
        "retrieval.hop_recall_at_k",
        "retrieval.hop_precision_at_k",
        "echo.exact_match",
    )
    assert manifest.judge.mode == "combined"
    assert manifest.gate == (Floor("retrieval.mrr", min=0.5, every_case=True),)

    store = RunStore(tmp_path / "store")
    store.write_manifest("r1", manifest.to_dict())
    assert store.run_manifest("r1") == manifest
    # The digest is over the settings as stored, name and tags left out (CONTRACT 25).
    stored = manifest.to_dict()
    assert manifest.config_digest == config_digest(
        stored["run"], manifest.adapter.target, manifest.adapter.options
    )
    assert store.run_manifest("r1").config_digest == manifest.config_digest
    store.write_run(dataclasses.replace(sample.record("r1"), config_json=manifest.to_json()))
    config_json = store.get_run("r1").config_json
    assert RunManifest.from_json(config_json) == manifest
    # config_json is the manifest, word for word.
    assert json.loads(config_json) == store.read_manifest("r1")
    assert json.loads(config_json)["run"] == {
        "k": 7,
        "source_match": "document",
        "concurrency": 4,
        "timeout_s": 2.5,
        "metrics": list(manifest.run.metrics),
        "shards": 2,
        "name": "manifest-fixture",
        "tags": {"team": "search"},
        "repeats": 3,
        "pass_k": 2,
    }
    assert json.loads(config_json)["judge"]["repeats"] == 2
    assert json.loads(config_json)["gate"] == {
        "retrieval.mrr": {"min": 0.5, "every_case": True, "min_scored": 1}
    }


def test_a_manifest_round_trips_with_its_defaults_too():
    manifest = dataclasses.replace(_manifest(Config()), use_cache=True, judge_api_base=None)
    assert RunManifest.from_json(manifest.to_json()) == manifest
    assert manifest.config == Config().with_overrides(metrics=list(manifest.run.metrics))


def test_a_naive_start_time_is_refused():
    with pytest.raises(ValueError, match="timezone-aware"):
        dataclasses.replace(_manifest(Config()), started_at=datetime(2026, 12, 1))
