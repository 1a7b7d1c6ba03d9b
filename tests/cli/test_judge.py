"""`ragproof run` with a judge: real LiteLLM over HTTP to the local scripted judge.

The recorded fixture asks 15 judge questions with the server's default replies
(tests/support/judge_server.py): c1 and c2 six each (groundedness, citation
support for their cited ids that were retrieved, relevance, completeness,
refusal, context relevance of their retrieved chunks), c3 two (relevance,
refusal for abstention), c4 one (relevance).
"""

from __future__ import annotations

import hashlib
import json
import math

import duckdb
import pytest

from ragproof_core.judge.prompts import PROMPT_NAMES
from tests.assets.expected import RUN_ARGS
from tests.conftest import REPO
from tests.support.cli import ragproof

QUESTIONS = 15
API_KEY = "sk-test-never-stored-7f3a9c"
CALL_COST = 100 * 1.0 / 1e6 + 20 * 2.0 / 1e6  # usage (100, 20) at $1 and $2 per million tokens


@pytest.fixture
def judge_env(judge_env):
    """conftest's, priced at $1 and $2 per million tokens, with a key no output may show."""
    return {
        **judge_env,
        "RAGPROOF_JUDGE_INPUT_COST_PER_MTOK": "1.0",
        "RAGPROOF_JUDGE_OUTPUT_COST_PER_MTOK": "2.0",
        "OPENAI_API_KEY": API_KEY,
    }


def _run(env, *extra):
    done = ragproof(*RUN_ARGS, "--json", *extra, env=env)
    assert done.returncode == 0, done.stderr
    assert API_KEY not in done.stdout + done.stderr
    return json.loads(done.stdout)


def _rows(store, run_id):
    with duckdb.connect(str(store / "ragproof.duckdb"), read_only=True) as con:
        return con.execute(
            "select case_id, metric, status, value, judge_raw_json from case_results "
            "where run_id = ? order by case_id, metric",
            [run_id],
        ).fetchall()


def _run_record(store, run_id):
    with duckdb.connect(str(store / "ragproof.duckdb"), read_only=True) as con:
        return con.execute(
            "select judge_model, prompt_hashes, cost_usd from runs where run_id = ?", [run_id]
        ).fetchall()[0]


@pytest.mark.slow
def test_judged_scores_cache_and_no_cache(server, judge_env, store_path):
    first = _run(judge_env)
    assert server.request_count == QUESTIONS
    metrics = first["metrics"]
    assert (
        metrics["generation.groundedness"]["mean"],
        metrics["generation.groundedness"]["scored"],
    ) == (1.0, 2)
    # c2 cites d9 (retrieved, supported) and d5 (never retrieved: unsupported without asking).
    assert metrics["generation.citation_support"]["mean"] == 0.75
    assert (
        metrics["generation.answer_relevance"]["mean"],
        metrics["generation.answer_relevance"]["scored"],
    ) == (1.0, 4)
    assert (
        metrics["generation.completeness"]["mean"],
        metrics["generation.completeness"]["scored"],
    ) == (1.0, 2)
    assert metrics["robustness.abstention"]["mean"] == 1.0  # the judge's verdict on c3
    assert metrics["robustness.overrefusal"]["mean"] == 0.0
    # The server grades chunks by words shared with the question (2+ relevant, 1 partial):
    # c1 d1 relevant, d2 partial -> 0.75; c2 d9 and d3 relevant -> 1.0.
    assert metrics["retrieval.context_relevance"]["mean"] == 0.875
    assert metrics["retrieval.judged_ndcg_at_k"]["mean"] == 1.0
    # Judge usage per metric (and model): one row each, counting this run's requests.
    usage = {row["metric"]: row for row in first["judge"]["usage"]}
    assert {m: u["requests"] for m, u in usage.items()} == {
        "generation.groundedness": 2,
        "generation.citation_support": 2,
        "generation.answer_relevance": 4,
        "generation.completeness": 2,
        "robustness.abstention": 1,
        "robustness.overrefusal": 2,
        "retrieval.context_relevance": 2,
    }
    assert {u["model"] for u in usage.values()} == {"openai/judge-test"}
    assert math.isclose(usage["retrieval.context_relevance"]["cost_usd"], 2 * CALL_COST)
    assert usage["retrieval.context_relevance"]["input_tokens"] == 200
    assert first["judge"]["models"] == ["openai/judge-test"]
    assert first["judge"]["agreement"] == {}

    model, hashes, cost = _run_record(store_path, first["run_id"])
    assert model == "openai/judge-test"
    prompts_dir = REPO / "ragproof_core" / "judge" / "prompts"
    assert json.loads(hashes) == {
        name: hashlib.sha256((prompts_dir / f"{name}.txt").read_bytes()).hexdigest()
        for name in PROMPT_NAMES
    }
    assert math.isclose(cost, QUESTIONS * CALL_COST, rel_tol=1e-9)

    # An unchanged re-run is served from the cache: no request, identical scores, no cost.
    server.reset()
    second = _run(judge_env)
    assert server.request_count == 0
    assert second["metrics"] == first["metrics"]
    assert _rows(store_path, second["run_id"]) == _rows(store_path, first["run_id"])
    assert _run_record(store_path, second["run_id"])[2] == 0.0

    # --no-cache asks again.
    third = _run(judge_env, "--no-cache")
    assert server.request_count == QUESTIONS
    assert third["metrics"] == first["metrics"]

    # The API key went to the judge in the Authorization header and nowhere else.
    assert all(API_KEY in r.headers.get("Authorization", "") for r in server.requests)
    for path in store_path.rglob("*"):
        if path.is_file():
            assert API_KEY.encode() not in path.read_bytes(), path


def test_dry_run_counts_questions_and_cache_hits_without_calling(server, judge_env, store_path):
    before = ragproof(*RUN_ARGS, "--dry-run", "--json", env=judge_env)
    assert before.returncode == 0, before.stderr
    estimate = json.loads(before.stdout)
    assert (
        estimate["requests"],
        estimate["cached_requests"],
        estimate["requests_to_send"],
    ) == (QUESTIONS, 0, QUESTIONS)
    assert estimate["estimated_cost_usd"] > 0
    assert estimate["estimated_input_tokens"] > 0
    assert estimate["estimated_output_tokens"] == QUESTIONS * 200  # the assumed reply each
    assert server.request_count == 0
    assert not (store_path / "judge_cache.sqlite").exists()  # not even created

    _run(judge_env)
    server.reset()
    cache = {p.name: p.read_bytes() for p in store_path.glob("judge_cache.sqlite*")}
    text = ragproof(*RUN_ARGS, "--dry-run", env=judge_env)
    assert text.returncode == 0, text.stderr
    assert f"judge requests {QUESTIONS}: cached {QUESTIONS}, to send 0" in text.stdout
    assert "estimated tokens to send 0 in / 0 out" in text.stdout
    after = json.loads(ragproof(*RUN_ARGS, "--dry-run", "--json", env=judge_env).stdout)
    assert (
        after["requests"],
        after["cached_requests"],
        after["requests_to_send"],
        after["estimated_input_tokens"],
        after["estimated_cost_usd"],
    ) == (QUESTIONS, QUESTIONS, 0, 0, 0.0)
    assert server.request_count == 0
    # Read, never written.
    assert {p.name: p.read_bytes() for p in store_path.glob("judge_cache.sqlite*")} == cache


def test_without_a_judge_the_judge_metrics_skip_with_their_reason(store_path):
    run_id = json.loads(ragproof(*RUN_ARGS, "--json").stdout)["run_id"]
    with duckdb.connect(str(store_path / "ragproof.duckdb"), read_only=True) as con:
        rows = con.execute(
            "select metric, status, reason, count(*) from case_results "
            "where run_id = ? and status <> 'error' and metric in ('generation.groundedness', "
            "'generation.citation_support', 'generation.answer_relevance', "
            "'generation.completeness') "
            "group by all order by metric",
            [run_id],
        ).fetchall()
    reason = "no judge configured (set RAGPROOF_JUDGE_MODEL)"
    assert rows == [
        ("generation.answer_relevance", "skipped", reason, 4),
        ("generation.citation_support", "skipped", reason, 4),
        ("generation.completeness", "skipped", reason, 4),
        ("generation.groundedness", "skipped", reason, 4),
    ]
