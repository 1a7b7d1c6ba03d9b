"""Two judged `ragproof run`s started together on one store and one judge server:
both complete with every row, and they share the judge cache safely.

Neither run waits for the other's in-flight questions, so when both ask the same
question at the same moment both pay for it (the cache then holds one reply: the
key is the primary key, and the second write replaces the first with an
identical verdict). The judge therefore sees between one and two requests per
distinct question, never more, and the cache never holds a key twice.

The Dagster home is initialised before the two runs start: two `ragproof run`s
that both find a fresh DAGSTER_HOME race to create Dagster's SQLite schemas and
one may crash (UNIQUE constraint failed: alembic_version.version_num), a known
bug reported separately; this test is about the store and the judge cache.

On an S3 store the cache is segments: a question both runs paid for is a row in
each run's segment (same verdict), so rows equal requests; keys stay distinct."""

from __future__ import annotations

import json

import dagster as dg
import pytest

from ragproof_cli.instance import ensure_dagster_home
from ragproof_core.metrics.registry import METRIC_NAMES
from tests.faults.conftest import judge_env, plain_run_files
from tests.support.cli import cli_env, ragproof_popen
from tests.support.judge_server import JudgeServer

CASES = 12
QUESTIONS = 2 * CASES  # PlainAdapter: answer_relevance and overrefusal per case
ROWS_PER_RUN = CASES * len(METRIC_NAMES)


@pytest.mark.slow
def test_two_judged_runs_at_once_both_keep_every_row_and_share_the_cache(any_store, tmp_path):
    query = any_store.query
    ensure_dagster_home()
    with dg.DagsterInstance.get():
        pass
    dataset, config = plain_run_files(tmp_path, CASES, concurrency=4)
    args = ("run", "--dataset", str(dataset), "--config", str(config), "--json")
    with JudgeServer(latency_s=0.05) as server:
        env = cli_env(**judge_env(server.url))
        procs = [ragproof_popen(*args, env=env), ragproof_popen(*args, env=env)]
        outs = [p.communicate(timeout=300) for p in procs]
        requests = server.request_count

    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    results = [json.loads(out) for out, _ in outs]
    assert [r["status"] for r in results] == ["completed", "completed"]
    run_ids = sorted(r["run_id"] for r in results)
    assert run_ids[0] != run_ids[1]

    assert query("select run_id, count(*) from case_results group by 1 order by 1") == [
        (run_ids[0], ROWS_PER_RUN),
        (run_ids[1], ROWS_PER_RUN),
    ]
    # Every judged question of both runs was answered, none lost to a locked cache.
    assert query(
        "select metric, status, count(*) from case_results "
        "where metric in ('generation.answer_relevance', 'robustness.overrefusal') "
        "group by all order by metric",
    ) == [
        ("generation.answer_relevance", "scored", 2 * CASES),
        ("robustness.overrefusal", "scored", 2 * CASES),
    ]

    keys = any_store.cache_rows()
    assert len(set(keys)) == QUESTIONS
    if any_store.kind == "local":
        assert len(keys) == QUESTIONS  # the key is SQLite's primary key
    else:
        assert len(keys) == requests  # each segment row is one paid reply, none lost
    assert QUESTIONS <= requests <= 2 * QUESTIONS
    # Each run either asked or hit the cache for every question, and the judge saw
    # exactly the requests the two runs record.
    ledgers = query("select judge_requests, cache_hits from runs order by run_id")
    assert [paid + hits for paid, hits in ledgers] == [QUESTIONS, QUESTIONS]
    assert sum(paid for paid, _ in ledgers) == requests
