"""The store on S3 (moto's server on loopback): two "machines" sharing only the bucket.

Each machine is a `ragproof` process with its own working folder and its own
DAGSTER_HOME; the only thing they share is the bucket. Machine A pays for the
judge, machine B reuses every verdict through the shared segment cache, and a
third process lists and queries both runs. Nothing lands in either working
folder but the Dagster home. Machine B runs in two shards (two step processes),
each reading the shared cache. (SIGKILL on S3: tests/faults/test_kill_rerun.py.)
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.faults.conftest import judge_env, plain_run_files
from tests.support.cli import cli_env, ragproof
from tests.support.judge_server import JudgeServer

CASES = 12
QUESTIONS = 2 * CASES  # PlainAdapter: answer_relevance and overrefusal per case


def _machine(tmp_path: Path, name: str, dataset: Path, config: Path) -> Path:
    """A working folder with its own copy of the inputs and nothing else."""
    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(dataset, folder / dataset.name)
    shutil.copy(config, folder / config.name)
    return folder


def _env(folder: Path, store: str, s3_server, **extra: str) -> dict[str, str]:
    return cli_env(
        RAGPROOF_STORE=store,
        DAGSTER_HOME=str(folder / "dagster_home"),
        **s3_server.env(),
        **extra,
    )


def _ragproof(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return ragproof(*args, env=env, cwd=folder, timeout=300)


def _case_values(folder: Path, env: dict[str, str], run_id: str) -> list[list]:
    query = (
        "SELECT case_id, metric, status, value, reason, judge_raw_json FROM case_results "
        f"WHERE run_id = '{run_id}' ORDER BY case_id, metric"
    )
    done = _ragproof(folder, env, "sql", query, "--json")
    assert done.returncode == 0, done.stderr
    return [list(row.values()) for row in json.loads(done.stdout)]


@pytest.mark.slow
def test_two_machines_share_runs_and_one_judge_cache_through_the_bucket(
    s3_server, tmp_path: Path
) -> None:
    bucket = s3_server.new_bucket()
    store = f"s3://{bucket}/team/store"
    dataset, config = plain_run_files(tmp_path, CASES, concurrency=4)
    a = _machine(tmp_path, "machine_a", dataset, config)
    b = _machine(tmp_path, "machine_b", dataset, config)
    run_args = ("run", "--dataset", dataset.name, "--config", config.name, "--json")

    with JudgeServer() as server:
        env_a = _env(a, store, s3_server, **judge_env(server.url))
        env_b = _env(b, store, s3_server, **judge_env(server.url))
        first = _ragproof(a, env_a, *run_args)
        assert first.returncode == 0, first.stderr
        assert server.request_count == QUESTIONS
        server.reset()
        second = _ragproof(b, env_b, *run_args, "--shards", "2")
        assert second.returncode == 0, second.stderr
        assert server.request_count == 0

    run_a, run_b = json.loads(first.stdout), json.loads(second.stdout)
    assert run_a["judge"]["requests"] == QUESTIONS and run_a["judge"]["cache_hits"] == 0
    assert run_b["judge"]["requests"] == 0 and run_b["judge"]["cache_hits"] == QUESTIONS
    assert run_a["metrics"] == run_b["metrics"]

    # A third process, with neither machine's folder, sees both runs.
    c = tmp_path / "machine_c"
    c.mkdir()
    env_c = _env(c, store, s3_server)
    listed = _ragproof(c, env_c, "runs", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [r["run_id"] for r in json.loads(listed.stdout)] == [run_a["run_id"], run_b["run_id"]]
    rows = _ragproof(
        c,
        env_c,
        "sql",
        "SELECT run_id, status, cases, judge_requests, cache_hits FROM runs ORDER BY started_at",
        "--json",
    )
    assert rows.returncode == 0, rows.stderr
    assert json.loads(rows.stdout) == [
        {
            "run_id": run_a["run_id"],
            "status": "completed",
            "cases": CASES,
            "judge_requests": QUESTIONS,
            "cache_hits": 0,
        },
        {
            "run_id": run_b["run_id"],
            "status": "completed",
            "cases": CASES,
            "judge_requests": 0,
            "cache_hits": QUESTIONS,
        },
    ]
    values_a = _case_values(c, env_c, run_a["run_id"])
    assert len(values_a) == CASES * len(run_a["metrics"])
    assert values_a == _case_values(c, env_c, run_b["run_id"])

    # Nothing on local disk but each machine's inputs and Dagster home.
    for folder in (a, b):
        assert sorted(p.name for p in folder.iterdir()) == sorted(
            [dataset.name, config.name, "dagster_home"]
        )
    assert sorted(p.name for p in c.iterdir()) == ["dagster_home"] or not any(c.iterdir())
    # The bucket holds both runs and the cache segments, and no credential anywhere.
    keys = s3_server.keys(bucket)
    assert all(k.startswith("team/store/") for k in keys)
    assert any(k.startswith("team/store/judge_cache/segments/") for k in keys)
    secrets = (
        "testing-secret-key",
        "testing-key-id",
        "sk-test-dummy",
    )
    client = s3_server.client()
    for key in keys:
        body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        assert not any(s.encode() in body for s in secrets), key
