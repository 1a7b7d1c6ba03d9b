"""Which store a call of the Python surface uses: the one named, else the command
line's (``RAGPROOF_STORE``, default ``data/store``)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from ragproof_core.config import store_root
from ragproof_core.store import RunStore

STORE_VARIABLE = "RAGPROOF_STORE"


def store_location(store: str | os.PathLike[str] | None) -> str:
    """``store`` as the command line would name it (a folder or an fsspec URL)."""
    if store is None:
        return str(store_root())
    text = os.fspath(store)
    return text if "://" in text else str(Path(text).expanduser().resolve())


@contextlib.contextmanager
def using_store(store: str | os.PathLike[str] | None) -> Iterator[RunStore]:
    """``RAGPROOF_STORE`` set to ``store`` meanwhile (the run's steps read it, as a
    command's do), and that store opened."""
    location = store_location(store)
    saved = os.environ.get(STORE_VARIABLE)
    os.environ[STORE_VARIABLE] = location
    try:
        yield RunStore(store_root())
    finally:
        if saved is None:
            os.environ.pop(STORE_VARIABLE, None)
        else:
            os.environ[STORE_VARIABLE] = saved
