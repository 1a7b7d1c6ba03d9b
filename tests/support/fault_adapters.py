"""Adapters that misbehave on purpose, for the fault suite (tests/faults/).

``FaultyAdapter`` picks its behaviour from the question's first word, so one
dataset mixes good cases with every kind of adapter fault:

==================== =======================================================
first word           what the adapter does
==================== =======================================================
``raise``            ``answer()`` raises ``ValueError("boom")``
``raise-retrieve``   ``retrieve()`` raises ``RuntimeError("index offline")``
``hang``             ``answer()`` blocks for ``hang_s`` (past run.timeout_s)
``bare-string``      ``answer()`` returns a str instead of an Answer
``chunk-without-id`` ``retrieve()`` returns a chunk that has no ``id``
``citations-string`` ``answer()`` returns ``citations`` as a str, not a list
anything else        a good case: retrieves ``d1, d2``, answers citing ``d1``
==================== =======================================================

``AsyncFaultyAdapter`` does the same with coroutine methods, so both of the
runner's paths (thread pool and event loop) meet every fault.

``CitingAdapter`` is a well-behaved pipeline for the judge-fault tests: it
retrieves ``d1, d2`` and gives each question its own two-sentence answer citing
``d1``, so no two cases share a judge question (and a cache key).

``PlainAdapter`` answers every question with a distinct sentence and exposes
no retrieval: each case then asks the judge exactly two questions
(answer_relevance and overrefusal), which keeps judge-request counts simple.
"""

from __future__ import annotations

import asyncio
import threading

GOOD_CHUNKS = (
    {"id": "d1", "text": "Paris is the capital of France."},
    {"id": "d2", "text": "Bonn was the capital of West Germany."},
)
GOOD_ANSWER = "Paris is the capital of France."

# The exact case-failure texts the runner stores for each fault, with run.timeout_s = 2.0
# (tests/fixtures/faults/adapter_faults.toml: long enough that no good call times out).
EXPECTED_ERRORS = {
    "raise": "ValueError: boom (in answer())",
    "raise-retrieve": "RuntimeError: index offline (in retrieve())",
    "hang": "timeout after 2.0s in answer()",
    "bare-string": "invalid output from answer(): expected an Answer or a dict with 'text', "
    "got a bare string; wrap it as {'text': ...}",
    "chunk-without-id": "invalid output from retrieve(): chunk 0: chunk is missing 'id'",
    "citations-string": "invalid output from answer(): "
    "answer 'citations' must be a list of chunk id strings",
}


def _mode(question: str) -> str:
    return question.split(maxsplit=1)[0]


class FaultyAdapter:
    """Synchronous methods: the runner calls them on its daemon thread pool."""

    def __init__(self, hang_s: float = 5.0) -> None:
        self.hang_s = hang_s
        # Set on close, so a hung call ends soon after the run instead of pinning
        # a thread for hang_s.
        self._closed = threading.Event()

    def retrieve(self, question: str) -> list[dict]:
        mode = _mode(question)
        if mode == "raise-retrieve":
            raise RuntimeError("index offline")
        if mode == "chunk-without-id":
            return [{"text": "a chunk with no id"}]
        return [dict(chunk) for chunk in GOOD_CHUNKS]

    def answer(self, question: str):
        mode = _mode(question)
        if mode == "raise":
            raise ValueError("boom")
        if mode == "hang":
            self._closed.wait(self.hang_s)
            return {"text": "too late"}
        if mode == "bare-string":
            return GOOD_ANSWER
        if mode == "citations-string":
            return {"text": GOOD_ANSWER, "citations": "d1"}
        return {"text": GOOD_ANSWER, "citations": ["d1"]}

    def close(self) -> None:
        self._closed.set()


class AsyncFaultyAdapter:
    """The same faults from coroutine methods: awaited on the event loop."""

    def __init__(self, hang_s: float = 5.0) -> None:
        self._sync = FaultyAdapter(hang_s)
        self.hang_s = hang_s

    async def retrieve(self, question: str) -> list[dict]:
        return self._sync.retrieve(question)

    async def answer(self, question: str):
        if _mode(question) == "hang":
            await asyncio.sleep(self.hang_s)  # cancelled by the runner's timeout
            return {"text": "too late"}
        return self._sync.answer(question)

    def close(self) -> None:
        self._sync.close()


class PlainAdapter:
    """A distinct one-sentence answer per question, no retrieval, no citations."""

    async def answer(self, question: str) -> dict:
        return {"text": f"The answer to {question.rstrip('?')} is forty-two."}


class CitingAdapter:
    """Retrieves ``d1, d2``; answers every question distinctly, citing ``d1``."""

    async def retrieve(self, question: str) -> list[dict]:
        return [dict(chunk) for chunk in GOOD_CHUNKS]

    async def answer(self, question: str) -> dict:
        return {"text": f"{GOOD_ANSWER} You asked: {question}", "citations": ["d1"]}


class CrashOnceAdapter:
    """Answers like ``PlainAdapter``; the first question starting with ``crash`` kills
    the whole process, leaving ``marker`` behind so the next attempt answers it.

    Before dying it waits until the local store's judge cache holds ``wait_cached``
    verdicts and the shard attempts' records (``attempt_*.json``) show
    ``wait_recorded`` paid requests in all, so the test knows exactly what was paid
    for and what was on record when the process died. On a loaded machine the other
    shards take minutes to start and dying early changes what was paid: the wait
    gives up only after ``wait_s`` (10 minutes), so that a shard process never
    outlives its test."""

    def __init__(
        self, marker: str, wait_cached: int = 0, wait_recorded: int = 0, wait_s: float = 600
    ) -> None:
        self.marker = marker
        self.wait_cached = wait_cached
        self.wait_recorded = wait_recorded
        self.wait_s = wait_s

    def _recorded(self, store) -> int:
        import json

        total = 0
        for path in store.glob("runs/*/attempt_*.json"):
            try:
                total += json.loads(path.read_text())["ledger"]["requests"]
            except (OSError, ValueError, KeyError):
                continue
        return total

    async def answer(self, question: str) -> dict:
        import os
        import sqlite3
        import time
        from pathlib import Path

        if question.startswith("crash") and not Path(self.marker).exists():
            Path(self.marker).write_text("crashed once\n", encoding="utf-8")
            cache = Path(os.environ["RAGPROOF_STORE"]) / "judge_cache.sqlite"
            deadline = time.monotonic() + self.wait_s
            while time.monotonic() < deadline:
                try:
                    with sqlite3.connect(f"file:{cache}?mode=ro", uri=True) as con:
                        rows = con.execute("select count(*) from judge_replies").fetchone()[0]
                except sqlite3.Error:
                    rows = 0
                if rows >= self.wait_cached and self._recorded(cache.parent) >= self.wait_recorded:
                    break
                await asyncio.sleep(0.05)
            os._exit(13)  # like an evicted pod: no cleanup, no exception
        return {"text": f"The answer to {question.rstrip('?')} is forty-two."}


class ConfigEditingAdapter(PlainAdapter):
    """Edits its own config file when built, as a user saving a change mid-run would:
    ``version = 1`` becomes ``version = 2`` in the ``[adapter] options``."""

    def __init__(self, config: str, version: int) -> None:
        from pathlib import Path

        path = Path(config)
        path.write_text(path.read_text().replace("version = 1", "version = 2"))


class ShardsEditingAdapter(PlainAdapter):
    """Edits its own config file when built: ``shards = <before>`` becomes ``shards =
    <after>`` in its ``[run]`` table, as a user saving a change while the run starts would."""

    def __init__(self, config: str, before: int, after: int) -> None:
        from pathlib import Path

        path = Path(config)
        path.write_text(path.read_text().replace(f"shards = {before}", f"shards = {after}"))
