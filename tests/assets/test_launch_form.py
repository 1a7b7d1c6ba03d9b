"""The Launchpad form: the user's keys with their defaults and descriptions, no internals,
and the command line's strict checks (a value Dagster's own types let through, or would
refuse in other words, fails the launch with the command line's message)."""

from __future__ import annotations

import dagster as dg
import pytest

from ragproof_assets.definitions import defs
from ragproof_assets.evaluation.config import EvalRunConfig, evaluate_run_config
from ragproof_assets.evaluation.partitions import evaluation_runs
from ragproof_assets.launch.ui import DEMO_DATASET
from ragproof_cli.execution import step_failures
from ragproof_core.config.settings import RUN_KEYS, ConfigError
from tests.assets.expected import RECORDED
from tests.support.snapshot import tree_bytes

USER_KEYS = {
    "dataset",
    "config_file",
    "adapter",
    "adapter_options_json",
    "no_cache",
    "judge_repeats",
    *RUN_KEYS,
}
DEFAULTS_SHOWN = {
    "k": "default 5",
    "source_match": 'default "chunk"',
    "concurrency": "default 16",
    "timeout_s": "default 60.0",
    "metrics": "default every metric",
    "shards": "default 1",
}


def _form_fields(job: str, op: str) -> dict:
    schema = defs.resolve_job_def(job).run_config_schema.config_type
    return (
        schema.fields["ops"].config_type.fields[op].config_type.fields["config"].config_type.fields
    )


@pytest.mark.parametrize(
    ("job", "op"), [("launch_evaluation", "request_evaluation"), ("evaluate", "eval_dataset")]
)
def test_the_form_shows_the_users_keys_with_defaults_and_descriptions_and_no_internals(job, op):
    fields = _form_fields(job, op)
    assert set(fields) == USER_KEYS
    for name, field in fields.items():
        assert field.description, name
    for name, shown in DEFAULTS_SHOWN.items():
        assert shown in fields[name].description, (name, fields[name].description)
        assert not fields[name].is_required
    assert fields["no_cache"].default_value is False
    if job == "launch_evaluation":
        assert fields["dataset"].default_value == DEMO_DATASET


def test_the_run_config_holds_only_what_the_form_sets():
    form = EvalRunConfig(dataset="d.jsonl", config_file="c.toml", k=3, metrics=["retrieval.*"])
    assert evaluate_run_config(form, loggers={"console": {}}) == {
        "ops": {
            "eval_dataset": {
                "config": {
                    "dataset": "d.jsonl",
                    "config_file": "c.toml",
                    "k": 3,
                    "metrics": ["retrieval.*"],
                }
            }
        },
        "loggers": {"console": {}},
    }


STRICT = [
    ({"k": True}, "run.k: expected an integer, got true"),
    ({"k": 2.5}, "run.k: expected an integer, got 2.5"),
    ({"k": "5"}, 'run.k: expected an integer, got "5"'),
    ({"timeout_s": True}, "run.timeout_s: expected a number, got true"),
    ({"source_match": "page"}, "run.source_match: expected 'chunk' or 'document', got \"page\""),
]


@pytest.mark.parametrize(
    ("given", "message"),
    STRICT,
    ids=[m.split(":")[0] + str(list(g.values())[0]) for g, m in STRICT],
)
def test_a_launch_with_a_bad_run_key_is_refused_with_the_command_lines_message(
    store_path, given, message
):
    before = tree_bytes(store_path)
    config = {"dataset": str(RECORDED / "cases.jsonl"), **given}
    with dg.instance_for_test() as instance:
        launched = defs.resolve_job_def("launch_evaluation").execute_in_process(
            run_config={"ops": {"request_evaluation": {"config": config}}},
            instance=instance,
            raise_on_error=False,
        )
        assert not launched.success
        assert step_failures(launched) == ([message], False)
        assert instance.get_dynamic_partitions(evaluation_runs.name) == []

        # The evaluate job's form (schedules, the sensor, the command line) refuses it too.
        instance.add_dynamic_partitions(evaluation_runs.name, ["bad-run"])
        evaluated = defs.resolve_job_def("evaluate").execute_in_process(
            run_config=evaluate_run_config(EvalRunConfig(**config)),
            instance=instance,
            partition_key="bad-run",
            raise_on_error=False,
        )
        assert step_failures(evaluated) == ([message], False)
    assert tree_bytes(store_path) == before


def test_the_forms_paths_read_the_environment_as_the_run_starts(monkeypatch):
    # A suite's dataset and config file may be named through ${NAME} (CONTRACT section 28).
    form = EvalRunConfig(
        dataset="${RECORDED_DIR}/cases.jsonl", config_file="${RECORDED_DIR}/ragproof.toml"
    )
    monkeypatch.delenv("RECORDED_DIR", raising=False)
    with pytest.raises(
        ConfigError, match="^dataset: environment variable RECORDED_DIR is not set$"
    ):
        form.dataset_file()
    with pytest.raises(ConfigError, match="^config_file: environment variable RECORDED_DIR "):
        form.resolve()
    monkeypatch.setenv("RECORDED_DIR", str(RECORDED))
    assert form.dataset_file() == f"{RECORDED}/cases.jsonl"
    assert form.resolve().source == f"{RECORDED}/ragproof.toml"
    # What they read is a secret of the run, masked in what it writes (its errors too).
    assert form.path_secrets() == [str(RECORDED)] * 2
