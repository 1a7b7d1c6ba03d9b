"""The Celery executor for real: `dagster-celery` with Debian's `redis-server` as broker and
result backend on loopback, two worker processes started with deploy/celery.yaml, the
instance on Postgres (deploy/dagster.yaml), the store on moto's S3 server, a local judge.

`ragproof run --shards 4` with RAGPROOF_EXECUTOR=celery sends its shard steps to the
workers; an in-process run on the same bucket then makes no judge request and stores the
same results. A worker process killed in the middle of a shard fails that step; the run
re-executed from failure runs that shard and the summary again on the workers, paying
the judge only for what the dead shard had not cached."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from tests.deploy.conftest import DEPLOY, PostgresHome, events_of, postgres_home, wait_until
from tests.faults.conftest import judge_env, write_jsonl
from tests.support.cli import REPO, cli_env, ragproof
from tests.support.judge_server import JudgeServer

pytestmark = [pytest.mark.deployment, pytest.mark.slow, pytest.mark.xdist_group(__name__)]

WORKERS = ("ragproof-w1", "ragproof-w2")
Event = dg.DagsterEventType


@dataclass
class Deployment:
    """What the workers and every run share: the instance, the bucket, the broker, the
    judge; ``env`` is the environment of all of them."""

    home: PostgresHome
    bucket: str
    store: str
    judge: JudgeServer
    env: dict[str, str]
    logs: Path

    def wait_for_workers(self) -> None:
        """Both workers connected and ready. A test calls it once its run is started:
        the run's tasks wait in Redis meanwhile, so the workers' start-up (tens of
        seconds of imports under load) overlaps the command's own."""
        for name in WORKERS:
            log = self.logs / f"{name}.log"
            wait_until(lambda log=log: b" ready." in log.read_bytes(), f"worker {name}")


def _start_worker(name: str, env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [
            str(Path(sys.executable).with_name("dagster-celery")),
            "worker",
            "start",
            "-A",
            "dagster_celery.app",
            "-y",
            str(DEPLOY / "celery.yaml"),
            "-n",
            f"{name}@%h",
            "--",
            "--concurrency",
            "1",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(log, "wb"),  # noqa: SIM115
        start_new_session=True,
    )


@pytest.fixture(scope="module")
def deployment(postgres, redis, s3_server, tmp_path_factory) -> Iterator[Deployment]:
    folder = tmp_path_factory.mktemp("celery")
    home = postgres_home(postgres, folder / "dagster_home")
    bucket = s3_server.new_bucket()
    store = f"s3://{bucket}/store"
    with JudgeServer() as judge:
        env = cli_env(
            **home.env(),
            **s3_server.env(),
            **judge_env(judge.url),
            RAGPROOF_STORE=store,
            RAGPROOF_EXECUTOR="celery",
            DAGSTER_CELERY_BROKER_URL=redis.url,
            DAGSTER_CELERY_BACKEND_URL=redis.url.rsplit("/", 1)[0] + "/1",
            # `dagster-celery worker start` starts `celery` from the PATH.
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        )
        workers = [_start_worker(name, env, folder / f"{name}.log") for name in WORKERS]
        try:
            yield Deployment(home, bucket, store, judge, env, folder)
        finally:
            for worker in workers:
                os.killpg(worker.pid, signal.SIGTERM)
            for worker in workers:
                try:
                    worker.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(worker.pid, signal.SIGKILL)
                    worker.wait()


@pytest.fixture
def instance(deployment, monkeypatch) -> Iterator[dg.DagsterInstance]:
    """The deployment's instance in this process, with the deployment's environment (the
    re-execution below orchestrates from here, as the UI's run worker would)."""
    for name, value in deployment.env.items():
        monkeypatch.setenv(name, value)
    with dg.DagsterInstance.get() as inst:
        yield inst


def _run(deployment: Deployment, dataset: Path, config: Path, *extra: str):
    return ragproof(
        "run", "--dataset", str(dataset), "--config", str(config), "--json", *extra,
        env=deployment.env, timeout=900,
    )  # fmt: skip


def _start_run(dataset: Path, config: Path, env: dict[str, str], *extra: str):
    """`ragproof run` started in a process of its own; ``communicate`` ends it."""
    return subprocess.Popen(
        [str(Path(sys.executable).with_name("ragproof")), "run", "--dataset", str(dataset),
         "--config", str(config), "--json", *extra],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _results(deployment: Deployment, run_id: str) -> list[list]:
    query = (
        "SELECT case_id, metric, status, value, reason FROM case_results "
        f"WHERE run_id = '{run_id}' ORDER BY case_id, metric"
    )
    done = ragproof("sql", query, "--json", env=deployment.env)
    assert done.returncode == 0, done.stderr
    return [list(row.values()) for row in json.loads(done.stdout)]


def _plain_files(folder: Path, questions: list[str]) -> tuple[Path, Path]:
    dataset = write_jsonl(
        folder / "cases.jsonl", [{"id": f"c{i}", "question": q} for i, q in enumerate(questions)]
    )
    config = folder / "plain.toml"
    config.write_text(
        "[run]\nconcurrency = 4\n\n[adapter]\n"
        'target = "tests.support.fault_adapters:PlainAdapter"\n'
    )
    return dataset, config


def _workers_of_steps(instance: dg.DagsterInstance, run_id: str) -> dict[str, str]:
    """Each step of the run that a Celery worker executed, and that worker's name."""
    found = {}
    for event in events_of(instance, run_id, Event.ENGINE_EVENT):
        metadata = event.dagster_event.engine_event_data.metadata
        if "Celery worker" in metadata:
            found[event.step_key] = metadata["Celery worker"].value.split("@")[0]
    return found


def test_shards_run_on_the_workers_and_equal_the_in_process_run_sharing_one_judge_cache(
    deployment, instance, tmp_path
):
    dataset, config = _plain_files(tmp_path, [f"What is question number {i}?" for i in range(8)])
    deployment.judge.reset()
    sharded = _start_run(dataset, config, deployment.env, "--shards", "4")
    deployment.wait_for_workers()
    out, err = sharded.communicate(timeout=900)
    assert sharded.returncode == 0, err
    assert deployment.judge.request_count == 2 * 8
    sharded_id = json.loads(out)["run_id"]

    (run,) = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/partition": sharded_id}))
    assert run.status == dg.DagsterRunStatus.SUCCESS
    on_workers = _workers_of_steps(instance, run.run_id)
    shards = {f"evaluate_cases.evaluate_shard[shard_000{i}]" for i in range(4)}
    # Every step ran on a worker, the four shards among them, none in the command.
    assert shards <= set(on_workers)
    assert set(on_workers.values()) <= set(WORKERS)

    # The same cases in one step in this command's own process, on the same bucket:
    # every verdict comes from the cache the workers filled.
    deployment.judge.reset()
    single = _run(deployment, dataset, config, "--shards", "1")
    assert single.returncode == 0, single.stderr
    assert deployment.judge.request_count == 0
    single_id = json.loads(single.stdout)["run_id"]
    assert _results(deployment, single_id) == _results(deployment, sharded_id)


# Re-execute a failed run from failure (argv: its run id and partition); prints the new
# run's id and its succeeded steps as JSON.
REEXECUTE = """
import json, sys
import dagster as dg
from ragproof_cli.execution import evaluate_job_def
with dg.DagsterInstance.get() as instance:
    result = dg.execute_job(
        dg.reconstructable(evaluate_job_def),
        instance=instance,
        reexecution_options=dg.ReexecutionOptions.from_failure(sys.argv[1], instance),
        tags={"dagster/partition": sys.argv[2]},
    )
    assert result.success
    ran = sorted(e.step_key for e in result.all_events if e.is_step_success)
    print(json.dumps([result.run_id, ran]))
"""


def _cached_verdicts(s3_server, deployment: Deployment) -> int:
    """Rows in the bucket's judge cache segments, read with moto's own client."""
    client = s3_server.client()
    total = 0
    for key in s3_server.keys(deployment.bucket, "store/judge_cache/segments/"):
        body = client.get_object(Bucket=deployment.bucket, Key=key)["Body"].read()
        total += sum(1 for line in body.splitlines() if line.strip())
    return total


def test_a_worker_killed_in_a_shard_is_re_executed_from_failure_paying_only_what_it_missed(
    deployment, instance, s3_server, tmp_path
):
    # Two shards of four cases, one on each worker at once (four shards queued behind the
    # stuck one on two workers, and under load the queue outlasted every wait); shard 1
    # holds c4 to c6, answered and cached, and "kill me", whose worker is killed mid-case.
    # Questions of their own: the module's other test cached its questions' verdicts in
    # the shared judge cache, and a cached case asks the judge nothing.
    questions = [f"Which case is number {i}?" for i in range(7)] + ["kill me?"]
    dataset, config = _plain_files(tmp_path, questions)
    marker = tmp_path / "killed.pid"
    # The adapter's call waits for the kill: no per-call timeout may end it first.
    config.write_text(
        "[run]\nconcurrency = 4\ntimeout_s = 900\n\n[adapter]\n"
        'target = "tests.support.killed_adapter:WaitToBeKilledAdapter"\n'
        f'options = {{ marker = "{marker}" }}\n'
    )
    deployment.judge.reset()
    cached_before = _cached_verdicts(s3_server, deployment)
    proc = _start_run(dataset, config, deployment.env, "--shards", "2")
    deployment.wait_for_workers()
    # Every other case's two verdicts paid for and in the bucket, then the worker dies.
    # At least: a request the loaded machine timed out is asked again.
    wait_until(lambda: marker.exists() and deployment.judge.request_count >= 14, "14 requests")
    wait_until(
        lambda: _cached_verdicts(s3_server, deployment) - cached_before >= 14, "14 cached verdicts"
    )
    os.kill(int(marker.read_text()), signal.SIGKILL)
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 3, err
    failed_id = wait_until(
        lambda: next(
            (r for r in instance.get_runs(filters=dg.RunsFilter(job_name="evaluate"))
             if r.status == dg.DagsterRunStatus.FAILURE),
            None,
        ),
        "the killed run to be marked failed",
    )  # fmt: skip

    deployment.judge.reset()
    # Re-executed from a process of the deployment's own environment, as the UI's run
    # worker would: the code location reads RAGPROOF_EXECUTOR as it loads (this test
    # process imported it before the variable was set).
    reexecute = subprocess.run(
        [sys.executable, "-c", REEXECUTE, failed_id.run_id, failed_id.tags["dagster/partition"]],
        cwd=REPO, env=deployment.env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert reexecute.returncode == 0, reexecute.stderr[-3000:]
    new_run_id, ran = json.loads(reexecute.stdout.splitlines()[-1])
    assert ran == ["evaluate_cases.evaluate_shard[shard_0001]", "evaluate_cases.summarize_run"]
    assert set(_workers_of_steps(instance, new_run_id)) == set(ran)
    # c4 to c6's verdicts were cached before the worker died: only "kill me" asks the judge.
    assert deployment.judge.request_count == 2
    done = ragproof("runs", "--json", env=deployment.env)
    listed = {r["run_id"]: r for r in json.loads(done.stdout)}
    record = listed[failed_id.tags["dagster/partition"]]
    assert record["status"] == "completed"
