"""The pipeline of the repeated-trials benchmark (``benchmarks/repeats.py``): free,
in-process, and stochastic as a sampled pipeline is: each call's ranking and answer
come from the question and how many times it was asked (crc32), so trials differ and
a run is reproducible."""

from __future__ import annotations

import zlib
from collections import Counter


class TrialAdapter:
    free_to_call = True

    def __init__(self) -> None:
        self._calls: Counter[tuple[str, str]] = Counter()

    def _draw(self, method: str, question: str) -> int:
        self._calls[method, question] += 1
        return zlib.crc32(f"{method} {question} {self._calls[method, question]}".encode())

    async def retrieve(self, question: str) -> list[dict]:
        draw = self._draw("retrieve", question)
        i = int(question.split()[-1].rstrip("?"))
        ids = [f"d{(i + j * (draw % 7 + 1)) % 997}" for j in range(5)]
        return [{"id": chunk, "text": f"passage {chunk} of the corpus"} for chunk in ids]

    async def answer(self, question: str) -> dict:
        draw = self._draw("answer", question)
        return {"text": f"answer {draw % 3}"}
