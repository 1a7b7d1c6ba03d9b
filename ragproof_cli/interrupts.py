"""SIGINT and SIGTERM during `ragproof run` (CONTRACT section 29): the run is kept.

The run executes on a thread of its own, so Dagster (which replaces the signal
handlers only on the main thread) leaves them to this module: the first signal asks
the run's steps to stop through the store (``RunStore.request_stop``; every step's
heartbeat sees it within a quarter second, in this process or another), and the run
ends ``interrupted`` with every case scored before it; a second signal ends the
process at once.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import TypeVar

T = TypeVar("T")
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupts:
    """Runs ``work`` on a thread while the main thread takes SIGINT and SIGTERM."""

    def __init__(self, on_first: Callable[[int], None]) -> None:
        self.on_first = on_first
        self.signum: int | None = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None:
            os._exit(128 + signum)  # the second signal: at once
        self.signum = signum
        self.on_first(signum)

    def run(self, work: Callable[[], T]) -> T:
        outcome: dict[str, object] = {}

        def target() -> None:
            try:
                outcome["value"] = work()
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread
                outcome["error"] = exc

        previous = {s: signal.getsignal(s) for s in SIGNALS}
        for s in SIGNALS:
            signal.signal(s, self._handle)
        try:
            thread = threading.Thread(target=target, name="ragproof-run", daemon=True)
            thread.start()
            while thread.is_alive():
                thread.join(0.2)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
        if "error" in outcome:
            raise outcome["error"]  # type: ignore[misc]
        return outcome["value"]  # type: ignore[return-value]
