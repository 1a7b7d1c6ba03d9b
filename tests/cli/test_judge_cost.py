"""A judge's cost: a budget nothing can price is bad input for every judge-using
command; an unpriced judge's cost is reported as unknown, never $0; a model
LiteLLM knows is priced by LiteLLM's own map. Real LiteLLM to the local judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.assets.expected import RUN_ARGS, UNPRICED_BUDGET
from tests.conftest import FIXTURES
from tests.support.cli import cli_env, ragproof
from tests.support.snapshot import tree_bytes

QUESTIONS = 15  # the recorded fixture's judge questions (test_cli_judge.py)
CORPUS = str(FIXTURES / "generation" / "corpus.jsonl")
UNKNOWN = (
    "cost unknown (no price for the judge model: set RAGPROOF_JUDGE_INPUT_COST_PER_MTOK "
    "and RAGPROOF_JUDGE_OUTPUT_COST_PER_MTOK)"
)


@pytest.fixture
def unpriced(server):
    """The local judge under a model name LiteLLM has no price for, and no price variables."""
    server.reset()
    return cli_env(
        RAGPROOF_JUDGE_MODEL="openai/judge-test",
        RAGPROOF_JUDGE_API_BASE=server.url,
        OPENAI_API_KEY="sk-test",
    )


def test_a_budget_nothing_can_price_is_refused_before_anything_runs(
    server, unpriced, store_path, tmp_path
):
    env = {**unpriced, "RAGPROOF_MAX_COST_USD": "1"}
    before = tree_bytes(store_path)
    out = tmp_path / "generated.jsonl"
    commands = [
        RUN_ARGS,
        ("generate", "qa", "--corpus", CORPUS, "--out", str(out), "--count", "2"),
        ("calibrate",),
    ]
    for command in commands:
        done = ragproof(*command, env=env)
        assert (done.returncode, done.stderr) == (1, f"ragproof: {UNPRICED_BUDGET}\n"), command
    assert server.request_count == 0
    assert tree_bytes(store_path) == before and not out.exists()


def test_an_unpriced_judge_reports_its_cost_as_unknown(server, unpriced):
    done = ragproof(*RUN_ARGS, "--json", env=unpriced)
    assert done.returncode == 0, done.stderr
    judge = json.loads(done.stdout)["judge"]
    assert (judge["requests"], judge["cost_usd"]) == (QUESTIONS, None)
    assert {row["cost_usd"] for row in judge["usage"]} == {None}
    run_id = json.loads(done.stdout)["run_id"]

    shown = ragproof("show", run_id, env=unpriced).stdout
    (judge_line,) = [line for line in shown.splitlines() if line.startswith("judge: ")]
    tokens = f"tokens {judge['input_tokens']} in / {judge['output_tokens']} out"
    assert judge_line.endswith(f"{tokens}, {UNKNOWN}; case failures 2")
    assert "$0.0000" not in shown
    shown_json = json.loads(ragproof("show", run_id, "--json", env=unpriced).stdout)
    assert shown_json["run"]["cost_usd"] is None
    # the cost column, before config and tags
    assert ragproof("runs", env=unpriced).stdout.splitlines()[2].split()[-3] == "unknown"
    report = ragproof("report", run_id, env=unpriced).stdout.strip()
    assert '"cost_usd":null' in Path(report).read_text(encoding="utf-8")


def test_litellm_prices_a_model_it_knows_so_a_budget_is_accepted(server, unpriced):
    from ragproof_core.judge.pricing import litellm_cost_map

    entry = litellm_cost_map()["gpt-4o-mini"]
    env = {**unpriced, "RAGPROOF_JUDGE_MODEL": "openai/gpt-4o-mini", "RAGPROOF_MAX_COST_USD": "1"}
    done = ragproof(*RUN_ARGS, "--json", env=env)
    assert done.returncode == 0, done.stderr
    judge = json.loads(done.stdout)["judge"]
    # The server reports usage (100 in, 20 out) per request.
    per_call = 100 * entry["input_cost_per_token"] + 20 * entry["output_cost_per_token"]
    assert judge["requests"] == QUESTIONS
    assert judge["cost_usd"] == pytest.approx(QUESTIONS * per_call, rel=1e-9)
