"""A judged `ragproof run` killed with SIGKILL part-way, then run again: the judge
cache kept every verdict already paid for, so the re-run asks the judge only the
questions the killed run had not got answers to, and the killed run never shows
in the views. On a local store (SQLite cache) and an S3 store (cache segments
flushed every few seconds)."""

from __future__ import annotations

import json
import signal
import time

import pytest

from tests.faults.conftest import judge_env, plain_run_files
from tests.support.cli import cli_env, ragproof, ragproof_popen
from tests.support.judge_server import JudgeServer

CASES = 40
QUESTIONS = 2 * CASES  # PlainAdapter: answer_relevance and overrefusal per case


def _wait_for_cached_verdicts(store, proc, at_least: int, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if len(store.cache_rows()) >= at_least:
            return
        assert proc.poll() is None, proc.communicate()[1]
        time.sleep(0.05)
    raise AssertionError("the run never cached a verdict")


@pytest.mark.slow
def test_a_killed_judged_run_rerun_pays_only_for_the_questions_not_cached(any_store, tmp_path):
    store = any_store
    dataset, config = plain_run_files(tmp_path, CASES, concurrency=2)
    args = ("run", "--dataset", str(dataset), "--config", str(config), "--json")
    with JudgeServer(latency_s=0.2) as server:
        env = cli_env(**judge_env(server.url))

        proc = ragproof_popen(*args, env=env)
        try:
            _wait_for_cached_verdicts(store, proc, at_least=6)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        cached = len(store.cache_rows())  # final: nobody writes the cache any more
        assert 6 <= cached < QUESTIONS
        (killed,) = store.run_folders()

        # The re-run needs no slow judge to prove what it asks for.
        server.reset()
        server.latency_s = 0.0
        done = ragproof(*args, env=env)

        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert result["status"] == "completed"
        assert server.request_count == QUESTIONS - cached

    run_id = result["run_id"]
    assert run_id != killed
    assert store.query(
        "select run_id, status, cases, judge_requests, cache_hits from runs "
        "where status = 'completed'"
    ) == [(run_id, "completed", CASES, QUESTIONS - cached, cached)]
    # CONTRACT section 29: the killed run is listed (running, then interrupted once its
    # heartbeat is 15 s old), with none of its files in any other view.
    assert store.query(
        f"select status in ('running', 'interrupted') from runs where run_id = '{killed}'"
    ) == [(True,)]
    assert store.has_file(killed, "manifest.json")
    assert not store.has_file(killed, "run.parquet")
    for view in ("case_results", "metric_summaries"):
        assert store.query(f"select distinct run_id from {view}") == [(run_id,)]
    # Cached and fresh verdicts score alike: every judged question of the re-run is scored.
    assert store.query(
        "select metric, status, value, count(*) from case_results "
        "where metric in ('generation.answer_relevance', 'robustness.overrefusal') "
        "group by all order by metric",
    ) == [
        ("generation.answer_relevance", "scored", 1.0, CASES),
        ("robustness.overrefusal", "scored", 0.0, CASES),
    ]
    keys = store.cache_rows()
    assert len(keys) == len(set(keys)) == QUESTIONS
