"""Shared fixtures: one LiteLLM import and one local judge server per test session."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from ragproof_core.judge.cache import JudgeCache
from ragproof_core.judge.client import LiteLLMClient, flush_litellm, import_litellm
from ragproof_core.judge.cost import Budget
from ragproof_core.judge.session import LiteLLMJudge
from ragproof_core.judge.settings import JudgeEnv
from tests.support.judge_server import JudgeServer
from tests.support.litellm_warmup import warm_litellm

MODEL = "openai/judge-test"
API_KEY = "sk-ragproof-test-key-0123456789"

T = TypeVar("T")


def run(awaitable: Awaitable[T]) -> T:
    """asyncio.run, flushing LiteLLM's per-loop bookkeeping before the loop closes."""

    async def main() -> T:
        try:
            return await awaitable
        finally:
            await flush_litellm()

    return asyncio.run(main())


@pytest.fixture(scope="session")
def _server() -> Iterator[JudgeServer]:
    with JudgeServer() as server:
        yield server


@pytest.fixture(scope="session")
def litellm(_server: JudgeServer) -> Any:
    # The ~5 s import and the first request's set-up happen once for the whole
    # session, not inside the first test's judge deadline.
    module = import_litellm()
    warm_litellm(_server)
    return module


@pytest.fixture
def server(_server: JudgeServer, litellm: Any, monkeypatch: pytest.MonkeyPatch) -> JudgeServer:
    """The session's server, reset to defaults for this test."""
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    _server.reset()
    _server.latency_s = 0.0
    _server.usage = (100, 20)
    return _server


def closed_port() -> int:
    """A port nothing listens on: bound, then released."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def make_judge(
    api_base: str,
    cache_path: Path | None = None,
    *,
    model: str = MODEL,
    use_cache: bool = True,
    input_cost: float = 0.0,
    output_cost: float = 0.0,
    max_cost: float | None = None,
    timeout_s: float = 5.0,
    max_attempts: int = 4,
    concurrency: int = 16,
    mode: str = "per_metric",
) -> LiteLLMJudge:
    """A judge on the test server with tiny backoff, so retry tests stay fast."""
    env = JudgeEnv(model, api_base, input_cost, output_cost, max_cost, mode=mode)
    client = LiteLLMClient(
        model,
        api_base,
        timeout_s=timeout_s,
        max_attempts=max_attempts,
        backoff_base_s=0.001,
        backoff_max_s=0.01,
    )
    cache = JudgeCache(cache_path) if cache_path is not None else None
    return LiteLLMJudge(
        env,
        cache,
        use_cache=use_cache,
        concurrency=concurrency,
        client=client,
        budget=Budget(max_cost),
    )
