"""A requests-per-minute limit on judge calls (RAGPROOF_JUDGE_RPM, ``[judge] rpm``).

Every request, repairs and transport retries included, starts at least
``60 / rpm`` seconds after the previous one, as the provider sees it: a
provider counts arrivals, so the slot is taken when the request is about to
leave (``LiteLLMClient``'s send gate, right before the HTTP request goes out),
not when its task is scheduled. A request reserves the next free start time
and sleeps until it: the limiter only ever delays, so a rate limit never drops
a case (a provider's 429 still backs off in the client as before).

Across processes the schedule is shared in one of two ways:

- A local store: the next free start time lives in a small slot file beside
  the judge cache, read and advanced under an exclusive ``fcntl`` lock, so
  every process on the machine (the shards of a run, concurrent runs on the
  store) draws from one schedule, and a shard that finishes early leaves its
  share to the others.
- A remote store (nothing may be kept on local disk, and shards may run on
  different machines): the run's schedule is the grid of start times
  ``anchor + k * 60 / rpm``, anchored at the run's start time from its
  manifest, and shard ``s`` of ``n`` owns the slots ``k = s, s + n, s + 2n,
  ...``. No two shards ever own one slot, whenever each starts and however
  fast it goes, and no store round trip sits in front of a request. A shard
  that starts late skips the slots already past; one that finishes early
  leaves its slots idle (the run then runs below ``rpm``, never above it).
  The shards' clocks must agree (NTP): a skew of e seconds between two
  machines can shorten a gap by e.
"""

from __future__ import annotations

import asyncio
import fcntl
import math
import os
import time
from pathlib import Path

SLOT_FILE_NAME = "judge_rate.slot"
# A stored start time further ahead than this is from a clock that jumped back
# (or a corrupt file): start afresh rather than sleep for hours.
_STALE_AHEAD_S = 24 * 3600
# Woken later than this fraction of the interval after its slot, a request takes
# another slot instead, at most RETAKES times.
LATE_FRACTION = 0.05
RETAKES = 2


def interval_s(rpm: float) -> float:
    if rpm <= 0:
        raise ValueError(f"rpm must be positive, got {rpm}")
    return 60.0 / rpm


def next_start(now: float, reserved: float | None, interval: float) -> float:
    """When a request asking at ``now`` may start, given the next free start time."""
    if reserved is None or reserved - now > _STALE_AHEAD_S:
        return now
    return max(now, reserved)


def own_slot(
    now: float, anchor: float, interval: float, share: int, shares: int, after: int
) -> int:
    """The first slot ``k`` of the grid ``anchor + k * interval`` that starts no
    earlier than ``now``, is not before slot ``after`` and belongs to shard
    ``share`` of ``shares`` (``k % shares == share``)."""
    first = max(after, math.ceil((now - anchor) / interval))
    return first + (share - first) % shares


class RateLimiter:
    """In-process schedule: ``await acquire()`` returns the wall-clock start it waited for."""

    def __init__(self, rpm: float) -> None:
        self.rpm = rpm
        self.interval = interval_s(rpm)
        self._next: float | None = None
        self._passed: float | None = None  # when this process's last request went

    def _reserve(self) -> tuple[float, float]:
        now = time.time()
        start = next_start(now, self._next, self.interval)
        self._next = start + self.interval
        return now, start

    async def acquire(self) -> float:
        """Wait for a slot; one woken too late for it (its process busy or descheduled)
        would arrive too close to the next slot's request, so it takes a later slot,
        at most ``RETAKES`` times. Whatever the slots, this process's requests then go
        at least one interval apart (``_spaced``)."""
        for _ in range(RETAKES + 1):
            start = await self._wait_for_slot()
            if time.time() - start <= self.interval * LATE_FRACTION:
                break
        await self._spaced()
        return start

    async def _spaced(self) -> None:
        """Wait until one interval has passed since this process's last request went.
        A request that used up its retakes went however late it woke: without this,
        the next slot's request, woken on time, went right after it (a gap of 0.0005 s
        at the judge server, 0.5 s apart by their slots, on a loaded machine)."""
        while self._passed is not None:
            wait = self._passed + self.interval - time.time()
            if wait <= 0:
                break
            await asyncio.sleep(wait)
        self._passed = time.time()

    async def _wait_for_slot(self) -> float:
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

    async def _wait_for_slot(self) -> float:
        # The lock may wait on another process: never block the event loop on it.
        now, start = await asyncio.to_thread(self._reserve)
        now = time.time()
        if start > now:
            await asyncio.sleep(start - now)
        return start


class InterleavedLimiter(RateLimiter):
    """Shard ``share`` of ``shares``: the slots of the run's grid that are its own."""

    def __init__(self, rpm: float, anchor: float, share: int, shares: int) -> None:
        super().__init__(rpm)
        if not 0 <= share < shares:
            raise ValueError(f"shard {share} is not one of {shares}")
        self.anchor = anchor
        self.share = share
        self.shares = shares
        self._slot = share - shares  # the last slot taken: none yet

    def _reserve(self) -> tuple[float, float]:
        now = time.time()
        after = self._slot + self.shares
        self._slot = own_slot(now, self.anchor, self.interval, self.share, self.shares, after)
        return now, self.anchor + self._slot * self.interval


def make_limiter(
    rpm: float | None,
    slot_path: Path | None,
    shares: int = 1,
    share: int = 0,
    anchor: float | None = None,
) -> RateLimiter | None:
    """The limiter for ``rpm`` (None: no limit): shared through ``slot_path`` when
    given; else, for shard ``share`` of ``shares``, its slots of the run's grid
    anchored at ``anchor`` (the run's start, epoch seconds); without an anchor,
    this process's ``1 / shares`` of the rate."""
    if rpm is None:
        return None
    if slot_path is not None:
        return SlotFileLimiter(rpm, slot_path)
    if shares > 1 and anchor is not None:
        return InterleavedLimiter(rpm, anchor, share, shares)
    return RateLimiter(rpm / max(1, shares))
