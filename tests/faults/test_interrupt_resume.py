"""Signals, a killed run and `run --resume` through the installed command (CONTRACT
section 29): real SIGTERM, SIGINT and SIGKILL sent to `ragproof run` against a slow
adapter, and the resumed run's numbers compared with a run never stopped."""

from __future__ import annotations

import json
import re
import signal
import time
from pathlib import Path

import pytest

from tests.support.cli import cli_env, ragproof, ragproof_exec_popen

CASES = 240
INTERRUPTED = re.compile(
    r"ragproof: interrupted: run (\S+) kept (\d+) of (\d+) cases; "
    r"ragproof run --resume \1 continues it"
)
SUMMARY = "metric, mean, p50, p95, scored, skipped, errored, not_applicable, judge_errors"


@pytest.fixture(scope="module")
def slow(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("interrupt")
    with open(folder / "cases.jsonl", "w", encoding="utf-8") as out:
        for i in range(CASES):
            row = {"id": f"c{i:03d}", "question": f"q{i}?", "kind": "qa"}
            out.write(json.dumps({**row, "expected_source_ids": ["x1"]}) + "\n")
    (folder / "ragproof.toml").write_text(
        '[adapter]\ntarget = "tests.support.slow_adapter:SlowAdapter"\n'
        "options = {delay_s = 0.1}\n[run]\nconcurrency = 2\n",
        encoding="utf-8",
    )
    env = cli_env(RAGPROOF_STORE=str(folder / "store"), DAGSTER_HOME=str(folder / "home"))
    for name in ("RAGPROOF_JUDGE_MODEL", "RAGPROOF_JUDGE_API_BASE"):
        env.pop(name, None)
    (folder / "home").mkdir()
    args = ["--dataset", str(folder / "cases.jsonl"), "--config", str(folder / "ragproof.toml")]
    whole = ragproof("run", *args, "--json", env=env)
    assert whole.returncode == 0, whole.stderr
    return {"folder": folder, "env": env, "args": args, "whole": json.loads(whole.stdout)}


def sql(env: dict, query: str) -> list[dict]:
    done = ragproof("sql", query, "--json", env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def started(store: Path, before: set[str], timeout_s: float = 120) -> str:
    """The new run's id once it is in the catalog and its manifest written."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        runs = {p.parent.name for p in store.glob("runs/*/manifest.json")} - before
        for run_id in runs:
            if list((store / "catalog" / "log" / "runs").glob(f"{run_id}~*.parquet")):
                return run_id
        time.sleep(0.1)
    raise AssertionError("the run never started")


def stopped(slow: dict, signum: int, *extra: str) -> tuple[str, int, str]:
    store = slow["folder"] / "store"
    before = {p.parent.name for p in store.glob("runs/*/manifest.json")}
    proc = ragproof_exec_popen("run", *slow["args"], *extra, env=slow["env"])
    run_id = started(store, before)
    time.sleep(3)  # some cases done, most not
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    return run_id, proc.returncode, err.decode() if isinstance(err, bytes) else err


@pytest.mark.parametrize(
    ("signum", "code", "shards"),
    [(signal.SIGTERM, 143, 1), (signal.SIGINT, 130, 1), (signal.SIGINT, 130, 2)],
    ids=["SIGTERM", "SIGINT", "SIGINT-two-shards"],
)
def test_a_signal_keeps_the_run_and_resume_finishes_it_as_if_never_stopped(
    slow: dict, signum: int, code: int, shards: int
) -> None:
    # Ctrl-C on a run of two shards: each shard's step stops and keeps its cases.
    run_id, returncode, err = stopped(slow, signum, "--shards", str(shards))
    assert returncode == code, err
    line = INTERRUPTED.fullmatch(err.strip().splitlines()[-1])
    assert line is not None, err
    kept, total = int(line.group(2)), int(line.group(3))
    assert (line.group(1), total) == (run_id, CASES)
    assert kept < CASES
    [row] = sql(slow["env"], f"SELECT status, cases FROM runs WHERE run_id = '{run_id}'")
    assert row == {"status": "interrupted", "cases": kept}
    [count] = sql(
        slow["env"],
        f"SELECT count(DISTINCT case_id) AS n FROM case_results WHERE run_id = '{run_id}'",
    )
    assert count["n"] == kept
    resumed = ragproof("run", "--resume", run_id, "--json", env=slow["env"])
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["metrics"] == slow["whole"]["metrics"]
    folder = slow["folder"] / "store" / "runs" / run_id
    assert bool(list(folder.glob("case_results-shard-*.parquet"))) == (shards > 1)
    whole = slow["whole"]["run_id"]
    differ = sql(
        slow["env"],
        f"SELECT count(*) AS n FROM (SELECT {SUMMARY} FROM metric_summaries WHERE run_id = "
        f"'{whole}' EXCEPT SELECT {SUMMARY} FROM metric_summaries WHERE run_id = '{run_id}')",
    )
    assert differ == [{"n": 0}]
    again = ragproof("run", "--resume", run_id, env=slow["env"])
    assert again.returncode == 1
    assert "the run is completed" in again.stderr


def test_a_killed_run_is_listed_interrupted_once_its_heartbeat_is_old(slow: dict) -> None:
    store = slow["folder"] / "store"
    before = {p.parent.name for p in store.glob("runs/*/manifest.json")}
    proc = ragproof_exec_popen("run", *slow["args"], env=slow["env"])
    run_id = started(store, before)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    status = sql(slow["env"], f"SELECT status FROM runs WHERE run_id = '{run_id}'")
    assert status in ([{"status": "running"}], [{"status": "interrupted"}])
    deadline = time.monotonic() + 60
    while status != [{"status": "interrupted"}] and time.monotonic() < deadline:
        time.sleep(2)
        status = sql(slow["env"], f"SELECT status FROM runs WHERE run_id = '{run_id}'")
    assert status == [{"status": "interrupted"}]
    # The dataset changed since: the resume is refused in one line, nothing run.
    dataset = slow["folder"] / "cases.jsonl"
    original = dataset.read_bytes()
    try:
        dataset.write_bytes(original.replace(b"q1?", b"q1 changed?"))
        refused = ragproof("run", "--resume", run_id, env=slow["env"])
        assert refused.returncode == 1
        assert refused.stderr.strip() == (
            f"ragproof: run --resume {run_id}: the dataset {dataset} changed since the run; "
            "resume refused"
        )
    finally:
        dataset.write_bytes(original)
    resumed = ragproof("run", "--resume", run_id, "--json", env=slow["env"])
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["metrics"] == slow["whole"]["metrics"]
