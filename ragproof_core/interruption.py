"""A signal's stop as one run step sees it (CONTRACT section 29).

From the moment the stop is seen, no new adapter or judge request is sent (each is
checked just before it would go: ``check`` raises ``Interrupted``), and the requests
already in flight get at most ``IN_FLIGHT_S`` before they are cancelled (``finish``).
What was answered and judged whole by then is kept; a case cut short is left for
``ragproof run --resume``.

Plain and bottom-layer, as ``store_health``: the adapter runner, the judge and the run's
evaluation share one per step.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

# How long the requests in flight at a signal may still take (CONTRACT section 29).
IN_FLIGHT_S = 10.0
# How often a coroutine waiting for the stop looks for it (the flag is an Event's).
POLL_S = 0.1


class Interrupted(Exception):
    """Raised before a request the run will not send: the signal came first."""


class Interruption:
    """The stop of one run step: ``requested()`` turns true once a signal asked for it
    (the step's heartbeat sets it, ``store.heartbeat``); the first time it is seen true
    starts the in-flight allowance."""

    def __init__(
        self,
        requested: Callable[[], bool],
        in_flight_s: float = IN_FLIGHT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._requested = requested
        self.in_flight_s = in_flight_s
        self._clock = clock
        self._seen_at: float | None = None

    def is_set(self) -> bool:
        if self._seen_at is None and self._requested():
            self._seen_at = self._clock()
        return self._seen_at is not None

    def check(self) -> None:
        """Raise ``Interrupted`` once the stop is requested: called before each request."""
        if self.is_set():
            raise Interrupted("the run was interrupted before this request")

    def remaining(self) -> float | None:
        """Seconds left of the in-flight allowance; None while no stop is requested."""
        if not self.is_set():
            return None
        assert self._seen_at is not None
        return max(0.0, self._seen_at + self.in_flight_s - self._clock())

    async def cutoff(self) -> None:
        """Return once a stop was requested and its in-flight allowance has run out."""
        while (left := self.remaining()) is None:
            await asyncio.sleep(POLL_S)
        await asyncio.sleep(left)


async def finish(tasks: Sequence[asyncio.Future], interruption: Interruption | None) -> None:
    """Await ``tasks`` (the first exception propagates, as ``asyncio.gather``'s); once a
    stop's in-flight allowance runs out, those still running are cancelled, and what
    finished stays done."""
    if not tasks:
        return
    together = asyncio.gather(*tasks)
    if interruption is None:
        await together
        return
    cutoff = asyncio.ensure_future(interruption.cutoff())
    try:
        await asyncio.wait({together, cutoff}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        cutoff.cancel()
    if together.done():
        together.result()
        return
    together.cancel()  # cancels every task still running
    await asyncio.gather(*tasks, return_exceptions=True)
