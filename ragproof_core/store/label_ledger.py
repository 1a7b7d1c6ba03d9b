"""One run's human labels as a long-lived process sees them: read once, then kept current.

``RunStore.labels`` reads every label file of the run, which is right for a command
that reads them once. The results browser asks after every label a person gives (the
page's tally), and reading every file each time made storing the N-th label cost N
file reads: 320 labels from 16 threads took two minutes. A ledger lists the folder and
reads only the files it has not read yet (``refresh``, for a page load, which also
sees other annotators' labels), and a label this process writes is added as written
(``add``), with no listing and no read. Label files are never rewritten, so a file
once read never needs reading again.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ragproof_core.store.labels import StoredLabel, current_labels

if TYPE_CHECKING:
    from ragproof_core.store.run_store import RunStore


class LabelLedger:
    """The labels of run ``run_id`` in ``store`` (module docstring); safe across threads."""

    def __init__(self, store: RunStore, run_id: str) -> None:
        self.store = store
        self.run_id = run_id
        self._lock = threading.Lock()
        self._read: dict[str, StoredLabel] = {}  # label id -> label

    def refresh(self) -> list[StoredLabel]:
        """The labels in force now: one listing, and only files not read before read."""
        paths = self.store.label_files(self.run_id)
        with self._lock:
            unread = [path for path in paths if path.stem not in self._read]
        found = self.store.read_labels(unread)
        with self._lock:
            self._read.update(found)
            return current_labels(list(self._read.items()))

    def add(self, label_id: str, label: StoredLabel) -> list[StoredLabel]:
        """The labels in force once ``label``, just written as ``label_id``, is counted."""
        with self._lock:
            self._read[label_id] = label
            return current_labels(list(self._read.items()))
