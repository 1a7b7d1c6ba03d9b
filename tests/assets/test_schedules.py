"""The nightly schedule: stopped by default, one run per suite, and the runs it
requests really evaluate."""

from __future__ import annotations

import dagster as dg

from ragproof_assets.definitions import defs
from ragproof_assets.partitions import evaluation_runs
from ragproof_assets.schedules import nightly_suites
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
        k3 = requests[1]
        assert k3.run_config["ops"]["eval_dataset"]["config"]["k"] == 3
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
