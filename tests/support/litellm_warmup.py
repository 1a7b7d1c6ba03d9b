"""One judge request before a test whose judge deadline is short or counted from its
first request: LiteLLM's first request in a process builds its provider set-up, about
0.5 s of CPU (seconds on a loaded machine), and that time runs inside the judge's
deadline. After one request, a deadline times the requests alone."""

from __future__ import annotations

import asyncio
import os

from ragproof_core.judge.client import LiteLLMClient, flush_litellm
from tests.support.judge_server import JudgeServer

MODEL = "openai/judge-test"


def warm_litellm(server: JudgeServer) -> None:
    """One request to ``server`` from this process, then ``server`` reset (its request
    count and script). Uses OPENAI_API_KEY if set, else a dummy key for that request."""

    async def once() -> None:
        try:
            await LiteLLMClient(MODEL, server.url, max_attempts=1).complete(
                [{"role": "user", "content": "ragproof-prompt: refusal"}]
            )
        finally:
            await flush_litellm()

    had_key = "OPENAI_API_KEY" in os.environ
    os.environ.setdefault("OPENAI_API_KEY", "sk-warm-up")
    try:
        asyncio.run(once())
    finally:
        if not had_key:
            del os.environ["OPENAI_API_KEY"]
    server.reset()
