"""The Celery executor for real: `dagster-celery` with Debian's `redis-server` as broker and
result backend on loopback, two worker processes started with deploy/celery.yaml, the
instance on Postgres (deploy/dagster.yaml), the store on moto's S3 server, a local judge.

`ragproof run --shards 4` with RAGPROOF_EXECUTOR=celery sends its shard steps to the
workers; an in-process run on the same bucket then makes no judge request and stores the
same results."""

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
            for name in WORKERS:
                log = folder / f"{name}.log"
                wait_until(lambda log=log: b" ready." in log.read_bytes(), f"worker {name}")
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
    sharded = _run(deployment, dataset, config, "--shards", "4")
    assert sharded.returncode == 0, sharded.stderr
    assert deployment.judge.request_count == 2 * 8
    sharded_id = json.loads(sharded.stdout)["run_id"]

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
