"""HttpAdapter against a real RAG service on 127.0.0.1 (tests/support/rag_service.py)."""

from __future__ import annotations

import asyncio

import pytest

from ragproof_core.adapters.http import HttpAdapter, HttpAdapterError, HttpRetrievingAdapter
from ragproof_core.adapters.loading import load_adapter
from ragproof_core.adapters.runner import close_adapter, run_adapter
from ragproof_core.config.settings import RunSettings
from ragproof_core.model import Answer, Case, Chunk, RetrieveStep, ToolStep, TurnOf
from tests.support.rag_service import RagService

SERVICE_CHUNK = Chunk("doc1#0", "ragproof evaluates RAG pipelines.", 0.75)


@pytest.fixture
def service():
    with RagService() as running:
        yield running


async def ask(adapter, question):
    try:
        return await adapter.answer(question)
    finally:
        await adapter.aclose()


def test_answer_posts_the_question_and_reads_an_answer(service):
    adapter = HttpAdapter(f"{service.base}/answer", headers={"Authorization": "Bearer s3cret"})
    answer = asyncio.run(ask(adapter, "What is ragproof?"))
    assert answer == Answer("echo: What is ragproof?", (SERVICE_CHUNK,), ("doc1#0",))
    (request,) = service.requests
    assert request.path == "/answer"
    assert request.body == {"question": "What is ragproof?"}
    assert request.headers["Authorization"] == "Bearer s3cret"
    assert request.headers["Content-Type"] == "application/json"


def test_retrieve_exists_only_with_retrieve_url(service):
    plain = HttpAdapter(f"{service.base}/answer")
    assert not hasattr(plain, "retrieve")
    assert type(plain) is HttpAdapter
    retrieving = HttpAdapter(f"{service.base}/answer", retrieve_url=f"{service.base}/retrieve")
    assert isinstance(retrieving, HttpRetrievingAdapter)
    assert isinstance(retrieving, HttpAdapter)
    assert hasattr(retrieving, "retrieve")
    positional = HttpAdapter(f"{service.base}/answer", 5, None, f"{service.base}/retrieve")
    assert isinstance(positional, HttpRetrievingAdapter)


def test_retrieve_reads_a_list_or_a_chunks_object(service):
    adapter = HttpAdapter(f"{service.base}/answer", retrieve_url=f"{service.base}/retrieve")

    async def main():
        try:
            return await adapter.retrieve("plain"), await adapter.retrieve("wrapped")
        finally:
            await adapter.aclose()

    assert asyncio.run(main()) == ((SERVICE_CHUNK,), (SERVICE_CHUNK,))
    assert [r.path for r in service.requests] == ["/retrieve", "/retrieve"]


def test_non_2xx_raises_with_status_and_body_excerpt(service):
    adapter = HttpAdapter(f"{service.base}/answer?api_key=s3cret")
    with pytest.raises(HttpAdapterError) as info:
        asyncio.run(ask(adapter, "fail"))
    assert str(info.value) == (
        f"HTTP 503 from {service.base}/answer: service overloaded: try again later"
    )


def test_non_json_reply_is_an_error(service):
    with pytest.raises(HttpAdapterError) as info:
        asyncio.run(ask(HttpAdapter(f"{service.base}/answer"), "not-json"))
    assert str(info.value) == f"reply from {service.base}/answer is not JSON: <html>oops</html>"


def test_failures_become_case_failures_in_a_run(service):
    adapter = HttpAdapter(f"{service.base}/answer", retrieve_url=f"{service.base}/retrieve")
    cases = [Case("ok", "hello"), Case("down", "fail")]

    async def main():
        try:
            return await run_adapter(cases, adapter, RunSettings(concurrency=2))
        finally:
            await close_adapter(adapter)

    ok, down = asyncio.run(main())
    assert ok.error is None
    assert ok.retrieved == (SERVICE_CHUNK,)
    assert ok.answer.text == "echo: hello"
    assert down.error == (
        f"HttpAdapterError: HTTP 503 from {service.base}/retrieve: "
        "service overloaded: try again later (in retrieve())"
    )


def test_adapter_survives_across_event_loops(service):
    adapter = HttpAdapter(f"{service.base}/answer")
    assert asyncio.run(adapter.answer("one")).text == "echo: one"
    assert asyncio.run(ask(adapter, "two")).text == "echo: two"


def test_repr_never_shows_headers_credentials_or_query():
    adapter = HttpAdapter(
        "https://user:pw@rag.example:8443/v1/answer?token=abc",
        headers={"Authorization": "Bearer s3cret"},
    )
    assert repr(adapter) == "HttpAdapter(url='https://rag.example:8443/v1/answer')"


def test_built_from_config_options(service):
    adapter = load_adapter(
        "ragproof_core.adapters.http:HttpAdapter",
        {
            "url": f"{service.base}/answer",
            "timeout_s": 5,
            "headers": {"X-Team": "search"},
            "retrieve_url": f"{service.base}/retrieve",
        },
    )
    assert isinstance(adapter, HttpRetrievingAdapter)
    assert adapter.timeout_s == 5.0
    asyncio.run(ask(adapter, "configured"))
    assert service.requests[0].headers["X-Team"] == "search"


def test_retrieving_subclass_requires_retrieve_url():
    with pytest.raises(ValueError, match="HttpRetrievingAdapter needs retrieve_url"):
        HttpRetrievingAdapter("http://127.0.0.1:9/answer")


def test_a_conversation_posts_each_turn_with_its_history(service):
    """CONTRACT section 16: {"question", "history"} per turn, to both endpoints."""
    adapter = HttpAdapter(f"{service.base}/answer", retrieve_url=f"{service.base}/retrieve")
    turns = [
        Case("c1#1", "What is ragproof?", turn=TurnOf("c1", 1, 2)),
        Case("c1#2", "And who uses it?", turn=TurnOf("c1", 2, 2)),
    ]
    outputs = asyncio.run(run_adapter(turns, adapter, RunSettings(concurrency=1)))
    asyncio.run(adapter.aclose())
    assert [o.error for o in outputs] == [None, None]
    earlier = [
        {"role": "user", "content": "What is ragproof?"},
        {"role": "assistant", "content": "echo: What is ragproof?"},
    ]
    assert [(r.path, r.body) for r in service.requests] == [
        ("/retrieve", {"question": "What is ragproof?", "history": []}),
        ("/answer", {"question": "What is ragproof?", "history": []}),
        ("/retrieve", {"question": "And who uses it?", "history": earlier}),
        ("/answer", {"question": "And who uses it?", "history": earlier}),
    ]


def test_the_answer_carries_the_steps_the_service_reports(service):
    """CONTRACT section 17: the reply's ``steps`` become the answer's trajectory."""
    answer = asyncio.run(ask(HttpAdapter(f"{service.base}/answer"), "agent"))
    assert answer.steps == (
        RetrieveStep("what is ragproof", (SERVICE_CHUNK,)),
        ToolStep("fetch_page", {"url": "/docs", "depth": 1}),
        RetrieveStep("ragproof metrics", ()),
    )
    plain = asyncio.run(ask(HttpAdapter(f"{service.base}/answer"), "What is ragproof?"))
    assert plain.steps is None
