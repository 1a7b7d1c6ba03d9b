"""A schedule per suite of suites.toml (CONTRACT section 30): read when the code
location loads, running when the suite sets `cron`, stopped otherwise, and the runs
it requests really evaluate."""

from __future__ import annotations

import dagster as dg
import pytest

from ragproof_assets.definitions import defs, location
from ragproof_assets.evaluation.config import EvalRunConfig
from ragproof_assets.evaluation.partitions import evaluation_runs
from ragproof_core.config import RUN_KEYS, ConfigError
from ragproof_core.config.suites import LAUNCH_KEYS
from ragproof_core.store import RunStore
from tests.assets.expected import RECORDED
from tests.conftest import REPO

DATASET, CONFIG = str(RECORDED / "cases.jsonl"), str(RECORDED / "ragproof.toml")


@pytest.fixture
def suites(tmp_path, monkeypatch):
    path = tmp_path / "suites.toml"
    path.write_text(
        f'[[suite]]\nname = "recorded"\ndataset = "{DATASET}"\nconfig_file = "{CONFIG}"\n'
        'cron = "30 6 * * MON-FRI"\ntimezone = "Europe/Paris"\n\n'
        # Paths read from the environment when the run starts (CONTRACT section 28).
        '[[suite]]\nname = "recorded_k3"\ndataset = "${RECORDED_DIR}/cases.jsonl"\n'
        'config_file = "${RECORDED_DIR}/ragproof.toml"\nk = 3\n'
    )
    monkeypatch.setenv("RAGPROOF_SUITES", str(path))
    monkeypatch.setenv("RECORDED_DIR", str(RECORDED))
    return path


def test_each_suite_has_its_schedule(suites):
    loaded = location()
    schedules = {s.name: s for s in loaded.schedules}
    assert set(schedules) == {"ragproof_recorded", "ragproof_recorded_k3"}
    timed, untimed = schedules["ragproof_recorded"], schedules["ragproof_recorded_k3"]
    assert (timed.cron_schedule, timed.execution_timezone, timed.default_status) == (
        "30 6 * * MON-FRI",
        "Europe/Paris",
        dg.DefaultScheduleStatus.RUNNING,
    )
    # No cron: at 02:00 UTC once someone turns it on.
    assert (untimed.cron_schedule, untimed.execution_timezone, untimed.default_status) == (
        "0 2 * * *",
        "UTC",
        dg.DefaultScheduleStatus.STOPPED,
    )
    assert {s.job_name for s in loaded.schedules} == {"evaluate"}
    # The command line's definitions read no suites file.
    assert not defs.schedules
    dg.Definitions.validate_loadable(loaded)


def test_a_tick_is_a_new_partition_and_a_run_that_succeeds(suites, store_path):
    loaded = location()
    schedule = next(s for s in loaded.schedules if s.name == "ragproof_recorded_k3")
    with dg.instance_for_test() as instance:
        context = dg.build_schedule_context(
            instance=instance, repository_def=loaded.get_repository_def()
        )
        (request,) = schedule.evaluate_tick(context).run_requests
        assert instance.get_dynamic_partitions(evaluation_runs.name) == [request.partition_key]
        assert request.run_key == request.partition_key
        assert request.tags["ragproof/suite"] == "recorded_k3"
        assert request.tags["ragproof/source"] == "schedule"
        assert request.run_config == {
            "ops": {
                "eval_dataset": {
                    "config": {
                        "dataset": "${RECORDED_DIR}/cases.jsonl",
                        "config_file": "${RECORDED_DIR}/ragproof.toml",
                        "k": 3,
                        "tags": {"suite": "recorded_k3"},
                        "name": "recorded_k3",
                    }
                }
            }
        }
        result = loaded.resolve_job_def("evaluate").execute_in_process(
            run_config=request.run_config, instance=instance, partition_key=request.partition_key
        )
        assert result.success
        # A ragproof run named after the suite and tagged with it (CONTRACT section 30).
        record = RunStore(store_path).get_run(request.partition_key)
        assert (record.name, record.tags) == ("recorded_k3", {"suite": "recorded_k3"})
        assert record.dataset == "${RECORDED_DIR}/cases.jsonl"
        # What ${NAME} read is a secret of the run: the manifest keeps the path as written.
        manifest = RunStore(store_path).read_manifest(request.partition_key)
        assert manifest["dataset_path"] == "${RECORDED_DIR}/cases.jsonl"


def test_a_bad_suites_file_fails_the_load_in_one_line(tmp_path, monkeypatch):
    path = tmp_path / "suites.toml"
    path.write_text('[[suite]]\nname = "nightly"\ndataset = "a.jsonl"\nk = true\n')
    monkeypatch.setenv("RAGPROOF_SUITES", str(path))
    with pytest.raises(ConfigError) as err:
        location()
    assert str(err.value) == f"{path}: suite #1 (nightly): run.k: expected an integer, got true"


def test_no_suites_file_no_schedule(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no data/suites.toml here
    monkeypatch.delenv("RAGPROOF_SUITES", raising=False)
    assert not location().schedules
    # Named but missing: a mistake, said as the location loads.
    monkeypatch.setenv("RAGPROOF_SUITES", "elsewhere.toml")
    with pytest.raises(ConfigError, match="elsewhere.toml: no such suites file"):
        location()


def test_the_shipped_suites_file_loads(monkeypatch):
    monkeypatch.chdir(REPO)
    monkeypatch.delenv("RAGPROOF_SUITES", raising=False)
    assert [s.name for s in location().schedules] == ["ragproof_demo"]


def test_a_suite_takes_what_the_launch_form_takes():
    assert tuple(EvalRunConfig.model_fields) == (*LAUNCH_KEYS, *RUN_KEYS)
