"""`ragproof sql` (CONTRACT section 7) on a local store; the S3 store is read the same
way in tests/assets/test_s3_store.py."""

from __future__ import annotations

import json

import pytest

from tests.assets.expected import NDCG_C2, RUN_ARGS
from tests.support.cli import ragproof


def test_sql_reads_the_views_as_a_table_and_as_json(store_path):
    done = ragproof(*RUN_ARGS, "--json")
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]

    rows = ragproof(
        "sql",
        "SELECT metric, scored, errored, mean FROM metric_summaries "
        "WHERE metric IN ('retrieval.mrr', 'retrieval.ndcg_at_k', 'retrieval.precision_at_k', "
        "'retrieval.recall_at_k') ORDER BY metric",
        "--json",
    )
    assert rows.returncode == 0, rows.stderr
    assert json.loads(rows.stdout) == [
        {"metric": "retrieval.mrr", "scored": 2, "errored": 2, "mean": 0.75},
        {
            "metric": "retrieval.ndcg_at_k",
            "scored": 2,
            "errored": 2,
            "mean": pytest.approx((NDCG_C2 + 1) / 2, abs=1e-15),
        },
        {"metric": "retrieval.precision_at_k", "scored": 2, "errored": 2, "mean": 0.2},
        {"metric": "retrieval.recall_at_k", "scored": 2, "errored": 2, "mean": 0.75},
    ]
    table = ragproof("sql", "SELECT run_id, status, cases FROM runs")
    assert table.returncode == 0, table.stderr
    width = len(run_id)
    assert table.stdout.splitlines() == [
        f"{'run_id'.ljust(width)}  status     cases",
        f"{'-' * width}  ---------  -----",
        f"{run_id}  completed  6",
    ]
    metrics = ragproof(
        "sql",
        "SELECT metric, family, higher_is_better, judged FROM metrics "
        "WHERE metric = 'generation.groundedness'",
        "--json",
    )
    assert json.loads(metrics.stdout) == [
        {
            "metric": "generation.groundedness",
            "family": "generation",
            "higher_is_better": True,
            "judged": True,
        }
    ]


def test_sql_refuses_writes_and_bad_queries_with_one_line(store_path, tmp_path):
    assert ragproof(*RUN_ARGS).returncode == 0
    before = sorted(p.relative_to(store_path) for p in store_path.rglob("*"))
    target = tmp_path / "out.csv"
    for query, message in [
        (
            f"COPY (SELECT * FROM runs) TO '{target}'",
            "only read-only queries (SELECT) are allowed, got COPY",
        ),
        ("DROP VIEW runs", "only read-only queries (SELECT) are allowed, got DROP"),
        ("SELECT 1; SELECT 2", "give exactly one statement, got 2"),
    ]:
        done = ragproof("sql", query)
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr == f"ragproof: sql: {message}\n"
    bad = ragproof("sql", "SELECT nope FROM runs")
    assert bad.returncode == 1
    assert bad.stderr.startswith('ragproof: sql: Binder Error: Referenced column "nope" not found')
    assert len(bad.stderr.splitlines()) == 1
    assert not target.exists()
    assert sorted(p.relative_to(store_path) for p in store_path.rglob("*")) == before
