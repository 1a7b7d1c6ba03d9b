"""A suite's keep_last (suites.toml, CONTRACT section 31), applied after each of its
runs by ragproof's own location: its runs beyond the newest N leave the store and
Dagster together; another suite's runs stay."""

from __future__ import annotations

import dagster as dg
import pytest

from ragproof_assets.definitions import location
from ragproof_assets.evaluation.partitions import evaluation_runs
from ragproof_assets.evaluation.resources import StoreResource
from ragproof_core.store import RunStore
from tests.assets.expected import RECORDED

DATASET, CONFIG = str(RECORDED / "cases.jsonl"), str(RECORDED / "ragproof.toml")


@pytest.fixture
def loaded(tmp_path, monkeypatch):
    path = tmp_path / "suites.toml"
    path.write_text(
        f'[[suite]]\nname = "kept"\ndataset = "{DATASET}"\nconfig_file = "{CONFIG}"\n'
        "keep_last = 1\n\n"
        f'[[suite]]\nname = "other"\ndataset = "{DATASET}"\nconfig_file = "{CONFIG}"\n'
    )
    monkeypatch.setenv("RAGPROOF_SUITES", str(path))
    return location()


def _scheduled_run(loaded, instance, suite):
    """One tick of the suite's schedule, and its run."""
    schedule = next(s for s in loaded.schedules if s.name == f"ragproof_{suite}")
    context = dg.build_schedule_context(
        instance=instance, repository_def=loaded.get_repository_def()
    )
    (request,) = schedule.evaluate_tick(context).run_requests
    result = loaded.resolve_job_def("evaluate").execute_in_process(
        run_config=request.run_config,
        instance=instance,
        partition_key=request.partition_key,
        tags=request.tags,
    )
    assert result.success
    return request.partition_key, result


def test_no_keep_last_no_sensor(tmp_path, monkeypatch):
    path = tmp_path / "suites.toml"
    path.write_text(f'[[suite]]\nname = "plain"\ndataset = "{DATASET}"\n')
    monkeypatch.setenv("RAGPROOF_SUITES", str(path))
    assert not [s for s in location().sensors if s.name.startswith("ragproof_keep_last")]


def test_a_suites_runs_beyond_keep_last_go_after_its_run(loaded, store_path):
    sensors = {s.name: s for s in loaded.sensors if s.name.startswith("ragproof_keep_last")}
    assert set(sensors) == {"ragproof_keep_last", "ragproof_keep_last_after_failure"}
    assert {s.default_status for s in sensors.values()} == {dg.DefaultSensorStatus.RUNNING}
    dg.Definitions.validate_loadable(loaded)
    with dg.instance_for_test() as instance:
        old, _ = _scheduled_run(loaded, instance, "kept")
        other, _ = _scheduled_run(loaded, instance, "other")
        new, result = _scheduled_run(loaded, instance, "kept")
        run = instance.get_run_by_id(result.run_id)
        context = dg.build_run_status_sensor_context(
            sensor_name="ragproof_keep_last",
            dagster_event=result.get_run_success_event(),
            dagster_instance=instance,
            dagster_run=run,
            resources={"store": StoreResource(root=str(store_path))},
        )
        sensors["ragproof_keep_last"](context)

        store = RunStore(store_path)
        assert {r.run_id for r in store.list_runs()} == {other, new}
        assert sorted(instance.get_dynamic_partitions(evaluation_runs.name)) == sorted([other, new])
        assert not instance.get_runs(filters=dg.RunsFilter(tags={"dagster/partition": old}))
        assert instance.get_runs(filters=dg.RunsFilter(tags={"dagster/partition": new}))

        # A run of the suite without keep_last removes nothing.
        other_run = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/partition": other}))[0]
        skipped = sensors["ragproof_keep_last"](
            dg.build_run_status_sensor_context(
                sensor_name="ragproof_keep_last",
                dagster_event=result.get_run_success_event(),
                dagster_instance=instance,
                dagster_run=other_run,
                resources={"store": StoreResource(root=str(store_path))},
            )
        )
        assert isinstance(skipped, dg.SkipReason)
        assert {r.run_id for r in store.list_runs()} == {other, new}
