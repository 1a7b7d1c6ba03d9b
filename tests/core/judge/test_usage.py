"""Judge usage per (metric, model): the evaluation names the metric that asks, so
concurrent metrics and a jury's models never mix their counts."""

from __future__ import annotations

import asyncio

import pytest

from ragproof_core.config.settings import RunSettings
from ragproof_core.judge.factory import make_judge
from ragproof_core.judge.settings import JudgeEnv
from ragproof_core.judge.usage import UsageTally, attributed_to, totals_by
from ragproof_core.model import Case
from ragproof_core.run.evaluate import evaluate
from tests.core.judge.conftest import run

pytestmark = pytest.mark.filterwarnings("ignore:.*ReadOnly. qualifier:UserWarning")


class TwoChunks:
    async def retrieve(self, question: str):
        return [{"id": "d1", "text": "Paris is the capital of France."}]

    async def answer(self, question: str):
        return {"text": "Paris is the capital.", "citations": ["d1"]}


def test_usage_is_counted_per_metric_and_model_through_a_concurrent_evaluation(server):
    judge = make_judge(JudgeEnv(model="openai/judge-a,openai/judge-b", api_base=server.url), None)
    cases = [
        Case(f"c{i}", "What is the capital of France?", expected_answer="Paris") for i in (1, 2)
    ]
    settings = RunSettings(
        metrics=("generation.answer_relevance", "retrieval.context_relevance"), concurrency=8
    )
    evaluation = run(evaluate(cases, TwoChunks(), settings, judge))
    assert {(r.metric, r.value) for r in evaluation.results} == {
        ("generation.answer_relevance", 1.0),
        ("retrieval.context_relevance", 1.0),
    }
    # Two cases x two metrics x two models, one request each; usage (100, 20) per reply.
    assert server.request_count == 8
    assert [
        (row["metric"], row["model"], row["requests"], row["input_tokens"], row["output_tokens"])
        for row in judge.usage.rows()
    ] == [
        ("generation.answer_relevance", "openai/judge-a", 2, 200, 40),
        ("generation.answer_relevance", "openai/judge-b", 2, 200, 40),
        ("retrieval.context_relevance", "openai/judge-a", 2, 200, 40),
        ("retrieval.context_relevance", "openai/judge-b", 2, 200, 40),
    ]
    by_model = totals_by(judge.usage.rows(), "model")
    assert by_model["openai/judge-a"]["requests"] == 4


def test_a_question_asked_outside_any_metric_is_counted_under_its_prompt():
    tally = UsageTally()
    tally.add("refusal", "m", requests=1)

    async def inside():
        with attributed_to("robustness.abstention"):
            tally.add("refusal", "m", requests=1, cost_usd=0.5)

    asyncio.run(inside())
    assert [(r["metric"], r["requests"], r["cost_usd"]) for r in tally.rows()] == [
        ("refusal", 1, 0.0),
        ("robustness.abstention", 1, 0.5),
    ]


def test_a_jury_in_combined_mode_sends_one_combined_request_per_model_and_case(server):
    env = JudgeEnv(model="openai/judge-a,openai/judge-b", api_base=server.url, mode="combined")
    judge = make_judge(env, None)
    cases = [Case("c1", "What is the capital of France?", expected_answer="Paris")]
    settings = RunSettings(metrics=("generation.answer_relevance", "retrieval.context_relevance"))
    evaluation = run(evaluate(cases, TwoChunks(), settings, judge))
    assert {(r.metric, r.value) for r in evaluation.results} == {
        ("generation.answer_relevance", 1.0),
        ("retrieval.context_relevance", 1.0),
    }
    # One combined request per model, each carrying both parts.
    assert sorted((r.body["model"], r.prompt, tuple(r.parts)) for r in server.requests) == [
        ("judge-a", "combined", ("answer_relevance", "context_relevance")),
        ("judge-b", "combined", ("answer_relevance", "context_relevance")),
    ]
