"""A pipeline whose answers change between calls (CONTRACT section 27's tests): each
method keeps a counter per question, and the n-th call's output depends on n alone,
so a case's trials differ while a run is reproducible whatever its shards."""

from __future__ import annotations

import threading
from collections import Counter


class CountingAdapter:
    """The n-th ``retrieve`` of question ``question <i>?`` finds its expected source
    ``d<i>`` first unless ``n * (i + 1)`` is a multiple of 4 (then only an unrelated
    chunk: case 3 never, cases 1 and 5 on their 2nd call, the others on their 4th); the
    n-th ``answer`` says ``answer n``. Free to call, as a local pipeline is."""

    free_to_call = True

    def __init__(self) -> None:
        self._calls: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def _nth(self, method: str, question: str) -> int:
        with self._lock:
            self._calls[method, question] += 1
            return self._calls[method, question]

    def retrieve(self, question: str) -> list[dict]:
        n = self._nth("retrieve", question)
        i = int(question.split()[-1].rstrip("?"))
        source = f"d{i}"
        if n * (i + 1) % 4 == 0:
            return [{"id": "other", "text": "unrelated"}]
        return [{"id": source, "text": "the source"}, {"id": "other", "text": "unrelated"}]

    def answer(self, question: str) -> dict:
        return {"text": f"answer {self._nth('answer', question)}"}
