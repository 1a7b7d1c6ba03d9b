"""A requests-per-minute limit on judge calls (RAGPROOF_JUDGE_RPM, ``[judge] rpm``).

Every request, repairs and transport retries included, starts at least
``60 / rpm`` seconds after the previous one. A request reserves the next free
start time and sleeps until it: the limiter only ever delays, so a rate limit
never drops a case (a provider's 429 still backs off in the client as before).

Across processes (the shards of a run, or concurrent runs on one store) the
next free start time lives in a small slot file beside the judge cache,
read and advanced under an exclusive ``fcntl`` lock, so every process on the
machine draws from one schedule. Without a local file (``slot_path=None``, e.g.
a remote store, where nothing may be kept on local disk, and shards may run on
different machines) the schedule is kept in the process, and each of a run's
``shares`` shards keeps ``rpm / shares``: the run as a whole stays within
``rpm`` with no coordination beyond knowing its shard count. The price is
idle capacity when one shard finishes early; the gain is that no object-store
round trip sits in front of every request.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import time
from pathlib import Path

SLOT_FILE_NAME = "judge_rate.slot"
# A stored start time further ahead than this is from a clock that jumped back
# (or a corrupt file): start afresh rather than sleep for hours.
_STALE_AHEAD_S = 24 * 3600


def interval_s(rpm: float) -> float:
    if rpm <= 0:
        raise ValueError(f"rpm must be positive, got {rpm}")
    return 60.0 / rpm


def next_start(now: float, reserved: float | None, interval: float) -> float:
    """When a request asking at ``now`` may start, given the next free start time."""
    if reserved is None or reserved - now > _STALE_AHEAD_S:
        return now
    return max(now, reserved)


class RateLimiter:
    """In-process schedule: ``await acquire()`` returns the wall-clock start it waited for."""

    def __init__(self, rpm: float) -> None:
        self.rpm = rpm
        self.interval = interval_s(rpm)
        self._next: float | None = None

    def _reserve(self) -> tuple[float, float]:
        now = time.time()
        start = next_start(now, self._next, self.interval)
        self._next = start + self.interval
        return now, start

    async def acquire(self) -> float:
        # Reserve synchronously (no await in between), so coroutines never share a slot.
        now, start = self._reserve()
        if start > now:
            await asyncio.sleep(start - now)
        return start


class SlotFileLimiter(RateLimiter):
    """The schedule in a file shared by every process that opens the same path."""

    def __init__(self, rpm: float, path: Path) -> None:
        super().__init__(rpm)
        self.path = Path(path)

    def _reserve(self) -> tuple[float, float]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            text = os.read(fd, 64).decode("ascii", "replace").strip()
            try:
                reserved: float | None = float(text)
            except ValueError:
                reserved = None
            now = time.time()
            start = next_start(now, reserved, self.interval)
            os.lseek(fd, 0, os.SEEK_SET)
            os.ftruncate(fd, 0)
            os.write(fd, repr(start + self.interval).encode("ascii"))
            return now, start
        finally:
            os.close(fd)  # closing releases the lock

    async def acquire(self) -> float:
        # The lock may wait on another process: never block the event loop on it.
        now, start = await asyncio.to_thread(self._reserve)
        now = time.time()
        if start > now:
            await asyncio.sleep(start - now)
        return start


def make_limiter(rpm: float | None, slot_path: Path | None, shares: int = 1) -> RateLimiter | None:
    """The limiter for ``rpm`` (None: no limit); shared through ``slot_path`` when
    given, else this process's ``1 / shares`` of it (one of ``shares`` shards)."""
    if rpm is None:
        return None
    if slot_path is None:
        return RateLimiter(rpm / max(1, shares))
    return SlotFileLimiter(rpm, slot_path)
