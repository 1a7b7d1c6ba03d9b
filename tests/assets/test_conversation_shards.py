"""Sharded runs with conversations (CONTRACT sections 8 and 16): the same judged results
as the unsharded run, and every conversation (its turns and its own row) in one shard."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from tests.conftest import FIXTURES
from tests.support.cli import ragproof

CONVERSATIONS = FIXTURES / "conversations"


def _rows(store: Path, sql: str, params: list) -> list[tuple]:
    with duckdb.connect(str(store / "ragproof.duckdb"), read_only=True) as con:
        return con.execute(sql, params).fetchall()


@pytest.mark.slow
def test_conversations_sharded_equal_unsharded_and_are_never_split(
    judge_env, store_path: Path, tmp_path: Path
):
    config = tmp_path / "ragproof.toml"
    config.write_text(
        "[adapter]\n"
        'target = "ragproof_core.adapters.recorded:RecordedAdapter"\n'
        f"options = {{ path = {json.dumps(str(CONVERSATIONS / 'outputs.jsonl'))} }}\n",
        encoding="utf-8",
    )
    args = ("run", "--dataset", str(CONVERSATIONS / "mixed.jsonl"), "--config", str(config))
    one = ragproof(*args, "--json", env=judge_env)
    three = ragproof(*args, "--shards", "3", "--json", env=judge_env)
    assert one.returncode == 0, one.stderr
    assert three.returncode == 0, three.stderr
    run_one, run_three = json.loads(one.stdout)["run_id"], json.loads(three.stdout)["run_id"]
    results = (
        "select case_id, metric, status, value, reason, judge_raw_json from case_results "
        "where run_id = ? order by case_id, metric"
    )
    assert _rows(store_path, results, [run_three]) == _rows(store_path, results, [run_one])
    summaries = "select * exclude (run_id) from metric_summaries where run_id = ? order by metric"
    assert _rows(store_path, summaries, [run_three]) == _rows(store_path, summaries, [run_one])
    retention = _rows(
        store_path,
        "select case_id, status, value from case_results "
        "where run_id = ? and metric = 'conversation.knowledge_retention' order by case_id",
        [run_three],
    )
    assert retention == [("c1", "scored", 1.0), ("c2", "not_applicable", None)]
    # Three units (s1, c1 with its three turns, c2): one a shard, c1 whole in its own.
    shards = sorted((store_path / "runs" / run_three).glob("case_results-shard-*.parquet"))
    held = [
        sorted(set(pq.read_table(p, columns=["case_id"]).column(0).to_pylist())) for p in shards
    ]
    assert held == [["s1"], ["c1", "c1#1", "c1#2", "c1#3"], ["c2", "c2#1"]]
