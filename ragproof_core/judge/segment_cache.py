"""The judge cache of a remote store: immutable segment objects, read as a union.

Object storage has no locks and no appends, so a shared SQLite file cannot
live there. Instead every writer (one run, or one shard of a run) keeps the
replies it gets in memory and, at most every ``FLUSH_INTERVAL_S`` seconds and
at close, writes the ones not yet written as one new object::

    judge_cache/segments/<writer-id>-<seq>.jsonl

Objects are never rewritten, so any number of machines can write at once and
every row is kept. Opening the cache reads every segment (the union); later
lookups are in memory. A SIGKILLed run keeps every verdict up to its last
flush; the rest is paid for again by the next run, and only that.

Same key and interface as the SQLite cache (``cache.py``): (model, prompt
hash, input hash) and ``get``/``put``/``count``/``close``. Segments hold
model names, prompt hashes, replies and token counts, never keys or prompts.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
from datetime import UTC, datetime
from typing import Any

from ragproof_core.judge.reply_cache import CachedReply, Key, ReplyCache

FLUSH_INTERVAL_S = 2.0
SEGMENT_SUFFIX = ".jsonl"


def _parse_segment(text: str) -> list[tuple[Key, CachedReply]]:
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        key = (row["model"], row["prompt_hash"], row["input_hash"])
        rows.append(
            (
                key,
                CachedReply(
                    row["data"],
                    row["raw"],
                    row["input_tokens"],
                    row["output_tokens"],
                    row["cost_usd"],
                    row["created_at"],
                ),
            )
        )
    return rows


def _row(key: Key, reply: CachedReply) -> str:
    model, prompt_hash, input_hash = key
    return json.dumps(
        {
            "model": model,
            "prompt_hash": prompt_hash,
            "input_hash": input_hash,
            "data": reply.data,
            "raw": reply.raw,
            "input_tokens": reply.input_tokens,
            "output_tokens": reply.output_tokens,
            "cost_usd": reply.cost_usd,
            "created_at": reply.created_at,
        },
        ensure_ascii=False,
        sort_keys=True,
    )


class SegmentJudgeCache(ReplyCache):
    """``location``: a ``layout.SegmentCacheLocation`` (fsspec filesystem + folder)."""

    def __init__(self, location: Any, *, flush_interval_s: float = FLUSH_INTERVAL_S) -> None:
        self._fs = location.fs
        self._root = location.root.rstrip("/")
        # Unique per writer: a timestamp keeps listings chronological, the token apart.
        self._writer = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{os.getpid()}-{secrets.token_hex(4)}"
        self._seq = 0
        self._entries: dict[Key, CachedReply] = self._load()
        self._pending: list[Key] = []
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._stop = threading.Event()
        self._flusher = threading.Thread(
            target=self._flush_periodically, args=(flush_interval_s,), daemon=True
        )
        self._flusher.start()

    def _segment_paths(self) -> list[str]:
        try:
            names = self._fs.ls(self._root, detail=False)
        except FileNotFoundError:
            return []
        return sorted(p for p in names if p.endswith(SEGMENT_SUFFIX))

    def _load(self) -> dict[Key, CachedReply]:
        paths = self._segment_paths()
        entries: dict[Key, CachedReply] = {}
        if not paths:
            return entries
        # One concurrent fetch of every segment (s3fs runs them in parallel).
        contents = self._fs.cat(paths)
        for path in paths:
            for key, reply in _parse_segment(contents[path].decode("utf-8")):
                entries[key] = reply
        return entries

    def get(self, model: str, prompt_hash: str, input_hash: str) -> CachedReply | None:
        with self._lock:
            return self._entries.get((model, prompt_hash, input_hash))

    def _store(self, key: Key, reply: CachedReply) -> None:
        with self._lock:
            self._entries[key] = reply
            self._pending.append(key)

    def flush(self) -> int:
        """Write the replies not yet written as one new segment; returns how many."""
        with self._flush_lock:
            with self._lock:
                keys, self._pending = self._pending, []
                lines = [_row(key, self._entries[key]) for key in keys]
            if not lines:
                return 0
            self._seq += 1
            path = f"{self._root}/{self._writer}-{self._seq:06d}{SEGMENT_SUFFIX}"
            try:
                self._fs.pipe_file(path, ("\n".join(lines) + "\n").encode("utf-8"))
            except BaseException:
                with self._lock:  # kept for the next flush
                    self._pending[:0] = keys
                raise
            return len(lines)

    def _flush_periodically(self, interval_s: float) -> None:
        while not self._stop.wait(interval_s):
            try:
                self.flush()
            except Exception:  # noqa: BLE001 - retried at the next tick and at close
                continue

    def count(self) -> int:
        with self._lock:
            return len(self._entries)

    def close(self) -> None:
        self._stop.set()
        self._flusher.join()
        self.flush()
