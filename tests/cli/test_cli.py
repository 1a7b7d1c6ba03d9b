"""`ragproof` end to end, as a subprocess, on the small recorded dataset."""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb

from ragproof_core.metrics.registry import METRIC_NAMES, REGISTRY
from tests.assets.expected import RUN_ARGS, assert_summary
from tests.support.cli import ragproof


def test_run_json_and_the_three_views(store_path: Path):
    done = ragproof(*RUN_ARGS, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    # CONTRACT section 24 added the adapter's calls by method.
    assert set(out) == {"run_id", "status", "metrics", "judge", "adapter_calls"}
    assert out["adapter_calls"] == {"retrieve": 0, "answer": 0}
    assert out["status"] == "completed"
    # No judge configured: the activity record says so with zero counts, not missing keys.
    assert out["judge"] == {
        "model": None,
        "mode": None,
        "requests": 0,
        "repairs": 0,
        "cache_hits": 0,
        "judge_errors": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": 0.0,
        "models": [],
        "usage": [],
        "agreement": {},
        "first_error": None,
        "response_format": None,
    }
    assert_summary(out["metrics"])

    with duckdb.connect(str(store_path / "ragproof.duckdb"), read_only=True) as con:
        runs = con.execute("select * from runs").df()
        assert list(runs.columns[:10]) == [
            "run_id",
            "dataset",
            "adapter",
            "status",
            "started_at",
            "finished_at",
            "judge_model",
            "prompt_hashes",
            "config_json",
            "cost_usd",
        ]
        assert runs.run_id.tolist() == [out["run_id"]]
        assert runs.adapter.tolist() == ["ragproof_core.adapters.recorded:RecordedAdapter"]

        cases = con.execute(
            "select case_id, metric, status, value, reason from case_results "
            "order by case_id, metric"
        ).fetchall()
        assert len(cases) == 6 * len(METRIC_NAMES)
        by_key = {(c, m): (s, v, r) for c, m, s, v, r in cases}
        assert by_key[("c1", "retrieval.precision_at_k")] == ("scored", 0.2, None)
        assert by_key[("c3", "retrieval.mrr")] == (
            "skipped",
            None,
            "adapter does not expose retrieval",
        )
        assert by_key[("c5", "echo.exact_match")] == ("error", None, "upstream answered 503")
        assert by_key[("c6", "retrieval.mrr")][0] == "error"

        summaries = con.execute(
            "select metric, mean, p50, p95, scored, skipped, errored, not_applicable, judge_errors "
            "from metric_summaries"
        ).df()
        as_json = {
            row.metric: {k: (None if row[k] != row[k] else row[k]) for k in summaries.columns[1:]}
            for _, row in summaries.iterrows()
        }
        assert_summary({m: as_json[m] for m in out["metrics"]})


def test_table_output_then_runs_and_show():
    done = ragproof(*RUN_ARGS)
    assert done.returncode == 0, done.stderr
    assert "retrieval.precision_at_k" in done.stdout and "0.2000" in done.stdout
    assert "abstention 1.0000 (higher is better) | over-refusal 0.0000" in done.stdout
    run_id = done.stdout.split()[1].rstrip(":")

    listed = ragproof("runs", "--json")
    assert [r["run_id"] for r in json.loads(listed.stdout)] == [run_id]
    (row,) = json.loads(listed.stdout)
    assert (row["k"], row["source_match"], row["judge_model"], row["judge_mode"]) == (
        5, "chunk", None, None,
    )  # fmt: skip
    # the default selection also holds the conversation-level metrics
    assert row["metric_count"] == len(METRIC_NAMES) + len(REGISTRY.conversation_names)
    table = ragproof("runs").stdout.splitlines()
    assert table[0].split("  ")[0] == "run id"
    assert table[0].endswith("cases     cost  config    tags")
    assert table[2].startswith(run_id)
    # status, judge errors, cases, cost, config, tags
    assert table[2].split()[-6:] == [
        "completed",
        "0",
        "6",
        "$0.0000",
        row["config_digest"][:8],
        "-",
    ]

    shown = ragproof("show", run_id, "--json")
    assert shown.returncode == 0
    assert_summary(json.loads(shown.stdout)["metrics"])

    missing = ragproof("show", "no-such-run")
    assert missing.returncode == 1 and "no-such-run" in missing.stderr


def test_bad_dataset_exits_1_with_path_and_line_and_changes_nothing(tmp_path, store_path):
    bad = tmp_path / "cases.jsonl"
    bad.write_text('{"id": "a", "question": "q"}\n{"id": "b", "question": "q", "kind": "trivia"}\n')
    before = sorted(os.listdir(store_path))
    done = ragproof("run", "--dataset", str(bad))
    assert done.returncode == 1
    assert done.stderr == (
        f"ragproof: {bad}:2: kind: expected 'qa', 'unanswerable', 'injection' or 'poisoning', "
        'got "trivia"\n'
    )
    assert sorted(os.listdir(store_path)) == before
