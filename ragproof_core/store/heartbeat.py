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
    only a run that is running, or was stopped unrecorded, keeps one."""

    def __init__(
        self,
        catalog: Catalog,
        run_id: str,
        done: Callable[[], bool],
        every_s: float = HEARTBEAT_EVERY_S,
    ) -> None:
        self.catalog = catalog
        self.run_id = run_id
        self.done = done
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, name=f"ragproof-heartbeat-{run_id}", daemon=True
        )

    def _beat(self) -> None:
        while not self._stop.wait(self.every_s):
            with suppress(OSError):
                self.catalog.beat(self.run_id)

    def __enter__(self) -> Heartbeat:
        with suppress(OSError):
            self.catalog.beat(self.run_id)
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
        with suppress(OSError):
            if self.done():
                self.catalog.end_beats(self.run_id)
