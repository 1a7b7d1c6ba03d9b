"""SQL over chosen runs' Parquet files, on a local or an object store.

The store's views (``store/views.py``) scan every run of the store; a page
about one run, or one dataset's runs, reads only those runs' files. The
connection is in-memory and per call, so the app never holds
``ragproof.duckdb`` (whose lock a running evaluation may need); on an object
store the store's fsspec filesystem is registered, as the views do.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import duckdb

from ragproof_core.store.run_store import RunStore


def table_files(store: RunStore, run_ids: Iterable[str], table: str) -> list[str]:
    """The files (paths or URLs) holding ``table`` for each of ``run_ids``, shards included."""
    return [
        store.layout.url(part) for run_id in run_ids for part in store.table_parts(run_id, table)
    ]


@contextmanager
def reader(store: RunStore) -> Iterator[duckdb.DuckDBPyConnection]:
    """A fresh in-memory DuckDB connection able to read the store's files."""
    con = duckdb.connect(":memory:")
    try:
        if store.layout.is_remote:
            con.register_filesystem(store.layout.fs)
        yield con
    finally:
        con.close()
