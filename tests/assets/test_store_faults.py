"""The store under concurrency and faults, through the real command line:
two runs at once, a run killed with SIGKILL, and reads during a running evaluation,
each on a local store and on an S3 store (moto's server on loopback)."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from ragproof_core.metrics.registry import METRIC_NAMES
from tests.assets.expected import RUN_ARGS
from tests.support.cli import ragproof, ragproof_popen
from tests.support.stores import StoreUnderTest

ROWS = 6 * len(METRIC_NAMES)  # the six cases of RUN_ARGS' dataset, every default metric


def _slow_run_files(tmp_path: Path, cases: int = 200, delay_s: float = 0.5) -> tuple[Path, Path]:
    dataset = tmp_path / "slow.jsonl"
    dataset.write_text(
        "".join(
            json.dumps({"id": f"s{i}", "question": f"question {i}?", "expected_source_ids": ["x1"]})
            + "\n"
            for i in range(cases)
        )
    )
    config = tmp_path / "slow.toml"
    config.write_text(
        "[run]\nconcurrency = 2\n\n[adapter]\n"
        'target = "tests.support.slow_adapter:SlowAdapter"\n'
        f"options = {{ delay_s = {delay_s} }}\n"
    )
    return dataset, config


def _wait_until_evaluating(store: StoreUnderTest, proc, timeout_s: float = 120) -> str:
    """The run id once its dataset is stored, i.e. once cases are being evaluated."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        running = [
            run_id
            for run_id in store.run_folders()
            if store.has_file(run_id, "dataset.parquet")
            and not store.has_file(run_id, "run.parquet")
        ]
        if running:
            return running[0]
        assert proc.poll() is None, proc.stderr.read()
        time.sleep(0.1)
    raise AssertionError("the run never started evaluating")


def _count(store: StoreUnderTest, sql: str):
    return store.query(sql)


@pytest.mark.slow
def test_two_runs_started_at_the_same_moment_both_keep_every_row(any_store):
    first, second = (
        ragproof_popen(*RUN_ARGS, "--json"),
        ragproof_popen(*RUN_ARGS, "--json"),
    )
    outs = [p.communicate(timeout=300) for p in (first, second)]
    assert [p.returncode for p in (first, second)] == [0, 0], [o[1] for o in outs]
    run_ids = sorted(json.loads(o[0])["run_id"] for o in outs)
    assert len(set(run_ids)) == 2
    assert _count(any_store, "select run_id, count(*) from case_results group by 1 order by 1") == [
        (run_ids[0], ROWS),
        (run_ids[1], ROWS),
    ]
    assert _count(any_store, "select count(*) from metric_summaries") == [(2 * len(METRIC_NAMES),)]


@pytest.mark.slow
def test_sigkill_mid_run_leaves_the_store_readable_and_the_next_run_succeeds(any_store, tmp_path):
    dataset, config = _slow_run_files(tmp_path)
    proc = ragproof_popen("run", "--dataset", str(dataset), "--config", str(config))
    killed = _wait_until_evaluating(any_store, proc)
    time.sleep(1.0)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    # The killed run is listed, never completed (CONTRACT section 29: running, then
    # interrupted once its heartbeat is old); none of its rows shows; the store reads.
    assert _count(any_store, "select status in ('running', 'interrupted') from runs") == [(True,)]
    assert _count(any_store, f"select count(*) from case_results where run_id = '{killed}'") == [
        (0,)
    ]

    done = ragproof(*RUN_ARGS, "--json")
    assert done.returncode == 0, done.stderr
    assert _count(any_store, "select count(*) from case_results") == [(ROWS,)]


@pytest.mark.slow
def test_reading_the_views_never_waits_for_a_running_evaluation(any_store, tmp_path):
    assert ragproof(*RUN_ARGS).returncode == 0  # something to read
    # Long enough (100 s) to outlast the reads on a loaded machine; killed at the end.
    dataset, config = _slow_run_files(tmp_path, cases=400, delay_s=0.5)
    proc = ragproof_popen("run", "--dataset", str(dataset), "--config", str(config))
    try:
        _wait_until_evaluating(any_store, proc)
        for _ in range(5):
            assert _count(any_store, "select count(*) from case_results") == [(ROWS,)]
            assert proc.poll() is None  # the reads finished while the run was still going
            time.sleep(0.2)
    finally:
        proc.kill()
        proc.wait(timeout=30)
