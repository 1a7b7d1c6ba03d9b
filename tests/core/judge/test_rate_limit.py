"""RAGPROOF_JUDGE_RPM: requests start at least 60/RPM seconds apart, within a process and
across processes sharing the store's slot file; a 429 still backs off and nothing is dropped.

Spacing is asserted only as lower bounds (a limiter can never make requests start
sooner than its schedule), so a slow machine cannot make these tests flake.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import pytest

from ragproof_core.judge.factory import make_judge
from ragproof_core.judge.rate_limit import (
    SLOT_FILE_NAME,
    InterleavedLimiter,
    RateLimiter,
    SlotFileLimiter,
    make_limiter,
    next_start,
    own_slot,
)
from ragproof_core.judge.session import LiteLLMJudge
from ragproof_core.judge.settings import JudgeEnv
from ragproof_core.metrics.generation import answer_relevance
from ragproof_core.model import Answer, Case, CaseOutput, Status
from tests.conftest import REPO
from tests.core.judge.conftest import MODEL, run
from tests.support.judge_server import Reply

pytestmark = pytest.mark.filterwarnings("ignore:.*ReadOnly. qualifier:UserWarning")


def cases(n: int) -> list[tuple[Case, CaseOutput]]:
    return [
        (Case(f"q{i}", f"question {i}?"), CaseOutput(f"q{i}", Answer(f"answer {i}.")))
        for i in range(n)
    ]


async def ask_all(judge, n: int):
    try:
        return await asyncio.gather(*(answer_relevance(c, o, judge) for c, o in cases(n)))
    finally:
        await judge.drain()  # the rate limit's HTTP session closes with the loop


def test_twenty_requests_at_600_per_minute_take_at_least_1_9_seconds(server, tmp_path):
    env = JudgeEnv(model=MODEL, api_base=server.url, rpm=600)
    judge = make_judge(env, tmp_path / "judge_cache.sqlite", use_cache=False, concurrency=16)
    started = time.monotonic()
    results = run(ask_all(judge, 20))
    elapsed = time.monotonic() - started
    # 20 starts 0.1 s apart: the last cannot start before 19 * 0.1 s.
    assert elapsed >= 1.9
    assert server.request_count == 20
    assert [r.status for r in results] == [Status.SCORED] * 20
    # The schedule lives in the slot file beside the cache: 0.1 s after the last start.
    assert (tmp_path / SLOT_FILE_NAME).is_file()


def test_a_jury_shares_one_schedule(server, tmp_path):
    env = JudgeEnv(model="openai/judge-a,openai/judge-b", api_base=server.url, rpm=1200)
    judge = make_judge(env, tmp_path / "judge_cache.sqlite", use_cache=False)
    started = time.monotonic()
    run(ask_all(judge, 5))
    assert server.request_count == 10
    assert time.monotonic() - started >= 9 * 0.05


def test_a_429_still_backs_off_and_its_retry_waits_for_a_slot(server, tmp_path):
    server.script(Reply.error(429))
    env = JudgeEnv(model=MODEL, api_base=server.url, rpm=600, backoff_s=0.0)
    judge = make_judge(env, tmp_path / "judge_cache.sqlite", use_cache=False)
    started = time.monotonic()
    (result,) = run(ask_all(judge, 1))
    assert (result.status, result.value) == (Status.SCORED, 1.0)
    assert server.request_count == 2
    assert time.monotonic() - started >= 0.1  # the retry is a request like any other


def test_in_process_starts_are_exactly_one_interval_apart():
    limiter = RateLimiter(rpm=1200)

    async def main():
        return await asyncio.gather(*(limiter.acquire() for _ in range(6)))

    starts = sorted(asyncio.run(main()))
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert all(gap >= 0.05 - 1e-6 for gap in gaps)


_WORKER = """
import asyncio, json, sys
from ragproof_core.judge.rate_limit import SlotFileLimiter
limiter = SlotFileLimiter(600, sys.argv[1])
async def main():
    return [await limiter.acquire() for _ in range(8)]
print(json.dumps(asyncio.run(main())))
"""


def test_two_processes_sharing_the_slot_file_keep_one_schedule(tmp_path):
    slot = tmp_path / "store" / SLOT_FILE_NAME
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(slot)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    starts = []
    for worker in workers:
        out, _ = worker.communicate(timeout=60)
        assert worker.returncode == 0
        starts.extend(json.loads(out))
    starts.sort()
    assert len(starts) == 16
    # Every start, whichever process made it, is at least 0.1 s after the one before.
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert min(gaps) >= 0.1 - 1e-6


_SHARD = """
import asyncio, json
from ragproof_core.judge.rate_limit import make_limiter
limiter = make_limiter(600, None, shares=2)  # one of two shards on a remote store
async def main():
    return await asyncio.gather(*(limiter.acquire() for _ in range(6)))
print(json.dumps(asyncio.run(main())))
"""


def test_shards_without_a_shared_slot_file_each_keep_their_share_of_the_rate(tmp_path):
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _SHARD], cwd=REPO, stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    per_shard = []
    for worker in workers:
        out, _ = worker.communicate(timeout=60)
        assert worker.returncode == 0
        per_shard.append(sorted(json.loads(out)))
    # Each shard starts at most 300 a minute (0.2 s apart), so the two together at
    # most 600: the run's RAGPROOF_JUDGE_RPM, with nothing shared between them.
    for starts in per_shard:
        assert len(starts) == 6
        assert min(b - a for a, b in zip(starts, starts[1:], strict=False)) >= 0.2 - 1e-6


def test_schedule_rules():
    assert make_limiter(None, None) is None
    assert type(make_limiter(60, None)) is RateLimiter
    assert make_limiter(60, None, shares=3).interval == 3.0  # a third of 60 a minute
    # A shared slot file holds the whole run's schedule: no share to take.
    assert make_limiter(60, __import__("pathlib").Path("x"), shares=3).interval == 1.0
    assert isinstance(make_limiter(60, __import__("pathlib").Path("x")), SlotFileLimiter)
    assert next_start(100.0, None, 1.0) == 100.0
    assert next_start(100.0, 99.0, 1.0) == 100.0  # the slot is free: start now
    assert next_start(100.0, 100.5, 1.0) == 100.5  # wait for the reserved slot
    assert next_start(100.0, 100.0 + 90_000, 1.0) == 100.0  # a clock jump: start afresh
    with pytest.raises(ValueError, match="rpm must be positive"):
        RateLimiter(0)


def test_interleaved_slots_belong_to_one_shard_each():
    # A grid of 1 s slots from 1000.0; shard 1 of 3 owns slots 1, 4, 7, ...
    assert own_slot(1000.0, 1000.0, 1.0, 1, 3, after=-2) == 1
    assert own_slot(1000.0, 1000.0, 1.0, 0, 3, after=-3) == 0
    assert own_slot(1004.5, 1000.0, 1.0, 1, 3, after=4) == 7  # slot 4 is past: the next own
    assert own_slot(1000.2, 1000.0, 1.0, 1, 3, after=4) == 4  # ahead of time: its next slot
    assert own_slot(990.0, 1000.0, 1.0, 2, 3, after=-100) == -10  # a clock behind the anchor
    # Shards started at different times and run at different speeds never share a slot,
    # and every slot a shard takes starts no earlier than when it asked.
    taken: dict[int, int] = {}
    for share, asks in enumerate([(1000.0, 1000.1, 1009.0), (1003.3, 1003.4), (1000.05,)]):
        after = share - 3
        for now in asks:
            after = own_slot(now, 1000.0, 1.0, share, 3, after + 3)
            assert after % 3 == share and 1000.0 + after >= now
            assert after not in taken
            taken[after] = share


def test_three_interleaved_shards_start_one_interval_apart():
    anchor = time.time()
    limiters = [InterleavedLimiter(1200, anchor, s, 3) for s in range(3)]

    async def main():
        return await asyncio.gather(*(lim.acquire() for lim in limiters for _ in range(4)))

    starts = sorted(asyncio.run(main()))
    assert len(starts) == 12
    assert min(b - a for a, b in zip(starts, starts[1:], strict=False)) >= 0.05 - 1e-6
    assert make_limiter(1200, None, shares=3, share=2, anchor=anchor).share == 2
    with pytest.raises(ValueError, match="shard 3 is not one of 3"):
        InterleavedLimiter(60, anchor, 3, 3)


class CountingLimiter(RateLimiter):
    def __init__(self, rpm: float) -> None:
        super().__init__(rpm)
        self.taken = 0

    async def acquire(self) -> float:
        self.taken += 1
        return await super().acquire()


def test_slots_are_taken_as_requests_leave_after_one_probe_per_event_loop(server):
    """The first request of an event loop takes a slot before LiteLLM's work on it and
    another as it leaves; once its send hook is seen to fire, every other request
    takes one slot, at the send. (Arrival gaps across processes:
    tests/assets/test_shard_rate_limit.py.)"""
    limiter = CountingLimiter(rpm=6000)
    judge = LiteLLMJudge(JudgeEnv(model=MODEL, api_base=server.url), None, limiter=limiter)
    results = run(ask_all(judge, 6))
    assert [r.status for r in results] == [Status.SCORED] * 6
    assert server.request_count == 6
    assert limiter.taken == 6 + 1
    results = run(ask_all(judge, 3))  # a new event loop probes again
    assert limiter.taken == 7 + 3 + 1
    assert server.request_count == 9


def test_requests_woken_late_past_their_retakes_still_go_one_interval_apart():
    # The event loop held 0.15 s at a time (a process descheduled on a loaded machine)
    # wakes requests late for their slots, 0.1 s apart, until their retakes are used
    # up; before each went one interval after the last, ten such requests went 0.0 s
    # apart (three runs of three).
    limiter = RateLimiter(rpm=600)
    went: list[float] = []

    async def request() -> None:
        await limiter.acquire()
        went.append(time.time())

    async def hog(seconds: float) -> None:
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            time.sleep(0.15)
            await asyncio.sleep(0)

    async def main() -> None:
        await asyncio.gather(hog(3.0), *(request() for _ in range(10)))

    asyncio.run(main())
    gaps = [b - a for a, b in zip(went, went[1:], strict=False)]
    assert len(went) == 10
    assert min(gaps) >= limiter.interval - 1e-3, gaps
