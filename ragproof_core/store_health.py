"""Whether the store can still be written, as one run step sees it.

The judge cache, the attempt ledger and the result batches all write to the
store while the judge is being paid. Once one of those writes fails (a full
disk, an object store gone), every further verdict would be paid for and
then lost, so the first failure is recorded here and the judge refuses to
send another request (``StoreWriteError``). The run then stops with one line
naming the fault and exit code 5 (docs/errors.md), keeping what it could.

Plain and bottom-layer on purpose: the judge, the caches, the run step and the
command line all share it.
"""

from __future__ import annotations

import threading

_MAX_DETAIL_CHARS = 300
# How a failed step's message starts when it stopped on a store fault: the command
# line exits 5 for it, not 1.
STORE_FAULT = "the store could not be written"


class StoreWriteError(Exception):
    """The store could not be written; ``str()`` names what failed and why."""


class StoreHealth:
    """The first store write failure of one run step (thread-safe)."""

    def __init__(self) -> None:
        self._fault: str | None = None
        self._lock = threading.Lock()

    @property
    def fault(self) -> str | None:
        return self._fault

    def record(self, what: str, exc: BaseException) -> StoreWriteError:
        """Remember the failure (the first one wins) and return the error to raise."""
        with self._lock:
            if self._fault is None:
                self._fault = f"{what}: {describe(exc)}"
            return StoreWriteError(self._fault)

    def check(self) -> None:
        """Raise ``StoreWriteError`` once any store write has failed."""
        if self._fault is not None:
            raise StoreWriteError(self._fault)


def describe(exc: BaseException) -> str:
    try:
        detail = " ".join(str(exc).split())
    except Exception:  # noqa: BLE001 - a library's exception text is not ours to trust
        detail = ""
    if len(detail) > _MAX_DETAIL_CHARS:
        detail = detail[: _MAX_DETAIL_CHARS - 3] + "..."
    kind = type(exc).__name__
    return f"{kind}: {detail}" if detail else kind
