"""`generate qa --dry-run`: the loop against the cache only, nothing called."""

from __future__ import annotations

from ragproof_core.generate.corpus import load_corpus
from ragproof_core.generate.estimate import estimate_generation
from ragproof_core.generate.qa import GenerationPlan, generate_questions
from ragproof_core.generate.summary import render_summary, summary_dict
from tests.conftest import FIXTURES
from tests.core.judge.conftest import make_judge, run

CORPUS = load_corpus(FIXTURES / "generation" / "corpus.jsonl")
PLAN = GenerationPlan(count=3, unanswerable=1)


def test_a_cold_cache_counts_every_call_and_a_warm_one_none(server, tmp_path):
    judge = make_judge(server.url, tmp_path / "cache.sqlite", input_cost=1.0, output_cost=2.0)
    try:
        cold = run(estimate_generation(CORPUS, PLAN, judge))
        assert server.request_count == 0
        assert (cold.questions, cold.cached, cold.calls, cold.max_requests) == (8, 0, 8, 48)
        assert cold.slots == 4 and cold.estimated_cost_usd > 0

        run(generate_questions(CORPUS, PLAN, judge))
        assert server.request_count == 8
        warm = run(estimate_generation(CORPUS, PLAN, judge))
    finally:
        judge.close()
    assert server.request_count == 8  # the estimate asked nothing
    assert (warm.questions, warm.cached, warm.calls, warm.estimated_cost_usd) == (8, 8, 0, 0.0)
    assert warm.render().splitlines()[:3] == [
        "dry run: 4 cases to write, judge openai/judge-test",
        "  judge questions 8, served from cache 8, calls 0 (if every new question passes its "
        "critique at the first attempt; at most 48 requests with every attempt and repair)",
        "  estimated cost $0.0000",
    ]


def test_a_judge_nothing_prices_estimates_an_unknown_cost_not_zero(server, tmp_path):
    # No price in the environment and none in LiteLLM's map for the test model.
    judge = make_judge(server.url, tmp_path / "cache.sqlite", input_cost=None, output_cost=None)
    try:
        estimate = run(estimate_generation(CORPUS, PLAN, judge))
    finally:
        judge.close()
    assert estimate.estimated_cost_usd is None
    assert estimate.to_dict()["estimated_cost_usd"] is None
    assert estimate.render().splitlines()[2] == (
        "  estimated cost unknown (no price for the judge model: set "
        "RAGPROOF_JUDGE_INPUT_COST_PER_MTOK and RAGPROOF_JUDGE_OUTPUT_COST_PER_MTOK)"
    )


def test_the_generation_summary_says_an_unpriced_cost_is_unknown(server, tmp_path):
    judge = make_judge(server.url, tmp_path / "cache.sqlite", input_cost=None, output_cost=None)
    try:
        outcome = run(generate_questions(CORPUS, PLAN, judge))
    finally:
        judge.close()
    stats = judge.stats
    assert not judge.priced and stats.requests == 8
    text = render_summary(outcome, "out.jsonl", 0, judge.model, stats, judge.priced)
    assert text.splitlines()[-1].endswith(
        "cost unknown (no price for the judge model: set "
        "RAGPROOF_JUDGE_INPUT_COST_PER_MTOK and RAGPROOF_JUDGE_OUTPUT_COST_PER_MTOK)"
    )
    assert (
        summary_dict(outcome, "out.jsonl", 0, judge.model, stats, False)["judge"]["cost_usd"]
        is None
    )
