"""The judge's circuit breaker's rules (CONTRACT section 24), on their own: what opens
it, what keeps it closed, and how many requests may be out while it is unproven."""

from __future__ import annotations

import asyncio

import pytest

from ragproof_core.judge.breaker import Breaker, Outcome
from ragproof_core.judge.types import ABORTED_JUDGE, JudgeUnavailable


async def _requests(breaker: Breaker, outcomes: list[Outcome]) -> tuple[int, int, list[str]]:
    """Send one request per outcome, all at once: (most in flight at once, requests
    admitted, the stops raised)."""
    in_flight = peak = admitted = 0
    stops: list[str] = []
    release = asyncio.Event()

    async def one(outcome: Outcome) -> None:
        nonlocal in_flight, peak, admitted
        try:
            async with breaker.request():
                admitted += 1
                in_flight += 1
                peak = max(peak, in_flight)
                await release.wait()
                in_flight -= 1
                breaker.record(outcome, "HTTP 401: invalid x-api-key")
        except JudgeUnavailable as exc:
            stops.append(str(exc))

    tasks = [asyncio.create_task(one(outcome)) for outcome in outcomes]
    await asyncio.sleep(0)
    release.set()
    await asyncio.gather(*tasks)
    return peak, admitted, stops


def test_five_refusals_open_it_before_a_sixth_request_is_sent() -> None:
    breaker = Breaker("openai/gpt-x")
    peak, admitted, stops = asyncio.run(_requests(breaker, [Outcome.UNAVAILABLE] * 40))
    assert (peak, admitted, len(stops)) == (5, 5, 35)
    assert breaker.reason == (
        "openai/gpt-x: HTTP 401: invalid x-api-key "
        "(its first 5 answered requests all failed this way)"
    )
    assert stops[0] == breaker.reason
    assert JudgeUnavailable.status == ABORTED_JUDGE


def test_one_reply_among_the_first_five_disarms_the_first_rule() -> None:
    breaker = Breaker("m")
    outcomes = [Outcome.UNAVAILABLE] * 4 + [Outcome.ANSWERED] + [Outcome.UNAVAILABLE] * 4
    peak, admitted, stops = asyncio.run(_requests(breaker, outcomes))
    assert (admitted, stops, breaker.reason) == (9, [], None)
    assert not breaker.probation
    # Proven: requests are no longer held back.
    peak, admitted, stops = asyncio.run(_requests(breaker, [Outcome.ANSWERED] * 12))
    assert (peak, admitted) == (12, 12)


def test_a_429_or_5xx_given_up_is_an_answer_that_disarms_the_first_rule() -> None:
    breaker = Breaker("m")
    for outcome in [Outcome.UNAVAILABLE] * 4 + [Outcome.GAVE_UP] + [Outcome.UNAVAILABLE] * 5:
        breaker.record(outcome, "why")
    assert breaker.reason is None


def test_requests_without_an_answer_do_not_count_towards_the_first_rule() -> None:
    breaker = Breaker("m")
    for outcome in [Outcome.NO_ANSWER] * 10 + [Outcome.UNAVAILABLE] * 4:
        breaker.record(outcome, "connection refused")
    assert breaker.reason is None and breaker.probation
    breaker.record(Outcome.UNAVAILABLE, "HTTP 404")
    assert breaker.reason is not None and "first 5 answered" in breaker.reason


@pytest.mark.parametrize("failure", [Outcome.GAVE_UP, Outcome.NO_ANSWER, Outcome.UNAVAILABLE])
def test_twenty_failures_in_a_row_open_it(failure: Outcome) -> None:
    breaker = Breaker("m")
    breaker.record(Outcome.ANSWERED)
    for _ in range(19):
        breaker.record(failure, "HTTP 503: Overloaded [gave up after 4 attempt(s)]")
    assert breaker.reason is None
    breaker.record(failure, "HTTP 503: Overloaded [gave up after 4 attempt(s)]")
    assert breaker.reason == (
        "m: HTTP 503: Overloaded [gave up after 4 attempt(s)] "
        "(20 requests in a row failed after their retries)"
    )
    with pytest.raises(JudgeUnavailable):
        asyncio.run(_admit(breaker))


async def _admit(breaker: Breaker) -> None:
    async with breaker.request():
        pass


def test_a_reply_resets_the_count_in_a_row() -> None:
    breaker = Breaker("m")
    for _ in range(3):
        for _ in range(19):
            breaker.record(Outcome.GAVE_UP, "HTTP 500")
        breaker.record(Outcome.ANSWERED)
    assert breaker.reason is None


def test_a_request_left_by_an_exception_records_nothing() -> None:
    breaker = Breaker("m")

    async def cancelled() -> None:
        for _ in range(10):
            with pytest.raises(RuntimeError):
                async with breaker.request():
                    raise RuntimeError("a budget stop, a cancellation")

    asyncio.run(cancelled())
    assert (breaker.in_flight, breaker.unavailable, breaker.reason) == (0, 0, None)
