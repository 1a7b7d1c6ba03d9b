"""The nightly schedule: stopped by default, one run per suite, and the runs it
requests really evaluate."""

from __future__ import annotations

import dagster as dg
import pytest

from ragproof_assets.definitions import defs
from ragproof_assets.evaluation.partitions import evaluation_runs
from ragproof_assets.schedules.nightly import SUITE_KEYS, load_suites, nightly_suites
from ragproof_core.config.settings import RUN_KEYS, ConfigError
from tests.assets.expected import RECORDED


def test_schedule_is_defined_stopped():
    assert nightly_suites.default_status == dg.DefaultScheduleStatus.STOPPED
    assert nightly_suites.cron_schedule == "0 2 * * *"


def test_each_suite_becomes_a_new_partition_and_a_run_that_succeeds(tmp_path, monkeypatch):
    suites = tmp_path / "suites.toml"
    suites.write_text(
        f'[[suite]]\nname = "recorded"\ndataset = "{RECORDED / "cases.jsonl"}"\n'
        f'config_file = "{RECORDED / "ragproof.toml"}"\n\n'
        f'[[suite]]\nname = "recorded-k3"\ndataset = "{RECORDED / "cases.jsonl"}"\n'
        f'config_file = "{RECORDED / "ragproof.toml"}"\nk = 3\n'
    )
    monkeypatch.setenv("RAGPROOF_SUITES", str(suites))
    with dg.instance_for_test() as instance:
        context = dg.build_schedule_context(
            instance=instance, repository_def=defs.get_repository_def()
        )
        requests = nightly_suites.evaluate_tick(context).run_requests
        assert [r.tags["ragproof/suite"] for r in requests] == ["recorded", "recorded-k3"]
        assert sorted(instance.get_dynamic_partitions(evaluation_runs.name)) == sorted(
            r.partition_key for r in requests
        )
        dataset, config = str(RECORDED / "cases.jsonl"), str(RECORDED / "ragproof.toml")
        assert [r.run_config for r in requests] == [
            {"ops": {"eval_dataset": {"config": {"dataset": dataset, "config_file": config}}}},
            {
                "ops": {
                    "eval_dataset": {"config": {"dataset": dataset, "config_file": config, "k": 3}}
                }
            },
        ]
        assert [r.run_key for r in requests] == [r.partition_key for r in requests]
        assert len({r.run_key for r in requests}) == 2
        k3 = requests[1]
        result = defs.resolve_job_def("evaluate").execute_in_process(
            run_config=k3.run_config, instance=instance, partition_key=k3.partition_key
        )
        assert result.success


def test_no_suites_file_skips_the_tick(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGPROOF_SUITES", str(tmp_path / "missing.toml"))
    with dg.instance_for_test() as instance:
        context = dg.build_schedule_context(
            instance=instance, repository_def=defs.get_repository_def()
        )
        data = nightly_suites.evaluate_tick(context)
        assert data.run_requests == [] and "no suites file" in data.skip_message


def test_duplicate_suite_names_are_rejected(tmp_path, monkeypatch):
    # Each name becomes a run request; two with one name would collapse into one.
    suites = tmp_path / "suites.toml"
    suites.write_text(
        '[[suite]]\nname = "nightly"\ndataset = "a.jsonl"\n\n'
        '[[suite]]\nname = "nightly"\ndataset = "b.jsonl"\nk = 3\n'
    )
    with pytest.raises(ConfigError) as err:
        load_suites(suites)
    assert (
        str(err.value) == f"{suites}: suite #2: duplicate name 'nightly' (first used by suite #1)"
    )
    monkeypatch.setenv("RAGPROOF_SUITES", str(suites))
    with dg.instance_for_test() as instance:
        context = dg.build_schedule_context(
            instance=instance, repository_def=defs.get_repository_def()
        )
        # The tick fails (shown in the UI's tick history) with the suites file's message.
        with pytest.raises(dg.DagsterUserCodeExecutionError) as tick:
            nightly_suites.evaluate_tick(context)
        assert str(tick.value.user_exception) == str(err.value)
        # Nothing was requested: no partition was added for either suite.
        assert instance.get_dynamic_partitions(evaluation_runs.name) == []


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('name = "a"\ndataset = "a.jsonl"\nkk = 3\n', "kk: unknown key (did you mean 'k'?)"),
        ('name = "a"\ndataset = "a.jsonl"\nk = 2.5\n', "run.k: expected an integer, got 2.5"),
        ('name = "a"\ndataset = "a.jsonl"\nk = true\n', "run.k: expected an integer, got true"),
        ('name = "a"\n', "dataset: missing required key"),
        ('dataset = "a.jsonl"\n', "name: expected a non-empty string, got null"),
    ],
)
def test_bad_suites_name_the_suite_and_the_key(tmp_path, entry, message):
    suites = tmp_path / "suites.toml"
    suites.write_text("[[suite]]\n" + entry)
    with pytest.raises(ConfigError) as err:
        load_suites(suites)
    assert str(err.value) == f"{suites}: suite #1: {message}"


def test_suite_keys_are_the_launch_form_and_every_run_key():
    assert (
        "name",
        "dataset",
        "config_file",
        "adapter",
        "adapter_options_json",
        "no_cache",
        *RUN_KEYS,
    ) == SUITE_KEYS
