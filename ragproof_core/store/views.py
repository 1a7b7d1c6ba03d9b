"""The DuckDB views over the store's Parquet files (CONTRACT section 6).

``ragproof.duckdb`` holds nothing but views and a one-row
``ragproof_meta`` table; all data lives in the per-run Parquet files. DuckDB
allows one writing process per database file, so the file is written only
when the views are missing, their definition changed or the store moved
(``ensure_views``); evaluations never hold it, and reading the views never
waits for a running evaluation.

View columns, in order (extra columns only ever go after CONTRACT's):

- ``runs``: run_id, dataset, adapter, status, started_at, finished_at,
  judge_model, prompt_hashes (VARCHAR holding a JSON object name -> sha256),
  config_json, cost_usd, then cases, case_failures, judge_requests,
  cache_hits. ``started_at``/``finished_at`` are TIMESTAMP WITH TIME ZONE
  (UTC instants; DuckDB shows them in the session TimeZone).
- ``case_results``: run_id, case_id, metric, status, value, reason, judge_raw_json,
  then trial (1 to run.repeats; 1 for rows stored before trials existed)
- ``metric_summaries``: run_id, metric, mean, p50, p95, scored, skipped,
  errored, not_applicable, judge_errors
- ``outputs``: run_id, case_id, answer, retrieved_ids, citations, latency_s,
  error, then retrieved_scores, steps_json, input_tokens, output_tokens,
  cost_usd: what the pipeline said for each case (CONTRACT section 25)
- ``conversations``: run_id, conversation_id, metric, turns_scored, mean: one
  row per run, conversation and per-turn metric (CONTRACT section 16), the
  turns found through the run's dataset
- ``repeats``: run_id, case_id, metric, trials, scored, mean, min, max, passes,
  flaky: one row per run, case and metric over the case's trials (CONTRACT
  section 27)
- ``calibrations``: one row per calibration and judge metric
  (``store/calibrations.py``): judge-only, human-only and bias-corrected (PPI)
  means and interval bounds from human labels (CONTRACT section 12)
- ``labels``: one row per human label in force: the latest of each run, case,
  metric and annotator (``store/labels.py``, CONTRACT section 22)
- ``probes``: one row per probe of a run's judge, metric and perturbation
  (``store/probes.py``)

Only finished runs (those with a ``run.parquet``) appear: ``case_results``,
``metric_summaries`` and ``outputs`` keep the rows of runs listed in ``runs``,
so a run killed mid-way stays invisible.

A remote store (``s3://...``) has no views file: ``connect`` returns an
in-memory DuckDB connection with the store's fsspec filesystem registered
(``register_filesystem``) and the same views over ``s3://`` globs, so nothing
is written to local disk and no DuckDB extension is needed.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import duckdb
import pyarrow as pa

from ragproof_core.metrics.registry import METRICS
from ragproof_core.store import catalog as cat
from ragproof_core.store import damage, tables
from ragproof_core.store.catalog import Catalog
from ragproof_core.store.catalog_views import (
    CATALOG_VIEWS,
    RUN_STATES_VIEW,
    Sources,
    catalog_ddl,
    glob_sources,
    reader_sources,
    records_sql,
    rows_sql,
    sql_string,
)
from ragproof_core.store.layout import StoreLayout
from ragproof_core.store.object_files import files_for
from ragproof_core.store.schema import SCHEMAS

# Bump when the meaning of the views changes in a way the DDL text does not
# show; any change to the DDL or the table schemas already triggers a rebuild.
VIEW_VERSION = 2

# The views' columns are the declared tables' columns, in order (CONTRACT's
# columns first; later additions only ever go after them).
RUNS_COLUMNS: tuple[str, ...] = tables.RUN.names
CASE_RESULTS_COLUMNS: tuple[str, ...] = tables.CASE_RESULTS.names
# A row stored before trials existed (CONTRACT section 27) is its case's only trial.
TRIAL_SQL = "coalesce(trial, 1)"
METRIC_SUMMARIES_COLUMNS: tuple[str, ...] = tables.METRIC_SUMMARIES.names
# What the pipeline said (CONTRACT section 25): a row per run and case, the ``outputs``
# table's columns with the answer as its text and the retrieved chunks as their ids
# (the chunks' text stays in the table, ``ragproof show --case`` shows it). Each entry:
# the view's column and the expression over the table that gives it.
OUTPUTS_VIEW: tuple[tuple[str, str], ...] = (
    ("run_id", "run_id"),
    ("case_id", "case_id"),
    ("answer", "answer_text"),
    ("retrieved_ids", "list_transform(retrieved, lambda c: c.id)"),
    ("citations", "citations"),
    ("latency_s", "latency_s"),
    ("error", "error"),
    ("retrieved_scores", "list_transform(retrieved, lambda c: c.score)"),
    ("steps_json", "steps_json"),
    ("input_tokens", "input_tokens"),
    ("output_tokens", "output_tokens"),
    ("cost_usd", "cost_usd"),
    ("trial", TRIAL_SQL),
)
OUTPUTS_COLUMNS: tuple[str, ...] = tuple(name for name, _ in OUTPUTS_VIEW)
# Views with a row per run (and case, metric); ``metrics`` lists the metric registry.
RUN_VIEWS: tuple[str, ...] = ("runs", "case_results", "metric_summaries", "outputs")
# One row per run, conversation and metric (CONTRACT section 16): its turns' results,
# found through the run's dataset (each turn's conversation_id).
CONVERSATIONS_COLUMNS: tuple[str, ...] = (
    "run_id",
    "conversation_id",
    "metric",
    "turns_scored",
    "mean",
)
# One row per run, case and metric over the case's trials (CONTRACT section 27).
REPEATS_COLUMNS: tuple[str, ...] = (
    "run_id",
    "case_id",
    "metric",
    "trials",
    "scored",
    "mean",
    "min",
    "max",
    "passes",
    "flaky",
)
# A case is flaky when its scored trials lie at least this far apart (max - min).
FLAKY_SPREAD = 0.5
# Records added to finished runs, one file each, read through the catalog like every row.
RECORD_TABLES: dict[str, tables.Table] = cat.RECORD_TABLES
VIEW_NAMES: tuple[str, ...] = (
    *CATALOG_VIEWS,
    *RUN_VIEWS,
    "conversations",
    "repeats",
    *RECORD_TABLES,
    "metrics",
)

DEFAULT_LOCK_TIMEOUT_S = 30.0
# A database file that is not (yet) valid is retried only briefly: the only
# benign cause is another process that has just created it.
_INVALID_FILE_TIMEOUT_S = 2.0

T = TypeVar("T")


class StoreLocked(RuntimeError):
    """Another process kept ``ragproof.duckdb`` locked for longer than the timeout."""


class StoreCorrupt(RuntimeError):
    """``ragproof.duckdb`` is not a DuckDB file; it only holds views and can be deleted."""


_sql_string = sql_string


def view_ddl(layout: StoreLayout, sources: Sources | None = None) -> list[str]:
    """The statements creating the views of ``layout``'s store, with its absolute paths:
    over the catalog as ``sources`` names it (default: the views file's, ``glob_sources``
    of the latest snapshot)."""
    if sources is None:
        sources = glob_sources(layout, Catalog(layout, files_for(layout)).snapshot())
    return [
        *catalog_ddl(sources),
        f"CREATE OR REPLACE VIEW runs AS SELECT {', '.join(RUNS_COLUMNS)}, damaged_file "
        f"FROM {RUN_STATES_VIEW} ORDER BY started_at, run_id",
        "CREATE OR REPLACE VIEW case_results AS "
        + rows_sql(
            sources,
            "case_results",
            [f"{TRIAL_SQL} AS trial" if c == "trial" else c for c in CASE_RESULTS_COLUMNS],
        ),
        "CREATE OR REPLACE VIEW metric_summaries AS "
        + rows_sql(sources, "metric_summaries", METRIC_SUMMARIES_COLUMNS),
        "CREATE OR REPLACE VIEW outputs AS "
        + rows_sql(
            sources,
            "outputs",
            [f"{expression} AS {name}" for name, expression in OUTPUTS_VIEW],
        ),
        _conversations_view(sources),
        _repeats_view(),
        _record_view(
            "calibrations", sources, "ORDER BY run_id, created_at, calibration_id, metric"
        ),
        # A changed mind is a newer label: the view shows the one in force.
        _record_view(
            "labels",
            sources,
            "QUALIFY row_number() OVER (PARTITION BY run_id, case_id, metric, annotator "
            "ORDER BY labelled_at DESC, record_id DESC) = 1 "
            "ORDER BY run_id, labelled_at, record_id",
        ),
        _record_view(
            "probes", sources, "ORDER BY run_id, created_at, probe_id, metric, perturbation"
        ),
        _metrics_view(),
    ]


def _conversations_view(sources: Sources) -> str:
    """Each conversation's per-turn metrics: scored turns and their mean (NULL when none
    was scored). A conversation's own metrics are stored under its id, not a turn's, and
    are read from ``case_results``."""
    turns = rows_sql(sources, "turns", ("run_id", "id", "conversation_id"))
    return (
        "CREATE OR REPLACE VIEW conversations AS SELECT r.run_id, t.conversation_id, r.metric, "
        "count(*) FILTER (WHERE r.status = 'scored') AS turns_scored, avg(r.value) AS mean "
        f"FROM case_results r JOIN ({turns}) t ON r.run_id = t.run_id AND r.case_id = t.id "
        "GROUP BY r.run_id, t.conversation_id, r.metric "
        "ORDER BY r.run_id, t.conversation_id, r.metric"
    )


def _repeats_view() -> str:
    """Each case's trials of each metric (CONTRACT section 27): how many, how many scored,
    their mean, min and max, the trials scoring exactly 1 and whether the case is flaky
    (its scored trials ``FLAKY_SPREAD`` or more apart). A run without repeats has one
    trial a case."""
    scored = "FILTER (WHERE status = 'scored')"
    return (
        "CREATE OR REPLACE VIEW repeats AS SELECT run_id, case_id, metric, "
        f"count(*) AS trials, count(*) {scored} AS scored, avg(value) {scored} AS mean, "
        f"min(value) {scored} AS min, max(value) {scored} AS max, "
        "count(*) FILTER (WHERE status = 'scored' AND value = 1.0) AS passes, "
        f"coalesce(max(value) {scored} - min(value) {scored} >= {FLAKY_SPREAD}, false) "
        "AS flaky FROM case_results GROUP BY run_id, case_id, metric "
        "ORDER BY run_id, case_id, metric"
    )


def _record_view(name: str, sources: Sources, tail: str) -> str:
    """The view over one kind of record (``RECORD_TABLES``) of the runs in force, read
    through the catalog like every row."""
    columns = ", ".join(RECORD_TABLES[name].names)
    rows = records_sql(sources, name, RECORD_TABLES[name].names)
    return f"CREATE OR REPLACE VIEW {name} AS SELECT {columns} FROM ({rows}) {tail}"


def _metrics_view() -> str:
    """The ``metrics`` view: the metric registry as rows (CONTRACT section 7), then the
    metrics stored runs declared of their own, in name order."""
    rows = ", ".join(
        f"({i}, {_sql_string(m.name)}, {_sql_string(m.family)}, "
        f"{str(m.higher_is_better).upper()}, {str(m.judged).upper()}, {_sql_string(m.judge)}, "
        f"{_sql_string(m.description)})"
        for i, m in enumerate(METRICS)
    )
    return (
        f"CREATE OR REPLACE VIEW metrics AS SELECT {_METRIC_COLUMNS} FROM ("
        f"SELECT * FROM (VALUES {rows}) AS t(position, {_METRIC_COLUMNS}) "
        f"UNION ALL {_CUSTOM_METRICS}) ORDER BY position, metric"
    )


_METRIC_COLUMNS = "metric, family, higher_is_better, judged, judge, description"
# The metrics stored runs declared of their own ([[metric]] tables in config_json), each
# once, as its latest run declared it; described as metrics.custom describes them.
_CUSTOM_METRICS = (
    f"SELECT 1000000 AS position, {_METRIC_COLUMNS} FROM ("
    "SELECT m.name AS metric, 'custom' AS family, m.higher_is_better, "
    "m.rubric IS NOT NULL AS judged, "
    "CASE WHEN m.rubric IS NULL THEN 'never' ELSE 'required' END AS judge, "
    "CASE WHEN m.rubric IS NULL THEN 'your function ' || m.function "
    "ELSE 'rubric: ' || m.rubric || ' (' || array_to_string(m.bands, ' / ') || ')' END "
    "AS description, "
    "row_number() OVER (PARTITION BY m.name ORDER BY started_at DESC) AS latest FROM ("
    "SELECT unnest(from_json(json_extract(config_json, '$.metrics'), "
    '\'[{"name": "VARCHAR", "higher_is_better": "BOOLEAN", "rubric": "VARCHAR", '
    '"bands": ["VARCHAR"], "function": "VARCHAR"}]\')) AS m, started_at FROM runs)) '
    "WHERE latest = 1"
)


def fingerprint(layout: StoreLayout) -> str:
    """Changes whenever the views must be rebuilt: new DDL, new schemas or a moved store."""
    digest = hashlib.sha256(str(VIEW_VERSION).encode())
    for statement in view_ddl(layout):
        digest.update(statement.encode())
    for name, schema in sorted(SCHEMAS.items()):
        digest.update(f"{name}:{schema}".encode())
    for name, table in sorted(RECORD_TABLES.items()):
        digest.update(f"{name}:{table.schema}".encode())
    return digest.hexdigest()


def write_schema_files(layout: StoreLayout) -> None:
    """Zero-row Parquet files with each table's schema under ``runs/_schema``.

    They make every view glob match at least one file (DuckDB refuses an empty
    glob) and carry the newest schema, so ``union_by_name`` always yields
    every column even when all stored runs predate it.
    """
    files = files_for(layout)
    Catalog(layout, files).ensure_schema_files()
    for table, schema in SCHEMAS.items():
        files.write_parquet(layout.schema_path(table), pa.Table.from_pylist([], schema=schema))


def _schema_files_present(layout: StoreLayout) -> bool:
    files = files_for(layout)
    return Catalog(layout, files).complete() and all(
        files.is_file(layout.schema_path(table)) for table in SCHEMAS
    )


def _schema_files_current(layout: StoreLayout) -> bool:
    """True when every schema file exists and holds today's schema (remote stores)."""
    files = files_for(layout)
    expected = [(layout.schema_path(t), s) for t, s in SCHEMAS.items()]
    for path, schema in expected:
        try:
            stored = files.parquet_file(path).schema_arrow
        except FileNotFoundError:
            return False
        if not stored.equals(schema):
            return False
    return True


def _is_lock_error(exc: Exception) -> bool:
    return isinstance(exc, duckdb.IOException) and "lock" in str(exc).lower()


def _is_invalid_file_error(exc: Exception) -> bool:
    return isinstance(exc, duckdb.IOException) and "not a valid DuckDB database file" in str(exc)


def _with_retry(action: Callable[[], T], path: Path, timeout_s: float) -> T:
    """Run ``action``, retrying with jittered exponential backoff while ``path`` is locked."""
    started = time.monotonic()
    delay = 0.01
    while True:
        try:
            return action()
        except duckdb.IOException as exc:
            waited = time.monotonic() - started
            if _is_lock_error(exc):
                if waited >= timeout_s:
                    raise StoreLocked(
                        f"{path} stayed locked for {waited:.1f}s: {exc}. If a duckdb shell holds "
                        "it, open the store with `duckdb -readonly`."
                    ) from exc
            elif _is_invalid_file_error(exc):
                if waited >= min(timeout_s, _INVALID_FILE_TIMEOUT_S):
                    raise StoreCorrupt(
                        f"{path} is not a valid DuckDB database file. It only holds views over "
                        "the Parquet files of the store: delete it and it will be recreated."
                    ) from exc
            else:
                raise
        time.sleep(delay * random.uniform(0.5, 1.5))
        delay = min(delay * 2, 0.5)


def quiet(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """``con`` without DuckDB's progress bar: on a query slower than two seconds it
    prints to the terminal's standard output, ahead of a command's own (``sql --json``
    printed it before its JSON). A session setting, so set on every connection."""
    con.execute("SET enable_progress_bar = false")
    return con


def open_db(
    layout: StoreLayout, *, read_only: bool, timeout_s: float = DEFAULT_LOCK_TIMEOUT_S
) -> duckdb.DuckDBPyConnection:
    path = layout.duckdb_path
    con = _with_retry(lambda: duckdb.connect(str(path), read_only=read_only), path, timeout_s)
    try:
        return quiet(con)
    except BaseException:
        con.close()
        raise


def _views_current(con: duckdb.DuckDBPyConnection, expected: str) -> bool:
    try:
        row = con.execute("SELECT fingerprint FROM ragproof_meta").fetchone()
    except duckdb.CatalogException:
        return False
    present = {
        name
        for (name,) in con.execute(
            "SELECT view_name FROM duckdb_views() WHERE NOT internal AND schema_name = 'main'"
        ).fetchall()
    }
    return row is not None and row[0] == expected and present >= set(VIEW_NAMES)


def views_current(layout: StoreLayout, *, timeout_s: float = DEFAULT_LOCK_TIMEOUT_S) -> bool:
    """True when the views exist and match this store; opens the database read-only only."""
    if not layout.duckdb_path.is_file():
        return False
    con = open_db(layout, read_only=True, timeout_s=timeout_s)
    try:
        return _views_current(con, fingerprint(layout))
    finally:
        con.close()


def ensure_views(layout: StoreLayout, *, timeout_s: float = DEFAULT_LOCK_TIMEOUT_S) -> bool:
    """Create or refresh the views when needed; return True when this call wrote them.

    The common case (views up to date) only opens the database read-only, so it
    never takes the write lock that readers would have to wait for. Creation
    runs as one short transaction; a concurrent creator makes this call wait
    (bounded by ``timeout_s``, then ``StoreLocked``) and then find the work done.
    """
    ensure_catalog(layout)
    if layout.is_remote:
        # No views file on a remote store: the views live in each reader's connection.
        if not _schema_files_current(layout):
            write_schema_files(layout)
            return True
        return False
    schemas_written = not _schema_files_present(layout)
    if schemas_written:
        # Files only: lost schema files must not cost a database write.
        write_schema_files(layout)
    if views_current(layout, timeout_s=timeout_s):
        return False
    expected = fingerprint(layout)
    layout.root.mkdir(parents=True, exist_ok=True)
    if not schemas_written:
        write_schema_files(layout)  # the schemas may have changed with the views
    return damage.retrying(layout, lambda found: _write_views(layout, expected, timeout_s))


def _write_views(layout: StoreLayout, expected: str, timeout_s: float) -> bool:
    """Write the views file's views (a run found damaged while they bind is marked, its
    rows leave the log, and ``damage.retrying`` writes them again)."""
    con = open_db(layout, read_only=False, timeout_s=timeout_s)
    try:
        if _views_current(con, expected):
            return False
        con.execute("BEGIN TRANSACTION")
        try:
            for statement in view_ddl(layout):
                con.execute(statement)
            con.execute(
                "CREATE OR REPLACE TABLE ragproof_meta AS SELECT "
                "? AS store_root, ? AS view_version, ? AS fingerprint, now() AS created_at",
                [str(layout.root), VIEW_VERSION, expected],
            )
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    finally:
        con.close()
    return True


def prepare_store(layout: StoreLayout) -> None:
    """What a reader's own connection needs of the store: its catalog and schema files.
    Nothing is written to a store that cannot be written (a read-only mount): a reader's
    connection names its files, so it reads such a store as it is."""
    try:
        ensure_catalog(layout)
        if not _schema_files_present(layout):
            write_schema_files(layout)
    except OSError:
        return


def ensure_catalog(layout: StoreLayout) -> bool:
    """Give a store from before the catalog one, built from its run folders (once, by the
    first process to open it); True when this call built it."""
    catalog = Catalog(layout, files_for(layout))
    if catalog.exists():
        return False
    catalog.rebuild()
    return True


def reader_ddl(layout: StoreLayout, found_damaged: dict[str, str] | None = None) -> list[str]:
    """The views as a reader's own connection makes them: over the catalog as it is now,
    every file named; runs in ``found_damaged`` (found by this reader, not marked) out."""
    state = Catalog(layout, files_for(layout)).state(found_damaged)
    return view_ddl(layout, reader_sources(layout, state, found_damaged))


def connect(
    layout: StoreLayout, *, read_only: bool = True, timeout_s: float = DEFAULT_LOCK_TIMEOUT_S
) -> duckdb.DuckDBPyConnection:
    """A connection to ``ragproof.duckdb`` with the views in place.

    Retries (bounded) while another process holds the file for view creation.
    Within one process DuckDB refuses to mix read-only and read-write
    connections to the same file; close one kind before opening the other.
    """
    ensure_views(layout, timeout_s=timeout_s)
    if layout.is_remote:
        return connect_remote(layout)
    return open_db(layout, read_only=read_only, timeout_s=timeout_s)


def store_directory(layout: StoreLayout) -> str:
    """The store's folder or prefix as DuckDB's ``allowed_directories`` takes it.

    The trailing separator keeps a sibling such as ``store-other`` outside.
    """
    return layout.location.rstrip("/") + "/"


def connect_confined(
    layout: StoreLayout, found_damaged: dict[str, str] | None = None
) -> duckdb.DuckDBPyConnection:
    """An in-memory connection with the views that can reach the store's files only.

    File access is limited to the store's folder or prefix (on S3 through the
    registered fsspec filesystem, which DuckDB checks against the same list),
    extensions cannot be installed or loaded, and the configuration is locked
    so no statement can lift the limits. Its database is a fresh in-memory one,
    so locking it touches no other connection of the process.
    """
    prepare_store(layout)
    con = duckdb.connect(":memory:")
    try:
        quiet(con)
        if layout.is_remote:
            con.register_filesystem(layout.fs)
        for statement in reader_ddl(layout, found_damaged):
            con.execute(statement)
        con.execute("SET allowed_directories = ?", [[store_directory(layout)]])
        con.execute("SET autoinstall_known_extensions = false")
        con.execute("SET autoload_known_extensions = false")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


def connect_remote(layout: StoreLayout) -> duckdb.DuckDBPyConnection:
    """An in-memory connection reading a remote store through its fsspec filesystem."""
    con = quiet(duckdb.connect(":memory:"))
    con.register_filesystem(layout.fs)
    for statement in reader_ddl(layout):
        con.execute(statement)
    return con
