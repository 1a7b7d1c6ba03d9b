"""Runs launched as the UI and the schedule launch them (the evaluate job with its
launch form) check their input in eval_dataset before the manifest exists: bad
input fails the first step with the one-line message, and the store is unchanged."""

from __future__ import annotations

import dagster as dg
import pytest

from ragproof_assets.definitions import defs
from ragproof_assets.evaluation.config import EvalRunConfig, evaluate_run_config
from ragproof_assets.evaluation.partitions import evaluation_runs
from ragproof_cli.execution import step_failures
from tests.assets.expected import RECORDED, UNPRICED_BUDGET
from tests.support.snapshot import tree_bytes

DATASET = str(RECORDED / "cases.jsonl")
RECORDER = "ragproof_core.adapters.recorded:RecordedAdapter"


def _launch(config: dict):
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(evaluation_runs.name, ["bad-run"])
        return defs.resolve_job_def("evaluate").execute_in_process(
            run_config=evaluate_run_config(EvalRunConfig(**config)),
            instance=instance,
            partition_key="bad-run",
            raise_on_error=False,
        )


@pytest.mark.parametrize(
    ("config", "env", "message"),
    [
        (
            {"dataset": DATASET, "adapter": "mypipeline.rag:Pipeline"},
            {},
            "adapter target 'mypipeline.rag:Pipeline': no module named 'mypipeline'",
        ),
        (
            {"dataset": DATASET, "adapter": RECORDER, "adapter_options_json": '{"path": "/nope"}'},
            {},
            f"building adapter '{RECORDER}' failed: /nope:0: no such file",
        ),
        (
            {"dataset": DATASET, "adapter_options_json": '"x"'},
            {},
            "adapter_options_json: expected a JSON object",
        ),
        ({"dataset": DATASET, "k": 0}, {}, "run.k: must be at least 1, got 0"),
        (
            {"dataset": DATASET},
            {"RAGPROOF_MAX_COST_USD": "abc"},
            'RAGPROOF_MAX_COST_USD: expected a number, got "abc"',
        ),
        (
            {"dataset": DATASET},
            {"RAGPROOF_MAX_COST_USD": "1", "RAGPROOF_JUDGE_MODEL": "openai/judge-test"},
            UNPRICED_BUDGET,
        ),
        # ${NAME} read as the run starts (CONTRACT section 28): a suite's path, a [run] key.
        (
            {"dataset": "${RAGPROOF_TEST_UNSET}/cases.jsonl"},
            {},
            "dataset: environment variable RAGPROOF_TEST_UNSET is not set",
        ),
        (
            {"dataset": DATASET, "name": "nightly ${RAGPROOF_TEST_UNSET}"},
            {},
            "run.name: environment variable RAGPROOF_TEST_UNSET is not set",
        ),
    ],
    ids=[
        "no_module",
        "no_recording",
        "options_not_object",
        "k_zero",
        "bad_budget",
        "unpriced",
        "unset_in_dataset",
        "unset_in_run_name",
    ],
)
def test_bad_input_fails_the_first_step_and_writes_nothing(
    store_path, monkeypatch, config, env, message
):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    before = tree_bytes(store_path)
    result = _launch(config)
    assert not result.success
    assert step_failures(result) == ([message], False)
    failed = [e.step_key for e in result.all_events if e.is_step_failure]
    assert failed == ["eval_dataset"]
    assert tree_bytes(store_path) == before
