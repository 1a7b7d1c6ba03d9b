"""The deployment's automation on a Postgres-backed instance (deploy/dagster.yaml), driven by
Dagster's own processes: `dagster-daemon run` (the sensor and run-queue daemons, its
code location server, the default run launcher's run workers) and the `dagster` command.

The UI's launch path (the `launch_evaluation` job submitted to the queue, as the
Launchpad submits it), `launch_evaluation_sensor` turning it into an `evaluate` run, and
`trace_sensor` evaluating a new trace file, its cursor kept in Postgres; a suite's schedule
evaluated on the same instance and its run executed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import dagster as dg
import pytest

from ragproof_assets.definitions import location
from ragproof_assets.launch.ui import LAUNCHED_BY_TAG
from ragproof_assets.traces.sensor import TRACE_FILE_TAG
from ragproof_cli.execution import evaluate_job_def
from tests.conftest import FIXTURES
from tests.deploy.conftest import events_of, wait_until
from tests.support.cli import REPO, cli_env, ragproof
from tests.support.otlp import root_span, trace_id, write_traces

pytestmark = [pytest.mark.deployment, pytest.mark.slow, pytest.mark.xdist_group(__name__)]

RECORDED = FIXTURES / "recorded"
LAUNCH_CONFIG = {
    "dataset": str(RECORDED / "cases.jsonl"),
    "config_file": str(RECORDED / "ragproof.toml"),
}
TRACE_METRICS = ["system.latency_s", "generation.citation_validity"]
Event = dg.DagsterEventType


def _bin(name: str) -> str:
    import sys

    return str(Path(sys.executable).with_name(name))


def _dagster(env: dict[str, str], *args: str) -> subprocess.Popen:
    """A `dagster` command started (each loads the workspace in a server of its own,
    seconds of imports: they run side by side); ``_finished`` checks it."""
    return subprocess.Popen(
        [_bin("dagster"), *args, "-w", "workspace.yaml"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _finished(command: subprocess.Popen) -> None:
    out, _ = command.communicate(timeout=600)
    assert command.returncode == 0, out


def _traces(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "traces.toml"
    config.write_text(f"[traces]\nsample = 1.0\nseed = 3\nmetrics = {json.dumps(TRACE_METRICS)}\n")
    folder = tmp_path / "traces"
    folder.mkdir()
    spans = [
        root_span(trace_id(n), f"question {n}?", f"answer {n}", duration_ms=100 * n)
        for n in range(1, 4)
    ]
    write_traces(folder / "a.jsonl", spans)
    return {
        "RAGPROOF_TRACES": str(folder),
        "RAGPROOF_TRACES_CONFIG": str(config),
        "RAGPROOF_TRACES_WORKDIR": str(tmp_path / "traces_work"),
    }


def _succeeded(instance: dg.DagsterInstance, **tags: str) -> dg.DagsterRun | None:
    runs = instance.get_runs(filters=dg.RunsFilter(job_name="evaluate", tags=tags))
    for run in runs:
        assert run.status not in (dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED), run
    return next((run for run in runs if run.status == dg.DagsterRunStatus.SUCCESS), None)


def test_the_daemon_runs_the_launch_path_and_both_sensors_from_postgres(pg_home, tmp_path):
    env = cli_env(**pg_home.env(), RAGPROOF_STORE=str(tmp_path / "store"), **_traces(tmp_path))
    daemon = subprocess.Popen(
        [_bin("dagster-daemon"), "run", "-w", "workspace.yaml"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "daemon.log", "wb"),  # noqa: SIM115
        start_new_session=True,
    )
    try:
        # While the daemon starts: trace_sensor started in the instance's schedule storage
        # (stopped by default; the daemon reads the sensors' states on each of its loops),
        # and the launch job submitted to the run queue as the UI's Launchpad submits it;
        # the daemon's queue launches it, then launch_evaluation_sensor requests its
        # `evaluate` run.
        launch = {"ops": {"request_evaluation": {"config": LAUNCH_CONFIG}}}
        commands = [
            _dagster(env, "sensor", "start", "trace_sensor"),
            _dagster(
                env, "job", "launch", "-j", "launch_evaluation", "--config-json", json.dumps(launch)
            ),
        ]
        for command in commands:
            _finished(command)
        with dg.DagsterInstance.get() as instance:
            (launched,) = instance.get_runs(filters=dg.RunsFilter(job_name="launch_evaluation"))
            from_ui = wait_until(
                lambda: _succeeded(instance, **{LAUNCHED_BY_TAG: launched.run_id}),
                "the launched evaluation to succeed",
            )
            from_traces = wait_until(
                lambda: _succeeded(
                    instance, **{TRACE_FILE_TAG: str(tmp_path / "traces" / "a.jsonl")}
                ),
                "the trace file's evaluation to succeed",
            )
            for run in (from_ui, from_traces):
                checks = events_of(instance, run.run_id, Event.ASSET_CHECK_EVALUATION)
                names = {e.dagster_event.event_specific_data.check_name for e in checks}
                assert names >= {"no_regression", "failure_rate"}
            # Each sensor's ticks and the trace sensor's cursor are in Postgres.
            states = {s.name: s for s in instance.all_instigator_state()}
            assert (
                str(tmp_path / "traces" / "a.jsonl")
                in states["trace_sensor"].instigator_data.cursor
            )
            for name in ("trace_sensor", "launch_evaluation_sensor"):
                ticks = instance.get_ticks(
                    states[name].instigator_origin_id, states[name].selector_id
                )
                assert any(tick.run_ids for tick in ticks), name
            assert {h.daemon_type for h in instance.get_daemon_heartbeats().values()} >= {
                "SENSOR",
                "QUEUED_RUN_COORDINATOR",
            }
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        try:
            daemon.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(daemon.pid, signal.SIGKILL)
            daemon.wait()
    done = ragproof("runs", "--json", env=env)
    assert done.returncode == 0, done.stderr
    listed = {run["run_id"]: run["status"] for run in json.loads(done.stdout)}
    assert listed == {
        from_ui.tags["dagster/partition"]: "completed",
        from_traces.tags["dagster/partition"]: "completed",
    }


def test_the_suites_schedule_adds_its_partition_and_its_run_succeeds_on_postgres(
    pg_home, tmp_path, monkeypatch
):
    suites = tmp_path / "suites.toml"
    suites.write_text(
        f'[[suite]]\nname = "nightly"\ndataset = "{RECORDED / "cases.jsonl"}"\n'
        f'config_file = "{RECORDED / "ragproof.toml"}"\n'
    )
    monkeypatch.setenv("RAGPROOF_SUITES", str(suites))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    loaded = location()
    (schedule,) = loaded.schedules
    with dg.DagsterInstance.get() as instance:
        with dg.build_schedule_context(
            instance=instance, repository_def=loaded.get_repository_def()
        ) as context:
            (request,) = schedule.evaluate_tick(context).run_requests
        assert request.partition_key in instance.get_dynamic_partitions("evaluation_runs")
        result = dg.execute_job(
            dg.reconstructable(evaluate_job_def),
            instance=instance,
            run_config=request.run_config,
            tags={**request.tags, "dagster/partition": request.partition_key},
        )
        assert result.success
        assert instance.get_run_by_id(result.run_id).status == dg.DagsterRunStatus.SUCCESS
