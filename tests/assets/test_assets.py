"""The evaluation assets materialized in-process against a temporary store and a
real (temporary) Dagster instance."""

from __future__ import annotations

import json

import dagster as dg
import duckdb
import pytest

from ragproof_assets.definitions import defs
from ragproof_assets.evaluation.config import EvalRunConfig, evaluate_run_config
from ragproof_assets.evaluation.dataset_scores import dataset_scores_key
from ragproof_assets.evaluation.partitions import evaluation_runs
from ragproof_core.metrics.registry import METRIC_NAMES
from ragproof_core.present.summary import summary_dict
from ragproof_core.store.handles import StoredTable
from ragproof_core.store.run_store import RunStore
from tests.assets.expected import RECORDED, assert_summary


@pytest.fixture
def instance():
    with dg.instance_for_test() as inst:
        yield inst


def _materialize(instance, run_id: str, **config):
    instance.add_dynamic_partitions(evaluation_runs.name, [run_id])
    return defs.resolve_job_def("evaluate").execute_in_process(
        run_config=evaluate_run_config(EvalRunConfig(**config)),
        instance=instance,
        partition_key=run_id,
        raise_on_error=False,
    )


def _materialize_recorded(instance, run_id: str):
    return _materialize(
        instance,
        run_id,
        dataset=str(RECORDED / "cases.jsonl"),
        config_file=str(RECORDED / "ragproof.toml"),
    )


def test_definitions_validate():
    dg.Definitions.validate_loadable(defs)
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert keys == {
        "eval_dataset",
        "adapter_outputs",
        "judge_verdicts",
        "case_scores",
        "run_summary",
    }


def test_recorded_run_materializes_every_asset(instance, store_path):
    result = _materialize_recorded(instance, "run-a")
    assert result.success
    materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert materialized == {
        "eval_dataset",
        "adapter_outputs",
        "judge_verdicts",
        "case_scores",
        "run_summary",
    }

    store = RunStore(store_path)
    record = store.get_run("run-a")
    assert (record.status, record.cases, record.case_failures) == ("completed", 6, 2)
    assert record.judge_model is None and record.cost_usd == 0.0
    assert_summary({s["metric"]: summary_dict(s) for s in store.summaries("run-a")})

    # What a person sees in the UI: the table, numeric means and counts.
    summary_event = next(
        e
        for e in result.get_asset_materialization_events()
        if e.asset_key.to_user_string() == "run_summary"
    )
    metadata = summary_event.materialization.metadata
    assert metadata["mean/retrieval.recall_at_k"].value == 0.75
    assert "| retrieval.precision_at_k | 0.2000 |" in metadata["summary"].value
    assert metadata["case_failures"].value == 2
    assert metadata["abstention_vs_overrefusal"].value.startswith(
        "abstention 1.0000 (higher is better) | over-refusal 0.0000 (lower is better)"
    )
    assert "mean/generation.groundedness" not in metadata  # nothing scored: no point to plot
    # The dataset's own series: its runs alone under a key naming it (dataset_scores.py).
    (observed,) = [
        e.asset_observation_data.asset_observation
        for e in result.all_events
        if e.event_type == dg.DagsterEventType.ASSET_OBSERVATION
    ]
    assert observed.asset_key == dataset_scores_key(record.dataset)
    assert observed.asset_key.path[0] == "scores_by_dataset"
    assert observed.metadata["run_id"].value == "run-a"
    assert observed.metadata["mean/retrieval.recall_at_k"].value == 0.75
    assert observed.metadata["cases"] == dg.MetadataValue.int(6)

    checks = {c.check_name: c.passed for c in result.get_asset_check_evaluations()}
    # 2 of 6 cases failed; the config has no [gate] table, so no floor to break.
    assert checks == {"no_regression": True, "failure_rate": False, "floors": True}

    with duckdb.connect(str(store_path / "ragproof.duckdb"), read_only=True) as con:
        assert con.execute(
            "select count(*) from case_results where run_id = 'run-a'"
        ).fetchone() == (6 * len(METRIC_NAMES),)
        assert con.execute("select status from runs").fetchall() == [("completed",)]


def test_the_tables_flow_between_assets_as_handles_on_the_store(instance, store_path):
    """Lineage carries data: each table asset's output is a StoredTable handle kept by
    the table IO manager, and the steps downstream load it (never a side channel)."""
    result = _materialize_recorded(instance, "run-h")
    assert result.success
    run_dir = store_path / "runs" / "run-h"
    handles = {
        key: StoredTable.from_dict(json.loads((run_dir / f"asset_{key}.json").read_text()))
        for key in ("eval_dataset", "adapter_outputs", "case_scores")
    }
    assert {k: (h.table, h.rows) for k, h in handles.items()} == {
        "eval_dataset": ("dataset", 6),
        "adapter_outputs": ("outputs", 6),
        "case_scores": ("case_results", 6 * len(METRIC_NAMES)),  # 6 cases x every metric
    }
    assert handles["case_scores"].files == (str(run_dir / "case_results.parquet"),)
    assert {h.location for h in handles.values()} == {str(store_path)}

    # Which steps loaded which handle: the shard reads the dataset's (the UI draws the
    # edge, with the handle loaded); the shard plan reads the launch form alone, so it
    # runs beside the dataset step.
    loaded = {
        (e.step_key, e.event_specific_data.input_name)
        for e in result.all_events
        if e.event_type == dg.DagsterEventType.LOADED_INPUT
    }
    assert ("evaluate_cases.evaluate_shard[shard_0000]", "eval_dataset") in loaded
    assert not {key for key, _ in loaded if key == "evaluate_cases.plan_shards"}
    # The summary is written by the step that gathers the case scores and the judge
    # ledger (nothing to load), and the UI still draws it downstream of both.
    summary_node = defs.resolve_asset_graph().get(dg.AssetKey("run_summary"))
    assert summary_node.parent_keys == {dg.AssetKey("case_scores"), dg.AssetKey("judge_verdicts")}
    scores_event = next(
        e
        for e in result.get_asset_materialization_events()
        if e.asset_key.to_user_string() == "case_scores"
    )
    assert scores_event.materialization.metadata["table"].value == "case_results"


def test_rejected_dataset_fails_the_run_and_leaves_the_store_unchanged(
    instance, store_path, tmp_path
):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "question": "q"}\n{"id": "a", "question": "again"}\n')
    before = sorted(p.relative_to(store_path) for p in store_path.rglob("*"))
    result = _materialize(instance, "run-bad", dataset=str(bad))
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    assert f"{bad}:2:" in failure.step_failure_data.user_failure_data.description
    assert sorted(p.relative_to(store_path) for p in store_path.rglob("*")) == before


def test_an_adapter_config_edited_mid_run_fails_the_shard_step(instance, store_path, tmp_path):
    # The shard step rebuilds the adapter from the launch form (the manifest's options
    # have their secrets masked); a config file changed since the run started is refused.
    config = tmp_path / "ragproof.toml"
    config.write_text(
        '[adapter]\ntarget = "tests.support.fault_adapters:ConfigEditingAdapter"\n'
        f'options = {{ config = "{config}", version = 1 }}\n'
    )
    result = _materialize(
        instance, "run-edited", dataset=str(RECORDED / "cases.jsonl"), config_file=str(config)
    )
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    assert failure.step_key.startswith("evaluate_cases.evaluate_shard")
    assert failure.step_failure_data.user_failure_data.description == (
        "the adapter's config (tests.support.fault_adapters:ConfigEditingAdapter and its "
        "options) changed since this run started; start a new run"
    )
    manifest = RunStore(store_path).read_manifest("run-edited")
    assert manifest["adapter"]["options"]["version"] == 1


def _step_keys(result, event_type: dg.DagsterEventType) -> list[str]:
    return [e.step_key for e in result.all_events if e.event_type == event_type]


def test_more_shards_than_cases_in_the_launch_form_fail_on_the_dataset_step_alone(instance):
    # The plan does not wait for the dataset step: it plans one shard, not seven, for a
    # form that step refuses, and that step's error is the run's.
    result = _materialize(
        instance,
        "run-seven",
        dataset=str(RECORDED / "cases.jsonl"),
        config_file=str(RECORDED / "ragproof.toml"),
        shards=7,
    )
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert failure.step_key == "eval_dataset"
    assert failure.step_failure_data.user_failure_data.description.startswith(
        "run.shards: 7 shards for 6 case(s) in "
    )
    assert (
        _step_keys(result, dg.DagsterEventType.STEP_OUTPUT).count("evaluate_cases.plan_shards") == 1
    )
    assert not [
        key
        for key in _step_keys(result, dg.DagsterEventType.STEP_START)
        if key.startswith("evaluate_cases.evaluate_shard")
    ]


@pytest.mark.parametrize(
    ("before", "after", "failed_step"),
    [
        (2, 3, "evaluate_cases.evaluate_shard[shard_0002]"),  # a shard the manifest lacks
        (3, 2, "evaluate_cases.summarize_run"),  # a shard the plan lacks
    ],
)
def test_a_shard_count_edited_as_the_run_starts_fails_the_run_in_one_line(
    instance, store_path, tmp_path, before, after, failed_step
):
    # The plan reads the form's run.shards beside the dataset step, which writes the
    # manifest: a config file saved in between makes the two disagree.
    # In process, Dagster runs the two (both without inputs) in step-key order: the
    # dataset step, whose adapter saves the file, first.
    config = tmp_path / "ragproof.toml"
    config.write_text(
        f"[run]\nshards = {before}\n\n"
        '[adapter]\ntarget = "tests.support.fault_adapters:ShardsEditingAdapter"\n'
        f'options = {{ config = "{config}", before = {before}, after = {after} }}\n'
    )
    result = _materialize(
        instance, "run-resharded", dataset=str(RECORDED / "cases.jsonl"), config_file=str(config)
    )
    assert not result.success
    assert RunStore(store_path).run_manifest("run-resharded").run.shards == before
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert failure.step_key == failed_step
    assert failure.step_failure_data.user_failure_data.description == (
        f"run.shards changed since this run was planned (now {before}); start a new run"
    )
