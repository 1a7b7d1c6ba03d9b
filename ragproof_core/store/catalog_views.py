"""The SQL that reads the catalog (``catalog.py``): each table's sources, the runs as they
stand, and the rows of the entries in force. Every view of the store is built on these
(``views.py``), in one order: entries, runs, rows.

Two kinds of source, the same SQL around them: a reader's own connection lists the
catalog's files when it connects (``CatalogState``: explicit paths, so nothing is globbed
and an object store is asked for three short listings); the local views file, which the
``duckdb`` command line opens as it is, names the snapshot's parts and globs the log
folders (small: compaction keeps them so), so a run finishing never has to rewrite it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
import pyarrow as pa

from ragproof_core.store import catalog as cat
from ragproof_core.store import tables
from ragproof_core.store.layout import ENTRY_SEPARATOR, StoreLayout

# Internal views (the user's views read them): every entry, and every visible run.
ENTRIES_VIEW = "ragproof_catalog"
RUN_STATES_VIEW = "ragproof_run_states"
IN_FORCE_VIEW = "ragproof_entries_in_force"
CATALOG_VIEWS: tuple[str, ...] = (ENTRIES_VIEW, RUN_STATES_VIEW, IN_FORCE_VIEW)


@dataclass(frozen=True, slots=True)
class Sources:
    """Where each catalog table's rows are read from, and the log files to skip."""

    files: dict[str, tuple[str, ...]]  # table -> paths, URLs or globs
    heartbeats: tuple[str, ...]  # beat files or a glob of them (the views file)
    folded: frozenset[str]
    seq: int
    # Runs this reader found damaged and could not mark (a read-only store): run -> file.
    found_damaged: tuple[tuple[str, str], ...] = ()
    # A reader's own connection: the beats as read with the listing, (run id, beat_at),
    # so no file a run's end removes is left for DuckDB to open (``heartbeats`` unused).
    beats: tuple[tuple[str, str], ...] | None = None


def sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def reader_sources(
    layout: StoreLayout, state: cat.CatalogState, found_damaged: dict[str, str] | None = None
) -> Sources:
    """A reader's own connection: every file named."""
    files = {}
    for table in cat.CATALOG_TABLES:
        parts = [_part_url(layout, table, p) for p in state.snapshot.table_parts(table)]
        files[table] = (*parts, *state.log.get(table, ()))
    found = tuple(sorted((found_damaged or {}).items()))
    return Sources(files, (), frozenset(), state.snapshot.seq, found, state.heartbeats)


def glob_sources(layout: StoreLayout, snapshot: cat.Snapshot) -> Sources:
    """The views file: the snapshot's parts named, the log folders globbed (each holds a
    zero-row schema file, so a glob always matches)."""
    files = {}
    for table in cat.CATALOG_TABLES:
        parts = [_part_url(layout, table, p) for p in snapshot.table_parts(table)]
        glob = layout.url(layout.catalog_log_dir(table) / "*.parquet")
        files[table] = (*parts, glob)
    beats = (layout.url(layout.heartbeats_dir / "*.json"),)
    return Sources(files, beats, snapshot.folded, snapshot.seq)


def _part_url(layout: StoreLayout, table: str, part: cat.Part) -> str:
    return layout.url(layout.catalog_part_path(table, part.name))


@functools.cache
def _sql_types(schema: pa.Schema) -> tuple[tuple[str, str], ...]:
    """Each column's DuckDB type, as DuckDB itself reads the Arrow type."""
    with duckdb.connect(":memory:") as con:
        relation = con.from_arrow(schema.empty_table())
        return tuple(
            (name, str(kind)) for name, kind in zip(schema.names, relation.dtypes, strict=True)
        )


def _empty(schema: pa.Schema, *extra: str) -> str:
    """A zero-row SELECT with exactly ``schema``'s columns and types (then ``extra``)."""
    columns = [f"CAST(NULL AS {kind}) AS {name}" for name, kind in _sql_types(schema)]
    columns += [f"CAST(NULL AS VARCHAR) AS {name}" for name in extra]
    return f"SELECT {', '.join(columns)} WHERE false"


def _key_sql() -> str:
    stem = "parse_filename(filename, true)"
    return (
        f"split_part({stem}, '{ENTRY_SEPARATOR}', 1) || '{ENTRY_SEPARATOR}' || "
        f"split_part({stem}, '{ENTRY_SEPARATOR}', 2)"
    )


def source_sql(paths: Sequence[str], schema: pa.Schema, folded: frozenset[str]) -> str:
    """Rows of ``paths`` (with their ``filename``) with ``schema``'s columns at least;
    log files of ``folded`` entries left out."""
    empty = _empty(schema, "filename")
    if not paths:
        return f"({empty})"
    listed = ", ".join(sql_string(p) for p in paths)
    scan = (
        f"SELECT * FROM read_parquet([{listed}], union_by_name = true, filename = true, "
        "hive_partitioning = false)"
    )
    if folded:
        keys = ", ".join(sql_string(k) for k in sorted(folded))
        scan += f" WHERE {_key_sql()} NOT IN ({keys})"
    return f"({scan} UNION ALL BY NAME {empty})"


def beats_sql(paths: Sequence[str], beats: Sequence[tuple[str, str]] | None = None) -> str:
    """The heartbeats: ``beats`` as given, else the files ``paths`` (a line of JSON each;
    the schema file is empty)."""
    empty = _empty(tables.HEARTBEATS.schema)
    if beats is not None:
        if not beats:
            return f"({empty})"
        rows = ", ".join(
            f"({sql_string(run_id)}, CAST({sql_string(at)} AS TIMESTAMPTZ))" for run_id, at in beats
        )
        return f"(SELECT * FROM (VALUES {rows}) AS beats(run_id, beat_at))"
    if not paths:
        return f"({empty})"
    listed = ", ".join(sql_string(p) for p in paths)
    return (
        f"(SELECT run_id, beat_at FROM read_json([{listed}], format = 'newline_delimited', "
        "columns = {run_id: 'VARCHAR', beat_at: 'TIMESTAMPTZ'}) "
        f"UNION ALL BY NAME {empty})"
    )


def catalog_ddl(sources: Sources) -> list[str]:
    """The internal views: every entry, every visible run as it stands, the entries whose
    rows the other views read (finished, not damaged)."""
    entries = source_sql(sources.files[cat.RUNS], tables.CATALOG_RUNS.schema, sources.folded)
    beats = beats_sql(sources.heartbeats, sources.beats)
    damaged = (
        "coalesce(CASE WHEN m.damaged_at > live.entry THEN m.marked_file END, live.damaged_file)"
    )
    found = ""
    if sources.found_damaged:
        rows = ", ".join(
            f"({sql_string(run_id)}, '{cat.DAMAGED}', '~', {sql_string(file)})"
            for run_id, file in sources.found_damaged
        )
        found = (
            f" UNION ALL BY NAME SELECT * FROM (VALUES {rows}) "
            "AS found(run_id, kind, entry, damaged_file)"
        )
    return [
        f"CREATE OR REPLACE VIEW {ENTRIES_VIEW} AS SELECT * EXCLUDE (filename) FROM {entries}"
        + found,
        f"CREATE OR REPLACE VIEW {RUN_STATES_VIEW} AS "
        f"WITH live AS (SELECT * FROM {ENTRIES_VIEW} "
        f"WHERE kind IN ('{cat.OPEN}', '{cat.FINISHED}') "
        "QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY entry DESC) = 1), "
        "marks AS (SELECT run_id, "
        f"max(entry) FILTER (WHERE kind = '{cat.REMOVED}') AS removed_at, "
        f"arg_max(damaged_file, entry) FILTER (WHERE kind = '{cat.DAMAGED}') AS marked_file, "
        f"max(entry) FILTER (WHERE kind = '{cat.DAMAGED}') AS damaged_at "
        f"FROM {ENTRIES_VIEW} WHERE kind IN ('{cat.DAMAGED}', '{cat.REMOVED}') GROUP BY run_id), "
        f"beats AS (SELECT run_id, max(beat_at) AS beat_at FROM {beats} GROUP BY run_id) "
        "SELECT live.* REPLACE ("
        f"CASE WHEN {damaged} IS NOT NULL THEN 'damaged' "
        f"WHEN live.kind = '{cat.OPEN}' THEN CASE WHEN b.beat_at >= now() - INTERVAL "
        f"{cat.HEARTBEAT_STALE_S} SECOND THEN 'running' ELSE 'interrupted' END "
        f"ELSE live.status END AS status, {damaged} AS damaged_file) "
        "FROM live LEFT JOIN marks m ON m.run_id = live.run_id "
        "LEFT JOIN beats b ON b.run_id = live.run_id "
        "WHERE m.removed_at IS NULL OR m.removed_at < live.entry",
        f"CREATE OR REPLACE VIEW {IN_FORCE_VIEW} AS SELECT run_id, entry FROM {RUN_STATES_VIEW} "
        f"WHERE kind = '{cat.FINISHED}' AND status <> 'damaged'",
    ]


def rows_sql(sources: Sources, table: str, columns: Sequence[str]) -> str:
    """``table``'s rows of the entries in force, with ``columns``."""
    schema = cat.part_schema(table)
    scan = source_sql(sources.files[table], schema, sources.folded)
    stem = "parse_filename(filename, true)"
    entry = f"coalesce(entry, split_part({stem}, '{ENTRY_SEPARATOR}', 2))"
    return (
        f"SELECT {', '.join(columns)} FROM {scan} "
        f"WHERE (run_id, {entry}) IN (SELECT run_id, entry FROM {IN_FORCE_VIEW})"
    )


def records_sql(sources: Sources, table: str, columns: Sequence[str]) -> str:
    """``table``'s records (calibrations, labels, probes) of the runs in force, with
    ``columns`` and each record's id as ``record_id``."""
    scan = source_sql(sources.files[table], cat.part_schema(table), sources.folded)
    stem = "parse_filename(filename, true)"
    record_id = f"coalesce(entry, split_part({stem}, '{ENTRY_SEPARATOR}', 2))"
    return (
        f"SELECT {', '.join(columns)}, {record_id} AS record_id FROM {scan} "
        f"WHERE run_id IN (SELECT run_id FROM {IN_FORCE_VIEW})"
    )
