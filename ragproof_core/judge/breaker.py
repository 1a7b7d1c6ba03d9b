"""The judge's circuit breaker: a run stops calling a judge that cannot work
(CONTRACT section 24).

A misconfigured judge fails every request the same way: a wrong key (401), a
model the provider does not serve (404), a parameter it refuses (400), a key
that is not set at all. Paying for a whole dataset of such requests, each
counted as a judge error, tells the user nothing the first few did not. So:

- while its first 5 answered requests have all failed with such an error
  (``Outcome.UNAVAILABLE``), at most 5 requests are in flight or answered at
  once: requests beyond wait, and when the 5th such failure arrives the breaker
  opens without any of them having been sent. The first other answer (a reply,
  a 429 or 5xx after its retries, a refusal of that request alone) closes this
  probation for the rest of the run;
- 20 requests in a row that failed after their retries (any failure but a
  refusal of one request's content) open it too: the judge was reachable once
  and is not any more.

Once open, every question raises ``JudgeUnavailable`` before anything is sent;
the run ends ``aborted:judge`` with the provider's reason. Requests that got no
answer at all (a refused connection, a timeout) never count towards the first
rule: they say nothing about the key or the model.

One breaker guards one model's requests (a jury's members each have one), in
one process (each shard of a run has its own).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from ragproof_core.judge.types import JudgeUnavailable

FIRST_ANSWERS = 5
FAILURES_IN_A_ROW = 20


class Outcome(enum.Enum):
    """What one request (its retries included) came to, as the breaker counts it."""

    # A reply, valid or not; or a refusal of this request's content alone (a content
    # filter, a context window exceeded): the judge works.
    ANSWERED = "answered"
    # HTTP 400, 401, 403, 404 or a missing credential: no request of this judge can work.
    UNAVAILABLE = "unavailable"
    # 429, 408 or 5xx after every attempt: answered, but failed.
    GAVE_UP = "gave_up"
    # No answer after every attempt (a refused connection, a timeout).
    NO_ANSWER = "no_answer"


@dataclass
class Breaker:
    """``async with breaker.request(): ...`` around each request; ``record`` its outcome."""

    model: str = ""
    first_answers: int = FIRST_ANSWERS
    failures_in_a_row: int = FAILURES_IN_A_ROW
    # Why the breaker opened (None: closed).
    reason: str | None = None
    # Probation: no answer but UNAVAILABLE ones so far.
    probation: bool = True
    unavailable: int = 0
    in_a_row: int = 0
    in_flight: int = 0
    _waiters: list[asyncio.Future[None]] = field(default_factory=list)

    @contextlib.asynccontextmanager
    async def request(self) -> AsyncIterator[None]:
        """Admit one request (waiting while probation allows no more in flight; raising
        ``JudgeUnavailable`` once open); the body must ``record`` its outcome, or leave
        by an exception (a budget stop, a cancellation), which records none."""
        await self._admit()
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1
            self._wake()

    def record(self, outcome: Outcome, reason: str = "") -> None:
        """Count one request's outcome; ``reason``: its error, for a failure."""
        if outcome is Outcome.ANSWERED:
            self.probation = False
            self.in_a_row = 0
            return
        if outcome is Outcome.GAVE_UP:
            self.probation = False
        if outcome is Outcome.UNAVAILABLE and self.probation:
            self.unavailable += 1
            if self.unavailable >= self.first_answers and self.reason is None:
                self.reason = (
                    f"{self.model}: {reason} (its first {self.first_answers} answered "
                    "requests all failed this way)"
                )
        self.in_a_row += 1
        if self.in_a_row >= self.failures_in_a_row and self.reason is None:
            self.reason = (
                f"{self.model}: {reason} ({self.failures_in_a_row} requests in a row "
                "failed after their retries)"
            )

    async def _admit(self) -> None:
        while True:
            if self.reason is not None:
                raise JudgeUnavailable(self.reason)
            if not self.probation or self.unavailable + self.in_flight < self.first_answers:
                return
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)

    def _wake(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
