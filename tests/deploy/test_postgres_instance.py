"""ragproof on a Postgres-backed Dagster instance: Debian's PostgreSQL on loopback, the
instance from deploy/dagster.yaml (the file docs/deploy.md shows), `dagster-postgres`.

`ragproof run` with its shard steps in processes of their own, each opening the instance
from Postgres; two runs at once; a run killed mid-way, then re-executed from failure.
(The UI launch path, the sensors and the schedule on this instance, driven by Dagster's
own daemon: test_postgres_daemon.py.)"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import dagster as dg
import pytest

from ragproof_cli.execution import evaluate_in_process_job_def
from tests.conftest import FIXTURES
from tests.deploy.conftest import events_of, wait_until
from tests.support.cli import REPO, cli_env, ragproof, ragproof_popen

pytestmark = [pytest.mark.deployment, pytest.mark.slow, pytest.mark.xdist_group(__name__)]

RECORDED = FIXTURES / "recorded"
RUN = (
    "run",
    "--dataset",
    str(RECORDED / "cases.jsonl"),
    "--config",
    str(RECORDED / "ragproof.toml"),
)
Event = dg.DagsterEventType


def _run(env: dict[str, str], *extra: str) -> dict:
    done = ragproof(*RUN, *extra, "--json", env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _dagster_run(instance: dg.DagsterInstance, partition: str) -> dg.DagsterRun:
    (run,) = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/partition": partition}))
    return run


def _stored_runs(env: dict[str, str]) -> dict[str, str]:
    done = ragproof("runs", "--json", env=env)
    assert done.returncode == 0, done.stderr
    return {run["run_id"]: run["status"] for run in json.loads(done.stdout)}


def test_a_sharded_run_records_its_run_events_partition_and_checks_in_postgres(pg_home, tmp_path):
    env = cli_env(**pg_home.env(), RAGPROOF_STORE=str(tmp_path / "store"))
    result = _run(env, "--shards", "2")
    assert result["status"] == "completed"

    # Nothing of Dagster's is kept in the home's folder: runs, events, schedules,
    # partitions all went to Postgres.
    assert sorted(p.name for p in pg_home.path.rglob("*.db")) == []
    with dg.DagsterInstance.get() as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
        assert instance.get_dynamic_partitions("evaluation_runs") == [result["run_id"]]
        run = _dagster_run(instance, result["run_id"])
        assert run.status == dg.DagsterRunStatus.SUCCESS
        started = events_of(instance, run.run_id, Event.STEP_START)
        succeeded = {e.step_key for e in events_of(instance, run.run_id, Event.STEP_SUCCESS)}
        # Every step succeeded, the two shards among them, each in a process of its own
        # that wrote its events to Postgres.
        assert succeeded == {e.step_key for e in started}
        assert {key for key in succeeded if "evaluate_shard[" in key} == {
            "evaluate_cases.evaluate_shard[shard_0000]",
            "evaluate_cases.evaluate_shard[shard_0001]",
        }
        assert len({e.dagster_event.pid for e in started}) == len(started)
        materialized = events_of(instance, run.run_id, Event.ASSET_MATERIALIZATION)
        assert {e.dagster_event.partition for e in materialized} == {result["run_id"]}
        checks = events_of(instance, run.run_id, Event.ASSET_CHECK_EVALUATION)
        evaluations = [e.dagster_event.event_specific_data for e in checks]
        # The summary step's checks evaluated and recorded (the fixture's one recorded
        # failure in six cases is above the failure-rate threshold).
        passed = {c.check_name: c.passed for c in evaluations}
        assert (passed["no_regression"], passed["failure_rate"]) == (True, False)
        # The queued coordinator deploy/dagster.yaml names (runs the UI, a schedule or a
        # sensor submit wait their turn in Postgres).
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
    assert _stored_runs(env) == {result["run_id"]: "completed"}


def test_two_runs_at_once_each_keep_their_own_runs_and_events(pg_home, tmp_path):
    env = cli_env(**pg_home.env(), RAGPROOF_STORE=str(tmp_path / "store"))
    procs = [ragproof_popen(*RUN, "--shards", "2", "--json", env=env) for _ in range(2)]
    outputs = [proc.communicate(timeout=600) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], [err for _, err in outputs]
    run_ids = {json.loads(out)["run_id"] for out, _ in outputs}
    assert len(run_ids) == 2

    with dg.DagsterInstance.get() as instance:
        runs = {run_id: _dagster_run(instance, run_id) for run_id in run_ids}
        assert {run.status for run in runs.values()} == {dg.DagsterRunStatus.SUCCESS}
        steps = []
        for run in runs.values():
            logs = instance.all_logs(run.run_id)
            # A run's event log holds its own events only.
            assert {e.run_id for e in logs} == {run.run_id}
            kinds = [e.dagster_event_type for e in logs if e.is_dagster_event]
            assert kinds.count(Event.RUN_START) == kinds.count(Event.RUN_SUCCESS) == 1
            steps.append(
                sorted(e.step_key for e in events_of(instance, run.run_id, Event.STEP_SUCCESS))
            )
        assert steps[0] == steps[1]
        assert sorted(instance.get_dynamic_partitions("evaluation_runs")) == sorted(run_ids)
    assert _stored_runs(env) == dict.fromkeys(run_ids, "completed")


def _slow_config(folder: Path) -> Path:
    config = folder / "slow.toml"
    config.write_text(
        '[run]\nconcurrency = 1\n\n[adapter]\ntarget = "tests.support.slow_adapter:SlowAdapter"\n'
        "options = { delay_s = 0.5 }\n",
        encoding="utf-8",
    )
    return config


def test_a_run_killed_mid_way_leaves_its_records_whole_and_is_re_executed_from_failure(
    pg_home, tmp_path, monkeypatch
):
    store = tmp_path / "store"
    env = cli_env(**pg_home.env(), RAGPROOF_STORE=str(store))
    dataset = tmp_path / "cases.jsonl"
    dataset.write_text(
        "".join(json.dumps({"id": f"c{i}", "question": f"q{i}?"}) + "\n" for i in range(30))
    )
    config = _slow_config(tmp_path)
    proc = ragproof_popen(
        "run", "--dataset", str(dataset), "--config", str(config), "--json", env=env
    )
    with dg.DagsterInstance.get() as instance:
        try:
            # Killed once its one shard step (in the command's own process) has begun.
            run = wait_until(
                lambda: next(
                    (
                        r
                        for r in instance.get_runs()
                        if any(
                            "evaluate_shard" in (e.step_key or "")
                            for e in events_of(instance, r.run_id, Event.STEP_START)
                        )
                    ),
                    None,
                ),
                "the shard step to start",
            )
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL

        # What the killed run left: a started run, its events readable and whole up to
        # the kill, a step begun and never ended; in the store, a run not completed
        # (running, or interrupted once its heartbeat is stale: CONTRACT section 29).
        killed = instance.get_run_by_id(run.run_id)
        assert killed.status == dg.DagsterRunStatus.STARTED
        logs = instance.all_logs(run.run_id)
        kinds = [e.dagster_event_type for e in logs if e.is_dagster_event]
        assert kinds.count(Event.RUN_START) == 1
        assert Event.RUN_SUCCESS not in kinds and Event.RUN_FAILURE not in kinds
        partition = killed.tags["dagster/partition"]
        assert _stored_runs(env)[partition] in ("running", "interrupted")

        # As Dagster's run monitoring marks a run whose process is gone: failed. Then
        # re-executed from failure, as the UI does: the unfinished steps alone.
        instance.report_run_failed(killed)
        for name, value in {**env, "PYTHONPATH": str(REPO)}.items():
            monkeypatch.setenv(name, value)
        result = dg.execute_job(
            dg.reconstructable(evaluate_in_process_job_def),
            instance=instance,
            reexecution_options=dg.ReexecutionOptions.from_failure(run.run_id, instance),
            tags={"dagster/partition": killed.tags["dagster/partition"]},
        )
        assert result.success
        ran = {e.step_key for e in result.all_events if e.event_type == Event.STEP_SUCCESS}
        assert "eval_dataset" not in ran
        assert "evaluate_cases.summarize_run" in ran
        assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.FAILURE
    assert _stored_runs(env) == {killed.tags["dagster/partition"]: "completed"}
