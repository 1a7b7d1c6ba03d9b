"""A deliberately slow adapter for the concurrency, kill and read-while-writing tests."""

from __future__ import annotations

import asyncio


class SlowAdapter:
    """Answers every question after ``delay_s``; retrieves nothing relevant."""

    def __init__(self, delay_s: float = 0.2):
        self.delay_s = delay_s

    async def retrieve(self, question: str) -> list[dict]:
        return [{"id": "x1", "text": "unrelated"}]

    async def answer(self, question: str) -> dict:
        await asyncio.sleep(self.delay_s)
        return {"text": f"answer to: {question}", "citations": ["x1"]}
