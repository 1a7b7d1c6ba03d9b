"""Runs found damaged on read (CONTRACT section 29): which run a DuckDB error names.

A view's query fails on the first file it cannot read, and DuckDB's message names it.
A run's file (or its rows in the catalog's log, a hard link of it) makes that run
damaged: it is marked so in the catalog where the store can take it, and the query runs
again without it. Any other file of the catalog (a part, a snapshot) is a fault of the
catalog itself, which ``ragproof verify --repair`` rebuilds from the run folders.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import PurePath
from typing import TypeVar

import duckdb

from ragproof_core.errors import StoreFault
from ragproof_core.store.catalog import Catalog, run_file
from ragproof_core.store.layout import ENTRY_SEPARATOR, StoreLayout, validate_run_id
from ragproof_core.store.object_files import files_for

# Damaged runs one reader may find before it gives up (each costs one more attempt).
MAX_FOUND = 16
# Times one reader lists the catalog again after a file it listed vanished (a run's end,
# a compaction or gc removed it meanwhile) or was replaced while read, before the error
# counts as damage. A reader descheduled between a query's bind and its scan on a loaded
# machine can meet several replacements in a row (CI met four), so each attempt waits
# twice as long as the one before: about 1.6 s in all, a cost paid in full only by a
# file that is damaged for good.
MAX_VANISHED = 8
FIRST_PAUSE_S = 0.01
LONGEST_PAUSE_S = 0.5
# What DuckDB says when a Parquet file is replaced between a query's bind and its scan
# (a run's end replaces its open catalog entry with the finished one): the footer read
# at bind points into the new file's bytes. DuckDB 2.0 names no file for the last two.
TORN_READ_MARKERS = (
    "Prefetch registered",
    "TProtocolException",
    "don't know what type",
)
T = TypeVar("T")


def retrying(layout: StoreLayout, action: Callable[[dict[str, str]], T]) -> T:
    """``action(found)`` again after each DuckDB error naming a run's file: the run is
    marked damaged (or, on a store that cannot take the mark, added to ``found``, which
    ``action`` leaves out), so one damaged run never fails a reader of the rest. A
    catalog file that vanished since ``action`` listed it (another process's compaction,
    gc or damaged mark), or any file replaced between the query's bind and its scan, is
    first read again from a fresh listing, nothing marked."""
    found: dict[str, str] = {}
    vanished = 0
    while True:
        try:
            return action(found)
        except duckdb.Error as exc:
            if vanished < MAX_VANISHED and (
                listed_then_changed(layout, exc) or replaced_while_read(exc)
            ):
                time.sleep(min(FIRST_PAUSE_S * 2**vanished, LONGEST_PAUSE_S))
                vanished += 1
                continue
            damaged = found_on_read(layout, exc) if len(found) < MAX_FOUND else None
            if damaged is None or damaged[0] in found:
                raise
            found[damaged[0]] = damaged[1]


def replaced_while_read(exc: Exception) -> bool:
    """Whether ``exc`` is DuckDB reading a file that was atomically replaced under it.
    A file damaged for good fails the same way on every attempt, so after
    ``MAX_VANISHED`` attempts it is taken for damage all the same."""
    message = str(exc)
    return any(marker in message for marker in TORN_READ_MARKERS)


def failed_path(layout: StoreLayout, message: str) -> PurePath | None:
    """The store file a DuckDB error message names, if any (its path inside the store)."""
    # An object store's file is named by its URL, or (by fsspec) by its path in the bucket.
    roots = {str(layout.location).rstrip("/"), str(layout.root).rstrip("/")}
    pattern = "(?:" + "|".join(re.escape(root) for root in sorted(roots, key=len)[::-1]) + ")"
    match = re.search(pattern + r"/([^'\"\s]+)", message)
    if match is None or "Permission Error" in message:
        return None  # a path the reader may not read is refused, not damaged
    relative = PurePath(match.group(1).rstrip(".,:;)"))
    return None if ".." in relative.parts else relative


def listed_then_changed(layout: StoreLayout, exc: Exception) -> bool:
    """Whether ``exc`` is DuckDB meeting a file of the catalog (not a run folder's own)
    that another process changed since it was listed: removed (a run's end, compaction,
    gc, a damaged mark), or replaced while read (an object store's run entry, whose
    finished entry replaces its open one: fsspec's "no longer exists")."""
    message = str(exc)
    gone = "No files found" in message or "No such file" in message
    if not gone and "no longer exists" not in message:
        return False
    relative = failed_path(layout, message)
    if relative is None or relative.parts[:1] != ("catalog",):
        return False
    return not gone or files_for(layout).size(layout.root / relative) is None


def run_of(relative: PurePath) -> str | None:
    """The run a store file belongs to: ``runs/<id>/...`` or the catalog's log of it."""
    parts = relative.parts
    if len(parts) >= 3 and parts[0] == "runs":
        return parts[1]
    if len(parts) >= 4 and parts[:2] == ("catalog", "log"):
        return parts[3].split(ENTRY_SEPARATOR)[0]
    return None


def found_on_read(layout: StoreLayout, exc: Exception) -> tuple[str, str] | None:
    """(run id, damaged file) of the run whose file ``exc`` failed on, marked damaged in
    the catalog when the store can take it; None when the error names no store file.
    Raises ``StoreFault`` for a damaged file of the catalog itself."""
    message = str(exc)
    relative = failed_path(layout, message)
    if relative is None:
        return None
    run_id = run_of(relative)
    detail = message.strip().splitlines()[0]
    if run_id is None:
        raise StoreFault(
            f"the store: {relative.as_posix()}: {detail}; `ragproof verify --repair` "
            "rebuilds the catalog from the run folders"
        )
    validate_run_id(run_id)
    catalog = Catalog(layout, files_for(layout))
    shown = _run_file(relative, run_id)
    # A store that cannot be written: left out by this reader alone.
    with suppress(OSError):
        catalog.mark(run_id, "damaged", shown)
    return run_id, shown


def _run_file(relative: PurePath, run_id: str) -> str:
    """The damaged file as the run folder holds it: a log file is a link of the run's own."""
    parts = relative.parts
    if parts[0] == "runs":
        return relative.as_posix()
    return run_file(parts[2], run_id, PurePath(parts[3]).stem.split(ENTRY_SEPARATOR)[1])
