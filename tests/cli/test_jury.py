"""`ragproof run` with a jury of two judge models, `show`, and `compare`'s judge guard.

The local server scripts the two "models" (tests/support/judge_server.py):
``judge-test`` grades a retrieved chunk relevant when it shares 2+ words of 4+
letters with the question and partial at 1; ``judge-strict`` needs 3 and 2.
Every other prompt gets the same default reply from both.

On the recorded fixture (c1 and c2 retrieve two chunks each):
- c1 "What is the capital of France?": d1 shares capital, france (2), d2 france (1):
  judge-test relevant, partial -> 0.75; judge-strict partial, irrelevant -> 0.25; mean 0.5.
- c2 "What is the former capital of West Germany?": d9 shares capital, germany (2),
  d3 capital, west, germany (3): judge-test 1, 1 -> 1.0; judge-strict 0.5, 1 -> 0.75;
  mean 0.875.
"""

from __future__ import annotations

import json
import math

import pytest

from tests.assets.expected import RUN_ARGS
from tests.support.cli import cli_env, ragproof

pytestmark = pytest.mark.slow

JURY = "openai/judge-test,openai/judge-strict"
QUESTIONS = 15  # per model: see test_cli_judge.py


# server: tests/assets/conftest.py


def _env(server, model: str = JURY):
    return cli_env(
        RAGPROOF_JUDGE_MODEL=model,
        RAGPROOF_JUDGE_API_BASE=server.url,
        RAGPROOF_JUDGE_INPUT_COST_PER_MTOK="1.0",
        RAGPROOF_JUDGE_OUTPUT_COST_PER_MTOK="2.0",
        OPENAI_API_KEY="sk-test-jury",
    )


def _run(env) -> dict:
    done = ragproof(*RUN_ARGS, "--json", env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_jury_run_scores_the_mean_stores_every_verdict_and_reports_agreement(server):
    server.reset()
    # The dry run counts each model's question apart and calls nobody.
    dry = ragproof(*RUN_ARGS, "--dry-run", "--json", env=_env(server))
    assert dry.returncode == 0, dry.stderr
    assert (json.loads(dry.stdout)["requests"], server.request_count) == (2 * QUESTIONS, 0)
    out = _run(_env(server))
    judge = out["judge"]
    # Named by its sorted models, listed one by one; every question asked of both.
    assert judge["model"] == "openai/judge-strict,openai/judge-test"
    assert judge["models"] == ["openai/judge-strict", "openai/judge-test"]
    assert judge["requests"] == server.request_count == 2 * QUESTIONS
    assert judge["judge_errors"] == 0
    assert math.isclose(judge["cost_usd"], 2 * QUESTIONS * (100 * 1.0 + 20 * 2.0) / 1e6)

    metrics = out["metrics"]
    assert metrics["retrieval.context_relevance"]["mean"] == (0.5 + 0.875) / 2
    # judged nDCG: c1 ideal for both (1.0); c2 judge-strict gains (0.5, 1):
    # (0.5 + 1/log2 3) / (1 + 0.5/log2 3) = 0.85972, so c2 = (1 + 0.85972) / 2.
    strict_c2 = (0.5 + 1 / math.log2(3)) / (1 + 0.5 / math.log2(3))
    assert math.isclose(
        metrics["retrieval.judged_ndcg_at_k"]["mean"], (1.0 + (1.0 + strict_c2) / 2) / 2
    )
    assert metrics["generation.answer_relevance"]["mean"] == 1.0

    # Usage per metric and per model.
    usage = {(row["metric"], row["model"]): row for row in judge["usage"]}
    for model in judge["models"]:
        assert usage[("retrieval.context_relevance", model)]["requests"] == 2
        assert usage[("generation.answer_relevance", model)]["requests"] == 4

    # Agreement: context relevance bands (1, 0.5) on c1 and (1, 1) on c2.
    # D_o = (1/4) * 0.5 = 0.125; D_e = (2*4*3.25 - 2*3.5^2) / 12 = 0.125: alpha = 0.
    context = judge["agreement"]["retrieval.context_relevance"]
    assert (context["cases"], context["level"]) == (2, "interval")
    assert math.isclose(context["alpha"], 0.0, abs_tol=1e-12)
    # Both models agree on every answer_relevance verdict, all "relevant": nothing varies.
    assert judge["agreement"]["generation.answer_relevance"]["alpha"] is None

    show = ragproof("show", out["run_id"], env=_env(server))
    assert show.returncode == 0, show.stderr
    lines = show.stdout.splitlines()
    assert "judge usage by metric and model:" in lines
    assert "  retrieval.context_relevance: alpha 0.000 over 2 cases" in lines
    assert "  generation.answer_relevance: alpha undefined (no variation) over 4 cases" in lines
    row = next(
        line.split()
        for line in lines
        if line.startswith("retrieval.context_relevance") and "judge-strict" in line
    )
    assert row == [
        "retrieval.context_relevance", "openai/judge-strict", "2", "0", "0", "200", "40", "$0.0003",
    ]  # fmt: skip
    shown = json.loads(ragproof("show", out["run_id"], "--json", env=_env(server)).stdout)
    assert shown["judge"] == judge


def test_compare_refuses_runs_judged_by_different_juries(server):
    server.reset()
    first = _run(_env(server))["run_id"]
    # The same jury named in another order is the same judge: fully cached, comparable.
    same = _run(_env(server, "openai/judge-strict, openai/judge-test"))["run_id"]
    assert server.request_count == 2 * QUESTIONS
    assert ragproof("compare", first, same, "--json").returncode == 0
    other = _run(_env(server, "openai/judge-test,openai/judge-other"))["run_id"]
    refused = ragproof("compare", first, other)
    assert refused.returncode == 1
    assert (
        "judge model openai/judge-strict,openai/judge-test vs "
        "openai/judge-other,openai/judge-test" in refused.stderr
    )
    assert ragproof("compare", first, other, "--allow-mixed-judges").returncode == 0
