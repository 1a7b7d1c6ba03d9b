"""Shards on real Celery workers (issue 44, item 4): `ragproof run --shards N` on recorded
cases, the deployment of tests/deploy/ on this machine.

Debian's PostgreSQL (the instance: deploy/dagster.yaml) and Redis (Celery's broker and
result backend) on loopback, ``WORKERS`` Celery worker processes started with
deploy/celery.yaml (`dagster-celery worker start`, one task at a time each), and
``RAGPROOF_EXECUTOR=celery``. Shards 2 and 4 send their shard steps (and the dataset and
summary steps) to the workers; one shard runs every step in the command's own process,
as `ragproof run` does. Each run gets a fresh local store (the workers share this
machine's disk; docs/deploy.md runs them on S3), the default metrics, no judge.

For each shard count: the wall of the command; where the time goes, from the run's
events in Postgres: before the first step (the command's start-up, its preflight of the
input, the run's creation), each step's own seconds (for a step on a worker, from the
worker's start of it: its wait in Celery's queue is the hand-off column), and after the
last step (the command's exit); the fixed cost is every part but the shards' own work.
The 1-minute load is beside each run.

``python -m benchmarks.celery_shards [--cases N] [--shards 1,2,4] [--quick]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

from benchmarks._common import (
    REPO,
    WORK,
    Benchmark,
    Table,
    clean_env,
    count,
    publish,
    run_measured,
    seconds,
    verdict,
)
from benchmarks._synthetic import RecordedRun, write_recorded_run
from tests.support.services import PostgresServer, RedisServer

BENCHMARK = Benchmark(
    title="Shards on Celery workers",
    measures=(
        "`ragproof run --shards N` (1, 2, 4) on 200,000 recorded cases, default metrics, no "
        "judge, with `RAGPROOF_EXECUTOR=celery`: Debian's PostgreSQL as the instance "
        "(deploy/dagster.yaml), Debian's Redis as broker and backend, four Celery worker "
        "processes (deploy/celery.yaml) on this machine, a fresh local store each run. The "
        "wall, and where it goes from the run's events in Postgres: before the first step, "
        "each step (on a worker: from its start there; the wait in Celery's queue apart), "
        "after the last; the run's fixed cost is all but the shards' own work."
    ),
    target="the fixed cost (start-up, preflight, dataset, summary) does not grow with the shards",
    order=45,
    args=("--cases", "200000"),
    in_run_all=False,
)

WORKERS = 4
DEPLOY = REPO / "deploy"


def _start_worker(name: str, env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [str(Path(sys.executable).with_name("dagster-celery")), "worker", "start",
         "-A", "dagster_celery.app", "-y", str(DEPLOY / "celery.yaml"), "-n", f"{name}@%h",
         "--", "--concurrency", "1"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=open(log, "wb"),  # noqa: SIM115
        start_new_session=True,
    )  # fmt: skip


def _stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _wait_ready(logs: list[Path], timeout_s: float = 600) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all(b" ready." in log.read_bytes() for log in logs):
            return
        time.sleep(0.2)
    raise RuntimeError("the Celery workers did not start")


def timeline(env: dict[str, str], partition: str, started_at: float, ended_at: float) -> dict:
    """Where the run's wall went, from its events in the instance ``env`` names."""
    import dagster as dg

    os.environ.update({k: v for k, v in env.items() if k.startswith(("DAGSTER_", "RAGPROOF_"))})
    with dg.DagsterInstance.get() as instance:
        (run,) = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/partition": partition}))
        records = instance.get_records_for_run(run.run_id).records
    events = [r.event_log_entry for r in records if r.event_log_entry.dagster_event]
    submitted, on_worker, start, done = {}, {}, {}, {}
    for entry in events:
        kind, key = entry.dagster_event.event_type_value, entry.step_key
        if kind == "ENGINE_EVENT" and key and entry.user_message.startswith("Submitting celery"):
            submitted[key] = entry.timestamp
        elif kind == "ENGINE_EVENT" and key and "in celery worker" in entry.user_message:
            on_worker[key] = entry.timestamp
        elif kind == "STEP_START":
            start[key] = entry.timestamp
        elif kind in ("STEP_SUCCESS", "STEP_FAILURE"):
            done[key] = entry.timestamp
    steps = {}
    for key in done:
        began = on_worker.get(key, start[key])
        steps[key] = {
            "own": done[key] - began,
            "queue": on_worker[key] - submitted[key] if key in on_worker else 0.0,
        }
    first = min(min(submitted.values(), default=float("inf")), min(start.values()))
    return {
        "before": first - started_at,
        "after": ended_at - max(done.values()),
        "steps": steps,
    }


def measure(recorded: RecordedRun, shards: int, env: dict[str, str], folder: Path) -> dict:
    """One run of ``shards`` shards on a fresh store, with workers started for it: a
    worker reads the store from its own environment, so the workers and the command
    must be given the same one."""
    store = folder / f"store-{shards}"
    run_env = {**env, "RAGPROOF_STORE": str(store)}
    with ExitStack() as stack:
        if shards > 1:
            logs = [folder / f"worker-{shards}-{i}.log" for i in range(WORKERS)]
            for i, log in enumerate(logs):
                stack.callback(_stop, _start_worker(f"bench-{shards}-{i}", run_env, log))
            _wait_ready(logs)
        load_before = os.getloadavg()[0]
        started_at = time.time()
        child = run_measured(recorded.run_command("--shards", str(shards)), run_env, REPO, 3600)
        ended_at = time.time()
        load_after = os.getloadavg()[0]
    if child.returncode != 0:
        raise RuntimeError(f"ragproof run --shards {shards} failed:\n{child.stderr[-3000:]}")
    out = json.loads(child.stdout)
    shutil.rmtree(store, ignore_errors=True)
    measured = {
        "wall": child.wall_s,
        "load": (load_before, load_after),
        "means": {name: m.get("mean") for name, m in out["metrics"].items()},
        **timeline(run_env, out["run_id"], started_at, ended_at),
    }
    # Printed as it comes: a later shard count's failure keeps this one's figures.
    print(f"shards {shards}: {json.dumps(measured)}", file=sys.stderr, flush=True)
    return measured


def _part(steps: dict, name: str) -> float:
    return sum(v["own"] for k, v in steps.items() if k.split("[")[0].endswith(name))


def table(runs: dict[int, dict], n: int) -> Table:
    rows = []
    fixed = {}
    for shards, m in runs.items():
        steps = m["steps"]
        shard_own = sorted(
            (v["own"] for k, v in steps.items() if "evaluate_shard[" in k), reverse=True
        )
        queue = max((v["queue"] for v in steps.values()), default=0.0)
        fixed[shards] = (
            m["before"] + m["after"] + _part(steps, "eval_dataset") + _part(steps, "summarize_run")
        )
        rows.append(
            [
                str(shards),
                seconds(m["wall"]),
                seconds(m["before"]),
                seconds(_part(steps, "eval_dataset")),
                seconds(_part(steps, "plan_shards")),
                " / ".join(f"{s:.1f}" for s in shard_own) + " s",
                seconds(_part(steps, "summarize_run")),
                seconds(m["after"]),
                seconds(queue),
                seconds(fixed[shards]),
                f"{m['load'][0]:.1f} / {m['load'][1]:.1f}",
            ]
        )
    base = fixed[min(fixed)]
    grows = max(fixed.values()) / base
    same = len({json.dumps(m["means"], sort_keys=True) for m in runs.values()}) == 1
    return Table(
        f"`ragproof run --shards N` on {count(n)} recorded cases, RAGPROOF_EXECUTOR=celery, "
        f"{WORKERS} workers, Postgres instance",
        [
            "shards",
            "wall",
            "before the first step",
            "eval_dataset",
            "plan_shards",
            "evaluate_shard, each",
            "summarize_run",
            "after the last step",
            "longest wait in Celery's queue",
            "fixed cost",
            "1-min load before / after",
        ],
        rows,
        [
            f"Fixed cost (before + eval_dataset + summarize_run + after) at most "
            f"{grows:.2f}x the smallest shard count's: "
            f"{verdict(grows <= 1.25)} (target: does not grow with the shard count; 1.25x "
            "allowed for a shared machine).",
            "One shard runs every step in the command's process (no Celery): its hand-off "
            "is 0. On a worker, a step's own seconds run from the worker's start of it.",
            f"Every run's metric means identical: {same}.",
        ],
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200_000)
    parser.add_argument("--shards", default="1,2,4")
    parser.add_argument("--quick", action="store_true", help="2,000 cases")
    parser.add_argument("--emit", type=Path)
    args = parser.parse_args(argv)
    n = 2_000 if args.quick else args.cases
    recorded = write_recorded_run(WORK / f"shards-{n}", n)
    folder = Path(tempfile.mkdtemp(prefix="celery-shards-", dir=WORK))
    runs: dict[int, dict] = {}
    try:
        with ExitStack() as stack:
            postgres = stack.enter_context(PostgresServer())
            redis = stack.enter_context(RedisServer())
            home = folder / "dagster_home"
            home.mkdir()
            shutil.copy(DEPLOY / "dagster.yaml", home / "dagster.yaml")
            env = clean_env(
                DAGSTER_HOME=str(home),
                **postgres.new_database().env(),
                RAGPROOF_EXECUTOR="celery",
                DAGSTER_CELERY_BROKER_URL=redis.url,
                DAGSTER_CELERY_BACKEND_URL=redis.url.rsplit("/", 1)[0] + "/1",
                PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
                PYTHONPATH=str(REPO),
            )
            for shards in (int(s) for s in args.shards.split(",")):
                runs[shards] = measure(recorded, shards, env, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    result = table(runs, n)
    walls = ", ".join(f"{s}: {seconds(m['wall'])}" for s, m in runs.items())
    publish([result], args.emit, headline=f"{count(n)} cases, wall by shards {walls}")


if __name__ == "__main__":
    main()
