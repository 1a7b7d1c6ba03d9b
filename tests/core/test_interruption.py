"""A signal's stop as a run step sees it (CONTRACT section 29): the allowance of the
requests in flight starts when the stop is first seen, and ``finish`` cancels what is
still running once it is over, keeping what finished."""

from __future__ import annotations

import asyncio

import pytest

from ragproof_core.interruption import Interrupted, Interruption, finish


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_allowance_starts_when_the_stop_is_first_seen() -> None:
    clock, asked = Clock(), []
    stop = Interruption(lambda: bool(asked), in_flight_s=10.0, clock=clock)
    assert (stop.is_set(), stop.remaining()) == (False, None)
    stop.check()  # nothing requested: no exception
    asked.append(True)
    clock.now = 103.0
    assert stop.is_set()
    clock.now = 107.5
    assert stop.remaining() == 5.5
    clock.now = 200.0
    assert stop.remaining() == 0.0
    with pytest.raises(Interrupted):
        stop.check()


def test_finish_cancels_what_still_runs_once_the_allowance_is_over() -> None:
    finished: list[str] = []

    async def work(name: str, seconds: float) -> None:
        await asyncio.sleep(seconds)
        finished.append(name)

    async def main() -> list[asyncio.Task]:
        stop = Interruption(lambda: True, in_flight_s=0.2)
        tasks = [
            asyncio.ensure_future(work("quick", 0.0)),
            asyncio.ensure_future(work("hung", 3600)),
        ]
        await finish(tasks, stop)
        return tasks

    quick, hung = asyncio.run(main())
    assert finished == ["quick"]
    assert quick.done() and not quick.cancelled()
    assert hung.cancelled()


def test_finish_without_a_stop_awaits_everything_and_raises_the_first_error() -> None:
    async def fails() -> None:
        raise ValueError("boom")

    async def main() -> None:
        await finish(
            [asyncio.ensure_future(asyncio.sleep(0)), asyncio.ensure_future(fails())], None
        )

    with pytest.raises(ValueError, match="boom"):
        asyncio.run(main())

    async def never_stopped() -> list[int]:
        done: list[int] = []

        async def one(n: int) -> None:
            await asyncio.sleep(0.01 * n)
            done.append(n)

        await finish([asyncio.ensure_future(one(n)) for n in range(3)], Interruption(lambda: False))
        return done

    assert asyncio.run(never_stopped()) == [0, 1, 2]
