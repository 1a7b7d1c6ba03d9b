"""SQL over some of a store's Parquet files, on a local or an object store.

The store's views (``views.py``) scan every run of the store; a summary, a
report or a page about one run reads only that run's files. The connection
is in-memory and per call, so nothing holds ``ragproof.duckdb`` (whose lock a
running evaluation may need); on an object store the store's fsspec
filesystem is registered, as the views do.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import duckdb

from ragproof_core.store.layout import StoreLayout


@contextmanager
def file_reader(layout: StoreLayout) -> Iterator[duckdb.DuckDBPyConnection]:
    """A fresh in-memory DuckDB connection able to read the store's files."""
    con = duckdb.connect(":memory:")
    try:
        if layout.is_remote:
            con.register_filesystem(layout.fs)
        # Aggregates and top-k lists need no row order, and keeping it costs memory.
        con.execute("SET preserve_insertion_order = false")
        # A progress bar would land in the output of a command or a Dagster step.
        con.execute("SET enable_progress_bar = false")
        yield con
    finally:
        con.close()
