"""What a running shard attempt has paid the judge, kept in the store as it goes.

A shard step can die mid-way (an evicted pod, an out-of-memory kill) after it
paid for judge requests. Its verdicts survive in the judge cache, and the
re-executed shard finds them there, but its ``ShardReport`` is never written,
so without this the run record would show only the last attempt's requests
and cost: less than was spent. Each attempt therefore rewrites one small
document, ``attempt_<shard>_<token>``, with its judge ledger every few seconds
while it runs (as often as the remote judge cache flushes), and once more at
the end. The gathering step adds the ledgers of attempts that never reported
(``unfinished_attempts``) to the run's totals. A SIGKILLed attempt loses at
most its last interval of counts, as the cache loses at most its last
interval of verdicts.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ragproof_core.judge import JudgeLedger

ATTEMPT_PREFIX = "attempt_"
WRITE_INTERVAL_S = 2.0


def new_attempt_token() -> str:
    return secrets.token_hex(6)


def attempt_document_name(shard: int, token: str) -> str:
    """The run document of one attempt (an identifier, as run documents must be)."""
    return f"{ATTEMPT_PREFIX}{shard:04d}_{token}"


def attempt_document(shard: int, token: str, ledger: JudgeLedger) -> dict[str, Any]:
    return {"shard": shard, "attempt": token, "ledger": ledger.to_dict()}


def unfinished_attempts(
    documents: Sequence[Mapping[str, Any]], reported: set[tuple[int, str]]
) -> list[JudgeLedger]:
    """The ledgers of attempts that never wrote their shard's report.

    ``reported``: (shard, attempt token) of every shard report the run holds.
    """
    return [
        JudgeLedger.from_dict(doc["ledger"])
        for doc in documents
        if (int(doc["shard"]), str(doc["attempt"])) not in reported
    ]


class AttemptRecorder:
    """Writes ``snapshot()`` through ``write`` every ``interval_s`` while it changes.

    A background thread, because the event loop may be busy for seconds at a
    time (a long adapter call) and the counts must reach the store meanwhile.
    """

    def __init__(
        self,
        write: Callable[[dict[str, Any]], None],
        snapshot: Callable[[], dict[str, Any]],
        interval_s: float = WRITE_INTERVAL_S,
    ) -> None:
        self._write = write
        self._snapshot = snapshot
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="attempt-recorder", daemon=True)
        self._last: dict[str, Any] | None = None

    def _record(self) -> None:
        try:
            document = self._snapshot()
        except RuntimeError:
            # The judge's usage tally changed size while it was read: next tick.
            return
        if document != self._last:
            self._write(document)
            self._last = document

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                self._record()
            except OSError:
                # A store hiccup must not kill the shard: the next tick retries.
                continue

    def __enter__(self) -> AttemptRecorder:
        self._record()  # the attempt is on record from its start
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._record()
