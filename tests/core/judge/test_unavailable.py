"""A judge that cannot answer, against the local judge server answering as the real
providers do (CONTRACT section 24): the run stops calling it, and says why.

Each run evaluates 30 cases with the generation metrics (four judge questions a
case, 120 in all) through ``evaluate`` and a real ``LiteLLMJudge``; the requests
are counted where they arrive, at the server.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from ragproof_core.config.settings import RunSettings
from ragproof_core.judge.factory import make_judge
from ragproof_core.judge.session import LiteLLMJudge
from ragproof_core.judge.settings import JudgeEnv
from ragproof_core.judge.types import ABORTED_JUDGE, JudgeUnavailable
from ragproof_core.model import Case, CaseKind, Status
from ragproof_core.run.evaluate import COMPLETED, evaluate
from tests.core.judge.conftest import MODEL, run
from tests.support.judge_server import JudgeServer, Reply

GENERATION = (
    "generation.groundedness",
    "generation.citation_support",
    "generation.answer_relevance",
    "generation.completeness",
)
SETTINGS = RunSettings(metrics=GENERATION, concurrency=16)
CASES = [
    Case(f"c{i:02d}", f"Where is item {i}?", CaseKind.QA, ("d1",), "Paris.") for i in range(30)
]


class Adapter:
    async def retrieve(self, question: str):
        return [{"id": "d1", "text": "Item one is in Paris."}]

    async def answer(self, question: str):
        return {"text": "It is in Paris.", "citations": ["d1"]}


def _judge(server: JudgeServer, model: str = MODEL, concurrency: int = 16) -> LiteLLMJudge:
    # Anthropic's API is at /v1/messages: LiteLLM adds the /v1 itself.
    api_base = server.url if model.startswith("openai/") else server.url.removesuffix("/v1")
    env = JudgeEnv(model=model, api_base=api_base, max_attempts=2, backoff_s=0.0)
    return LiteLLMJudge(env, None, concurrency=concurrency)


def _evaluate(judge: LiteLLMJudge, settings: RunSettings = SETTINGS):
    async def main():
        try:
            return await evaluate(CASES, Adapter(), settings, judge)
        finally:
            await judge.drain()

    return run(main())


@pytest.mark.parametrize(
    ("model", "status", "reason"),
    [
        (MODEL, 401, "Incorrect API key provided: sk-*****"),
        (MODEL, 404, "The model `judge-test` does not exist or you do not have access to it."),
        (MODEL, 400, "Invalid value for 'response_format'"),
        (MODEL, 403, "Country, region, or territory not supported"),
        ("anthropic/claude-judge-test", 401, "invalid x-api-key"),
        ("anthropic/claude-judge-test", 404, "model: claude-judge-test"),
    ],
)
def test_a_judge_refusing_everything_gets_five_requests_then_the_run_stops(
    server: JudgeServer, monkeypatch: pytest.MonkeyPatch, model: str, status: int, reason: str
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    server.fallback = Reply.error(status)
    judge = _judge(server, model)
    evaluation = _evaluate(judge)

    assert server.request_count == 5  # not retried, and nothing after the fifth
    assert evaluation.status == ABORTED_JUDGE
    assert judge.unavailable is not None and reason in judge.unavailable
    assert f"HTTP {status}" in judge.unavailable
    assert "first 5 answered requests" in judge.unavailable
    stats = judge.stats
    assert (stats.requests, stats.judge_errors) == (5, 5)
    assert reason in stats.first_error
    # The five that were asked are judge errors; every other question is skipped, saying why.
    rows = [r for r in evaluation.results if r.metric in GENERATION]
    assert sum(r.status is Status.JUDGE_ERROR for r in rows) == 5
    skipped = {r.reason for r in rows if r.status is Status.SKIPPED}
    assert skipped == {JudgeUnavailable.skip_reason}


def test_a_missing_key_is_counted_at_once_and_nothing_reaches_the_server(
    server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    judge = _judge(server)
    evaluation = _evaluate(judge)
    assert server.request_count == 0
    assert evaluation.status == ABORTED_JUDGE
    assert "Missing credentials" in judge.unavailable
    assert judge.stats.requests == 5  # refused by LiteLLM before sending, each counted once


def test_a_content_filter_fails_its_question_alone_and_the_run_goes_on(
    server: JudgeServer,
) -> None:
    server.script(*[Reply.content_filter()] * 8)
    judge = _judge(server)
    evaluation = _evaluate(judge)
    assert evaluation.status == COMPLETED
    assert server.request_count == 120  # refused prompts are not retried
    stats = judge.stats
    assert stats.judge_errors == 8
    assert "Invalid prompt: your prompt was flagged" in stats.first_error
    assert "[not retryable]" in stats.first_error


def test_twenty_failures_in_a_row_after_their_retries_stop_the_run(server: JudgeServer) -> None:
    # Up: the first question is answered. Then down: every request 503, retried once.
    judge = _judge(server, concurrency=1)
    server.script(Reply())
    server.fallback = Reply.error(503)
    evaluation = _evaluate(judge, replace(SETTINGS, concurrency=1))
    assert evaluation.status == ABORTED_JUDGE
    assert server.request_count == 1 + 20 * 2
    assert judge.unavailable.endswith("(20 requests in a row failed after their retries)")
    assert "The engine is currently overloaded" in judge.unavailable


def test_a_jury_stops_when_one_member_cannot_answer(server: JudgeServer) -> None:
    def by_model(request):  # the second model's key is refused
        return Reply.error(401) if request.body["model"] == "judge-refused" else Reply()

    server.script(*[by_model] * 200)
    env = JudgeEnv(model=f"{MODEL},openai/judge-refused", api_base=server.url, backoff_s=0.0)
    jury = make_judge(env, None, use_cache=False)
    evaluation = _evaluate(jury)
    assert evaluation.status == ABORTED_JUDGE
    assert jury.unavailable.startswith("openai/judge-refused: AuthenticationError (HTTP 401)")
    refused = [r for r in server.requests if r.body["model"] == "judge-refused"]
    assert len(refused) == 5


def test_judge_unavailable_is_raised_before_anything_is_counted(server: JudgeServer) -> None:
    server.fallback = Reply.error(401)
    judge = _judge(server)
    _evaluate(judge)
    before = judge.stats
    with pytest.raises(JudgeUnavailable):
        asyncio.run(judge.ask("answer_relevance", {"question": "q?", "answer": "a"}))
    assert judge.stats == before
    assert server.request_count == 5
