"""A running run's heartbeat (CONTRACT section 29): renewed in the store every 5 s by
every process working on the run, so one whose process or machine is gone is listed
``interrupted`` within 15 s, on a local or an object store alike, never ``running``
for ever. The catalog's views compare the last beat with the reader's clock
(``catalog_views.py``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import suppress
from types import TracebackType

from ragproof_core.store.catalog import HEARTBEAT_EVERY_S, Catalog


class Heartbeat:
    """Beats for ``run_id`` on a daemon thread while entered. A beat that cannot be
    written is skipped (the store's own faults are reported by the writes that need it).
    On leaving, the beat file goes when the run ended or never started (``done``), so
    only a run that is running, or was stopped unrecorded, keeps one.

    Between beats it looks for the run's stop request (``stop_requested``: the command
    that launched the run took a signal) and sets ``stopping``, which the run's steps
    read before each new adapter or judge request."""

    def __init__(
        self,
        catalog: Catalog,
        run_id: str,
        done: Callable[[], bool],
        stop_requested: Callable[[], bool] | None = None,
        every_s: float = HEARTBEAT_EVERY_S,
        look_every_s: float = 0.25,
        alive: Callable[[], bool] | None = None,
    ) -> None:
        self.catalog = catalog
        self.run_id = run_id
        self.done = done
        self.stop_requested = stop_requested
        # When given, a beat is only written once it is true (the command that launched
        # the run beats only once its run has started, so a refused resume never makes a
        # stopped run look alive).
        self.alive = alive
        self.every_s = every_s
        self.look_every_s = look_every_s
        self.stopping = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, name=f"ragproof-heartbeat-{run_id}", daemon=True
        )

    def _beat(self) -> None:
        waited = 0.0
        while not self._stop.wait(self.look_every_s):
            waited += self.look_every_s
            if self.stop_requested is not None and not self.stopping.is_set():
                # Any error, not only OSError: an object store that went away raises
                # botocore's own exceptions, and this thread must never die of them.
                with suppress(Exception):
                    if self.stop_requested():
                        self.stopping.set()
            if waited >= self.every_s:
                waited = 0.0
                self._beat_once()

    def _beat_once(self) -> None:
        with suppress(Exception):
            if self.alive is None or self.alive():
                self.catalog.beat(self.run_id)

    def __enter__(self) -> Heartbeat:
        self._beat_once()
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        with suppress(Exception):
            if self.done():
                self.catalog.end_beats(self.run_id)
