"""The UI launch path without a browser: the launch job validates and creates the partition,
the sensor turns each successful launch into one `evaluate` run request."""

from __future__ import annotations

import dagster as dg
import pytest

from ragproof_assets.definitions import defs
from ragproof_assets.evaluation.partitions import evaluation_runs
from ragproof_assets.evaluation.run_tags import EVALUATE_RUN_TAG
from ragproof_assets.launch.ui import (
    LAUNCHED_BY_TAG,
    RUN_ID_TAG,
    evaluation_config,
    launch_evaluation_sensor,
)
from tests.assets.expected import UNPRICED_BUDGET

CONFIG = {
    "dataset": "tests/fixtures/recorded/cases.jsonl",
    "config_file": "tests/fixtures/recorded/ragproof.toml",
}


def _launch(instance, config):
    return defs.resolve_job_def("launch_evaluation").execute_in_process(
        run_config={"ops": {"request_evaluation": {"config": config}}},
        instance=instance,
        raise_on_error=False,
    )


def test_a_launch_creates_the_partition_and_the_sensor_requests_its_run(store_path):
    with dg.instance_for_test() as instance:
        launched = _launch(instance, CONFIG)
        assert launched.success
        run_id = launched.output_for_node("request_evaluation")
        assert instance.get_dynamic_partitions(evaluation_runs.name) == [run_id]
        assert instance.get_run_by_id(launched.run_id).tags[RUN_ID_TAG] == run_id

        result = launch_evaluation_sensor(dg.build_sensor_context(instance=instance))
        assert len(result) == 1
        request = result[0]
        assert (request.run_key, request.partition_key) == (launched.run_id, run_id)
        assert request.run_config == {"ops": {"eval_dataset": {"config": {**CONFIG}}}}
        assert request.tags[LAUNCHED_BY_TAG] == launched.run_id

        evaluated = defs.resolve_job_def("evaluate").execute_in_process(
            run_config=request.run_config,
            instance=instance,
            partition_key=run_id,
            tags=request.tags,
        )
        assert evaluated.success
        # Each run leads to the other, and the run id tag lists both.
        assert request.tags[RUN_ID_TAG] == run_id
        launcher = instance.get_run_by_id(launched.run_id)
        assert launcher.tags[EVALUATE_RUN_TAG] == evaluated.run_id
        tagged = instance.get_runs(filters=dg.RunsFilter(tags={RUN_ID_TAG: run_id}))
        assert {r.run_id for r in tagged} == {launched.run_id, evaluated.run_id}
    assert (store_path / "runs" / run_id / "report.html").is_file()


def test_a_bad_dataset_fails_the_launch_and_creates_nothing(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "q1"}\n')
    with dg.instance_for_test() as instance:
        launched = _launch(instance, {"dataset": str(bad)})
        assert not launched.success
        failure = launched.get_step_failure_events()[0].step_failure_data.user_failure_data
        assert failure.description == f"{bad}:1: question: missing required field"
        assert instance.get_dynamic_partitions(evaluation_runs.name) == []
        skipped = launch_evaluation_sensor(dg.build_sensor_context(instance=instance))
        assert skipped.skip_message == "no new launch_evaluation run"


@pytest.mark.parametrize(
    ("launch", "expected"),
    [
        ({}, {"dataset": "data/demo/cases.jsonl"}),
        (
            {"ops": {"request_evaluation": {"config": {"dataset": "d.jsonl", "progress": True}}}},
            {"dataset": "d.jsonl"},
        ),
    ],
)
def test_evaluation_config_defaults_to_the_demo_and_drops_the_terminal_bar(launch, expected):
    assert evaluation_config(launch) == {"ops": {"eval_dataset": {"config": expected}}}


def test_a_budget_nothing_can_price_fails_the_launch_and_creates_nothing(monkeypatch):
    monkeypatch.setenv("RAGPROOF_JUDGE_MODEL", "openai/judge-test")
    monkeypatch.setenv("RAGPROOF_MAX_COST_USD", "1")
    with dg.instance_for_test() as instance:
        launched = _launch(instance, CONFIG)
        assert not launched.success
        failure = launched.get_step_failure_events()[0].step_failure_data.user_failure_data
        assert failure.description == UNPRICED_BUDGET
        assert instance.get_dynamic_partitions(evaluation_runs.name) == []


def test_an_unset_variable_fails_the_launch_and_creates_nothing(monkeypatch):
    monkeypatch.delenv("RAGPROOF_TEST_UNSET", raising=False)
    with dg.instance_for_test() as instance:
        launched = _launch(
            instance, {"dataset": CONFIG["dataset"], "name": "x ${RAGPROOF_TEST_UNSET}"}
        )
        failure = launched.get_step_failure_events()[0].step_failure_data.user_failure_data
        assert failure.description == (
            "run.name: environment variable RAGPROOF_TEST_UNSET is not set"
        )
        assert instance.get_dynamic_partitions(evaluation_runs.name) == []
