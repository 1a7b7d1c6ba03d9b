"""A pipeline whose answers change between calls (CONTRACT section 27's tests): each
method keeps a counter per question, and the n-th call's output depends on n alone,
so a case's trials differ while a run is reproducible whatever its shards."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path

from ragproof_core.interruption import IN_FLIGHT_S


class CountingAdapter:
    """The n-th ``retrieve`` of question ``question <i>?`` finds its expected source
    ``d<i>`` first unless ``n * (i + 1)`` is a multiple of 4 (then only an unrelated
    chunk: case 3 never, cases 1 and 5 on their 2nd call, the others on their 4th); the
    n-th ``answer`` says ``answer n``, or ``answer <(n - 1) % cycle + 1>`` with a
    ``cycle`` (two trials then give the same answer). Free to call, as a local pipeline
    is.

    ``interrupt``: ``"<question>#<n>"``, the call that stops the run (section 29's
    resume tests). The first time the process meets it (no ``marker`` file yet), it
    writes ``marker``, sends its own process SIGINT, as Ctrl-C would, and outlasts the
    in-flight allowance: the case is cut short, the calls after it are never sent."""

    free_to_call = True

    def __init__(
        self, cycle: int | None = None, interrupt: str | None = None, marker: str | None = None
    ) -> None:
        self.cycle = cycle
        self.interrupt = interrupt
        self.marker = None if marker is None else Path(marker)
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
        n = self._nth("answer", question)
        if f"{question}#{n}" == self.interrupt and self.marker and not self.marker.exists():
            self.marker.write_text("interrupted", encoding="utf-8")
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(IN_FLIGHT_S + 2)  # cut short: this trial is never stored
        return {"text": f"answer {n if self.cycle is None else (n - 1) % self.cycle + 1}"}
