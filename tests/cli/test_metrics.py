"""Metric selection through `ragproof run --metrics` / `[run] metrics` (CONTRACT section 9):
unselected metrics cost no judge call and appear nowhere; a pattern matching nothing is bad
input; compare pairs only the metrics both runs have."""

from __future__ import annotations

import json

import duckdb

from ragproof_core.metrics.registry import METRIC_NAMES
from tests.assets.expected import RECORDED, RUN_ARGS
from tests.support.cli import ragproof

# server and judge_env: tests/assets/conftest.py


def _metrics_in_store(store_path, run_id):
    with duckdb.connect(str(store_path / "ragproof.duckdb"), read_only=True) as con:
        results = con.execute(
            "select distinct metric from case_results where run_id = ? order by metric", [run_id]
        ).fetchall()
        summaries = con.execute(
            "select metric from metric_summaries where run_id = ? order by metric", [run_id]
        ).fetchall()
        config = con.execute("select config_json from runs where run_id = ?", [run_id]).fetchone()
    return [m for (m,) in results], [m for (m,) in summaries], json.loads(config[0])


def test_groundedness_alone_costs_one_request_per_case_with_an_answer_and_context(
    server, judge_env, store_path
):
    done = ragproof(*RUN_ARGS, "--json", "--metrics", "generation.groundedness", env=judge_env)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    # c1 and c2 are the recorded cases with both an answer and a context.
    assert server.request_count == 2
    assert [r.prompt for r in server.requests] == ["groundedness", "groundedness"]
    assert list(out["metrics"]) == ["generation.groundedness"]
    g = out["metrics"]["generation.groundedness"]
    assert (g["mean"], g["scored"], g["skipped"], g["errored"]) == (1.0, 2, 2, 2)
    assert (out["judge"]["requests"], out["judge"]["repairs"], out["judge"]["cache_hits"]) == (
        2,
        0,
        0,
    )
    assert (out["judge"]["input_tokens"], out["judge"]["output_tokens"]) == (200, 40)
    results, summaries, config = _metrics_in_store(store_path, out["run_id"])
    assert results == summaries == ["generation.groundedness"]
    assert config["run"]["metrics"] == ["generation.groundedness"]


def test_patterns_select_a_family_in_registry_order(store_path):
    done = ragproof(*RUN_ARGS, "--json", "--metrics", "robustness.*,retrieval.mrr")
    assert done.returncode == 0, done.stderr
    assert list(json.loads(done.stdout)["metrics"]) == [
        "retrieval.mrr",
        "robustness.injection_resistance",
        "robustness.poisoning_resistance",
        "robustness.leakage_resistance",
        "robustness.exfiltration_resistance",
        "robustness.abstention",
        "robustness.overrefusal",
    ]


def test_the_config_file_selects_too(tmp_path, store_path):
    config = tmp_path / "ragproof.toml"
    config.write_text(
        (RECORDED / "ragproof.toml")
        .read_text()
        .replace("concurrency = 4", 'concurrency = 4\nmetrics = ["echo.*"]')
        .replace('"outputs.jsonl"', json.dumps(str(RECORDED / "outputs.jsonl"))),
        encoding="utf-8",
    )
    done = ragproof(
        "run", "--dataset", str(RECORDED / "cases.jsonl"), "--config", str(config), "--json"
    )
    assert done.returncode == 0, done.stderr
    assert list(json.loads(done.stdout)["metrics"]) == ["echo.exact_match"]


def test_a_pattern_matching_nothing_is_bad_input_listing_the_metrics(store_path):
    done = ragproof(*RUN_ARGS, "--metrics", "retrieval.*,generation.grounded")
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        "ragproof: run.metrics: metric 'generation.grounded' matches no metric "
        "(did you mean 'generation.groundedness'?); metrics: "
    )
    assert lines[0].endswith(", ".join(METRIC_NAMES))
    assert not (store_path / "runs").exists()


def test_dry_run_counts_only_the_selected_metrics_questions(judge_env, server):
    done = ragproof(
        *RUN_ARGS, "--dry-run", "--json", "--metrics", "generation.answer_relevance", env=judge_env
    )
    assert done.returncode == 0, done.stderr
    estimate = json.loads(done.stdout)
    # Relevance is asked of every case with an answer: c1 to c4.
    assert (estimate["requests"], estimate["requests_to_send"], estimate["cached_requests"]) == (
        4,
        4,
        0,
    )
    assert server.request_count == 0


def test_compare_pairs_the_metrics_both_runs_have_and_names_the_rest(store_path):
    a = ragproof(*RUN_ARGS, "--json", "--metrics", "retrieval.*,echo.exact_match")
    b = ragproof(*RUN_ARGS, "--json", "--metrics", "retrieval.mrr,robustness.overrefusal")
    run_a, run_b = (json.loads(done.stdout)["run_id"] for done in (a, b))
    done = ragproof("compare", run_a, run_b, "--json")
    assert done.returncode == 0, done.stderr
    comparison = json.loads(done.stdout)
    assert list(comparison["metrics"]) == ["retrieval.mrr"]
    assert comparison["metrics"]["retrieval.mrr"]["delta"] == 0.0
    assert comparison["metrics_only_in_a"] == [
        "retrieval.precision_at_k",
        "retrieval.recall_at_k",
        "retrieval.ndcg_at_k",
        "retrieval.context_relevance",
        "retrieval.judged_ndcg_at_k",
        "retrieval.hop_recall_at_k",
        "retrieval.hop_precision_at_k",
        "echo.exact_match",
    ]
    assert comparison["metrics_only_in_b"] == ["robustness.overrefusal"]


def test_a_cut_off_per_metric_is_stored_and_shown_beside_the_metric_at_k(store_path):
    """CONTRACT section 19: `retrieval.ndcg_at_k@1` is scored at k = 1 beside
    `retrieval.ndcg_at_k` at run.k = 5; the trec_eval measures are selected by name;
    @N on a metric without a cut-off is bad input, refused before any run exists."""
    bad = ragproof(*RUN_ARGS, "--metrics", "retrieval.mrr@3")
    assert (bad.returncode, bad.stdout) == (1, "")
    assert bad.stderr == (
        "ragproof: run.metrics: metric 'retrieval.mrr@3': retrieval.mrr has no cut-off to set; "
        "@N applies to retrieval.precision_at_k, retrieval.recall_at_k, retrieval.ndcg_at_k, "
        "retrieval.hit_rate_at_k, retrieval.judged_at_k, retrieval.hop_recall_at_k, "
        "retrieval.hop_precision_at_k\n"
    )
    assert not (store_path / "runs").exists()

    chosen = "retrieval.ndcg_at_k@1,retrieval.map,retrieval.ndcg_at_k,retrieval.hit_rate_at_k@1"
    done = ragproof(*RUN_ARGS, "--json", "--metrics", chosen)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    names = ["retrieval.ndcg_at_k", "retrieval.ndcg_at_k@1", "retrieval.map"]
    names.append("retrieval.hit_rate_at_k@1")
    assert list(out["metrics"]) == names
    results, summaries, _ = _metrics_in_store(store_path, out["run_id"])
    assert results == summaries == sorted(names)
    # c1 retrieves its one expected source first, c2 second (tests/fixtures/recorded).
    at_1 = out["metrics"]["retrieval.ndcg_at_k@1"]
    assert (at_1["mean"], at_1["scored"]) == (0.5, 2)
    assert out["metrics"]["retrieval.hit_rate_at_k@1"]["mean"] == 0.5
    # c1: d1 at rank 1 of R = 1; c2: d3 at rank 2 of R = 2, d4 never retrieved.
    assert out["metrics"]["retrieval.map"]["mean"] == (1.0 + (1 / 2) / 2) / 2
