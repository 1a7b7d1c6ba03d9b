"""The judge reply cache: SQLite, one row per (model, prompt hash, input hash).

Only validated replies are stored, each committed on its own, so a process
killed mid-run keeps every verdict it has already paid for. WAL mode lets
readers proceed while one process writes; ``busy_timeout`` plus a bounded retry
lets several processes (concurrent runs, Dagster workers) write the same file.

The file holds model names, prompt hashes, the judge's replies and token
counts: never request headers, API keys or the prompts' rendered text.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ragproof_core.judge.reply_cache import CachedReply, Key, ReplyCache
from ragproof_core.judge.segment_cache import SegmentJudgeCache
from ragproof_core.quarantine import QUARANTINE_DIR, quarantine_file
from ragproof_core.store_health import StoreHealth

BUSY_TIMEOUT_MS = 10_000
# Beyond busy_timeout, "database is locked" can still surface (e.g. a WAL
# checkpoint racing a writer); these retries bound the extra wait to ~6 s.
LOCKED_RETRIES = 12
LOCKED_BACKOFF_S = 0.05

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judge_replies (
    model TEXT NOT NULL,
    prompt_hash TEXT NOT NULL,
    input_hash TEXT NOT NULL,
    reply_json TEXT NOT NULL,
    raw_text TEXT NOT NULL,
    input_tokens INTEGER,
    output_tokens INTEGER,
    cost_usd REAL NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (model, prompt_hash, input_hash)
) WITHOUT ROWID
"""

T = TypeVar("T")


# A SQLite file's companions, moved with it.
WAL_FILES = ("-wal", "-shm")


def quarantine_cache(path: Path, reason: str) -> Path | None:
    """Move an unreadable cache file (and its WAL files) into ``quarantine/`` beside it,
    saying so in one warning line; returns where it went (None: another process moved it)."""
    target = quarantine_file(path, WAL_FILES)
    if target is None:
        return None
    print(
        f"ragproof: warning: the judge cache {path.name} could not be opened ({reason}); "
        f"moved to {QUARANTINE_DIR}/{target.name}, the run goes on with a fresh cache",
        file=sys.stderr,
        flush=True,
    )
    return target


def is_unreadable(exc: sqlite3.Error) -> bool:
    """A cache file that is not a SQLite database, or a damaged one."""
    text = str(exc).lower()
    return isinstance(exc, sqlite3.DatabaseError) and (
        "not a database" in text or "malformed" in text or "corrupt" in text
    )


class JudgeCache(ReplyCache):
    """``read_only``: opened to be read (a dry run), never created or written."""

    def __init__(
        self, path: Path, health: StoreHealth | None = None, read_only: bool = False
    ) -> None:
        self.path = Path(path)
        self.health = StoreHealth() if health is None else health
        self.read_only = read_only
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        # One connection, possibly shared by an IO manager's threads.
        self._lock = threading.Lock()
        try:
            self._open()
        except sqlite3.DatabaseError as exc:
            if read_only or not is_unreadable(exc):
                raise
            self._conn.close()
            quarantine_cache(self.path, " ".join(str(exc).split()))
            self._open()

    def _open(self) -> None:
        read_only = self.read_only
        # Autocommit (isolation_level=None): every put is its own committed write.
        self._conn = sqlite3.connect(
            _read_only_uri(self.path) if read_only else self.path,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=False,
            uri=read_only,
        )
        self._retry_locked(self._init_read_only if read_only else self._init_schema)

    def _init_read_only(self) -> None:
        self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")

    def _init_schema(self) -> None:
        self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._conn.execute("PRAGMA journal_mode = WAL")
        # NORMAL in WAL mode: a commit survives a killed process (not a power cut),
        # without an fsync per verdict.
        self._conn.execute("PRAGMA synchronous = NORMAL")
        self._conn.execute(_SCHEMA)

    def _retry_locked(self, operation: Callable[[], T]) -> T:
        for attempt in range(LOCKED_RETRIES + 1):
            try:
                with self._lock:
                    return operation()
            except sqlite3.OperationalError as exc:
                message = str(exc).lower()
                if ("locked" not in message and "busy" not in message) or attempt == LOCKED_RETRIES:
                    raise
            time.sleep(LOCKED_BACKOFF_S * (attempt + 1))
        raise AssertionError("unreachable")

    def get(self, model: str, prompt_hash: str, input_hash: str) -> CachedReply | None:
        def read() -> tuple[Any, ...] | None:
            return self._conn.execute(
                "SELECT reply_json, raw_text, input_tokens, output_tokens, cost_usd, created_at "
                "FROM judge_replies WHERE model = ? AND prompt_hash = ? AND input_hash = ?",
                (model, prompt_hash, input_hash),
            ).fetchone()

        try:
            row = self._retry_locked(read)
        except sqlite3.DatabaseError as exc:
            if not is_unreadable(exc):
                raise
            # Damaged under a running run: set aside, and the run goes on with a fresh one.
            with self._lock:
                self._conn.close()
                quarantine_cache(self.path, " ".join(str(exc).split()))
            self._open()
            return None
        if row is None:
            return None
        return CachedReply(json.loads(row[0]), row[1], row[2], row[3], row[4], row[5])

    def _store(self, key: Key, reply: CachedReply) -> None:
        if self.read_only:
            raise ValueError(f"the judge cache {self.path} was opened to be read only")
        row = (
            *key,
            json.dumps(reply.data, ensure_ascii=False),
            reply.raw,
            reply.input_tokens,
            reply.output_tokens,
            reply.cost_usd,
            reply.created_at,
        )

        def write() -> None:
            self._conn.execute(
                "INSERT OR REPLACE INTO judge_replies VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row
            )

        try:
            self._retry_locked(write)
        except sqlite3.Error as exc:  # a full disk, a read-only store: the verdict is lost
            raise self.health.record("judge cache write", exc) from exc

    def count(self) -> int:
        return self._retry_locked(
            lambda: self._conn.execute("SELECT count(*) FROM judge_replies").fetchone()[0]
        )

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _read_only_uri(path: Path) -> str:
    """A URI opening ``path`` to be read only. With no write-ahead log beside it (nobody
    writing, every commit in the file) it is opened immutable: SQLite then reads the file
    alone and creates no ``-shm`` or ``-wal`` beside it, so reading leaves the store as
    it was; with one, as any reader opens it, to see what the log holds."""
    wal = path.with_name(path.name + "-wal")
    immutable = "&immutable=1" if not wal.exists() else ""
    return f"{path.resolve().as_uri()}?mode=ro{immutable}"


def open_judge_cache(where: Any, health: StoreHealth | None = None, read_only: bool = False):
    """The cache at ``where``: a SQLite file path (local store) or a remote store's
    segment folder (``layout.SegmentCacheLocation``; ``segment_cache.py``). A write
    that fails is recorded in ``health``. ``read_only``: a local file is opened to be
    read only (a remote cache writes nothing it was not given)."""
    if isinstance(where, str | Path):
        return JudgeCache(Path(where), health, read_only=read_only)
    return SegmentJudgeCache(where, health=health)
