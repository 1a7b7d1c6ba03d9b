"""Sharded runs with conversations (CONTRACT sections 8 and 16): the same judged results
as the unsharded run, and every conversation (its turns and its own row) in one shard."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from tests.conftest import FIXTURES
from tests.support.cli import cli_env, ragproof

CONVERSATIONS = FIXTURES / "conversations"


def _rows(store: Path, sql: str, params: list) -> list[tuple]:
    with duckdb.connect(str(store / "ragproof.duckdb"), read_only=True) as con:
        return con.execute(sql, params).fetchall()


def _outputs(store: Path, run_id: str) -> list[tuple]:
    """The run's outputs rows (its shards' files, or its one table) but for run_id."""
    files = str(store / "runs" / run_id / "outputs*.parquet")
    return duckdb.sql(
        f"select * exclude (run_id) from read_parquet('{files}') order by case_id"
    ).fetchall()


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


@pytest.mark.slow
def test_recorded_conversations_without_a_judge_sharded_equal_unsharded(
    store_path: Path, tmp_path: Path
):
    """Scored from columns (run.turn_replay): a recording whose failed turns have later
    turns makes each shard write the outputs it replays; one whose failures end their
    conversations is the outputs table itself."""
    env = cli_env()
    results = (
        "select case_id, metric, status, value, reason from case_results "
        "where run_id = ? order by case_id, metric"
    )
    retention = (
        "select case_id, status, reason from case_results "
        "where run_id = ? and metric = 'conversation.knowledge_retention' order by case_id"
    )
    found = {}
    for fixture, dataset in (("turn_replay", "cases.jsonl"), ("conversations", "mixed.jsonl")):
        config = tmp_path / f"{fixture}.toml"
        config.write_text(
            "[adapter]\n"
            'target = "ragproof_core.adapters.recorded:RecordedAdapter"\n'
            f"options = {{ path = {json.dumps(str(FIXTURES / fixture / 'outputs.jsonl'))} }}\n",
            encoding="utf-8",
        )
        args = ("run", "--dataset", str(FIXTURES / fixture / dataset), "--config", str(config))
        one = ragproof(*args, "--json", env=env)
        three = ragproof(*args, "--shards", "3", "--json", env=env)
        assert one.returncode == 0, one.stderr
        assert three.returncode == 0, three.stderr
        run_one, run_three = json.loads(one.stdout)["run_id"], json.loads(three.stdout)["run_id"]
        assert _rows(store_path, results, [run_three]) == _rows(store_path, results, [run_one])
        assert _outputs(store_path, run_three) == _outputs(store_path, run_one)
        shard_outputs = list((store_path / "runs" / run_three).glob("outputs-shard-*.parquet"))
        found[fixture] = (_rows(store_path, retention, [run_three]), len(shard_outputs))
    assert found["turn_replay"] == (
        [
            ("c1", "error", "turn 2 failed: upstream timed out"),
            ("c2", "not_applicable", "a one-turn conversation has no earlier turn to retain"),
            ("c3", "error", "turn 3 failed: no recorded output for case c3#3"),
            ("c4", "skipped", "no judge configured (set RAGPROOF_JUDGE_MODEL)"),
            ("c5", "error", "turn 1 failed: no recorded output for case c5#1"),
            ("c6", "error", "turn 1 failed: rate limited"),
        ],
        3,
    )
    assert found["conversations"] == (
        [
            ("c1", "skipped", "no judge configured (set RAGPROOF_JUDGE_MODEL)"),
            ("c2", "not_applicable", "a one-turn conversation has no earlier turn to retain"),
        ],
        0,
    )
