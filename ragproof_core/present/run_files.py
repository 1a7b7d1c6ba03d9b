"""SQL over chosen runs' Parquet files, on a local or an object store
(``store.file_sql``): the files of a run's table, and a connection to read them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import duckdb

from ragproof_core.store.file_sql import file_reader
from ragproof_core.store.run_store import RunStore


def table_files(store: RunStore, run_ids: Iterable[str], table: str) -> list[str]:
    """The files (paths or URLs) holding ``table`` for each of ``run_ids``, shards included."""
    return [
        store.layout.url(part) for run_id in run_ids for part in store.table_parts(run_id, table)
    ]


@contextmanager
def reader(store: RunStore) -> Iterator[duckdb.DuckDBPyConnection]:
    """A fresh in-memory DuckDB connection able to read the store's files."""
    with file_reader(store.layout) as con:
        yield con
