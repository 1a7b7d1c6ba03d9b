"""Every path of the run store, in one place.

The store is a folder (``RAGPROOF_STORE``, default ``data/store``)::

    runs/<run_id>/manifest.json           run config and identity, written first
    runs/<run_id>/<name>.json             small per-run documents (the judge ledger)
    runs/<run_id>/dataset.parquet         the cases evaluated
    runs/<run_id>/recorded_outputs.parquet  a replayed recording, row for row
                                          beside the dataset (recorded runs only)
    runs/<run_id>/outputs.parquet         what the adapter returned per case
    runs/<run_id>/case_results.parquet    one row per case and metric
    runs/<run_id>/metric_summaries.parquet
    runs/<run_id>/run.parquet             the run record, written LAST: its
                                          presence marks the run finished
    runs/<run_id>/pending_judge.parquet   outputs a stopped run did not judge,
                                          judged as they are by its resume
    runs/<run_id>/calibrations/<id>.parquet  bias-corrected means from human
                                          labels, one file per calibration
    runs/<run_id>/calibrations/labels/<id>.parquet  one human label each
                                          (written at once, never rewritten:
                                          concurrent annotators never share a file)
    runs/<run_id>/calibrations/probes/<id>.parquet  one judge bias probe each
    runs/<run_id>/report.html             the run's HTML report (report-vs-<id>.html
                                          when compared against another run)
    runs/_schema/<table>.parquet          zero-row files with the exact schemas,
                                          so view globs always match something
    runs/<run_id>/<table>-shard-NNNN.parquet  outputs and case results of one
                                          shard of a sharded run (views glob both;
                                          outputs.parquet instead when it is the
                                          run's recording as it is)
    judge_cache.sqlite                    the judge cache of a local store
    judge_cache/segments/*.jsonl          the judge cache of a remote store
    ragproof.duckdb                       views over the Parquet files only (local)
    catalog/                              every run's entry, its files' sizes and sha256
                                          and where the views read its rows (catalog.py)
    quarantine/<run_id>/                  a damaged run, moved aside whole (verify --repair)

One folder per run is one Dagster partition: runs never share a file, so any
number of them can be written at once. Nothing else in ragproof builds store
paths. The store is a local folder (``root`` a ``Path``, ``fs`` None) or a
prefix on object storage (``root`` a ``PurePosixPath`` inside the bucket,
``fs`` its fsspec filesystem, ``protocol`` e.g. ``s3``); ``files.py`` and
``object_files.py`` write each kind.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePath, PurePosixPath
from typing import Any

from ragproof_core.errors import UserError
from ragproof_core.store.remote import local_path, open_filesystem, split_url

RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")

# Table name -> file name inside a run folder. The order is the write order of
# a run; ``run`` comes last because its file marks the run finished.
TABLES: tuple[str, ...] = (
    "dataset",
    "recorded_outputs",
    "outputs",
    "case_results",
    "metric_summaries",
    "run",
)

SCHEMA_DIR_NAME = "_schema"  # cannot clash with a run id: ids start alphanumeric
MANIFEST_NAME = "manifest.json"
STOP_NAME = "stop.json"
# The outputs of cases a stopped run answered but did not judge: its resume judges them
# as they are, without asking the pipeline again (``RunStore.set_aside_prior``).
# Its name must not start with a sharded table's (``outputs*.parquet`` is that table's
# glob): named ``outputs_to_judge``, its rows were read as the run's outputs twice.
TO_JUDGE_NAME = "pending_judge.parquet"
CALIBRATIONS_DIR_NAME = "calibrations"
# Folders of a run holding one small Parquet file per record, each with its own view:
# view name -> folder. What calibrates a run's judge (human labels, bias probes) sits
# under its calibrations folder.
RECORD_FOLDERS: dict[str, str] = {
    CALIBRATIONS_DIR_NAME: CALIBRATIONS_DIR_NAME,
    "labels": f"{CALIBRATIONS_DIR_NAME}/labels",
    "probes": f"{CALIBRATIONS_DIR_NAME}/probes",
}
REPORT_NAME = "report.html"
CATALOG_DIR_NAME = "catalog"
QUARANTINE_DIR_NAME = "quarantine"
# A log file's name: ``<run_id>~<entry>[~<n>]`` (``~`` is never part of a run id).
ENTRY_SEPARATOR = "~"
DUCKDB_NAME = "ragproof.duckdb"
JUDGE_CACHE_NAME = "judge_cache.sqlite"
JUDGE_SEGMENTS_DIR = "judge_cache/segments"
# Tables a sharded run writes once per shard (``<table>-shard-NNNN.parquet``).
SHARDED_TABLES: tuple[str, ...] = ("outputs", "case_results")

# Characters DuckDB would read as glob syntax inside the absolute view paths.
_GLOB_CHARS = frozenset("*?[]{}")


class InvalidRunId(UserError, ValueError):
    """A run id that could escape its folder or is not a plain name."""


def validate_run_id(run_id: str) -> str:
    """Return ``run_id`` unchanged if it is a safe folder name, else raise ``InvalidRunId``."""
    if not isinstance(run_id, str) or RUN_ID_PATTERN.fullmatch(run_id) is None:
        raise InvalidRunId(
            f"invalid run id {run_id!r}: use 1-128 characters from A-Z a-z 0-9 _ . -, "
            "starting with a letter or digit"
        )
    return run_id


def new_run_id(*, now: datetime | None = None) -> str:
    """A fresh run id such as ``20261129T215000Z-3f9a1c``.

    The UTC timestamp prefix makes ids sort by start time (the Dagster partition
    list reads chronologically); the random suffix keeps runs started within
    the same second apart. Dataset and adapter names stay out of the id: they
    may hold characters a run id cannot, and the run record carries them.
    """
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return f"{moment:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


@dataclass(frozen=True)
class SegmentCacheLocation:
    """Where a remote store keeps its judge cache: immutable segment objects."""

    fs: Any
    root: str

    def exists(self) -> bool:
        # An empty cache is a valid cache: there is no file to create first.
        return True


@dataclass(frozen=True, slots=True)
class StoreLayout:
    """The paths of one store. A local ``root`` is made absolute on construction.

    Absolute because the DuckDB views embed these paths and DuckDB resolves
    relative paths against the reading process's working directory, not
    against the database file.
    """

    root: PurePath
    fs: Any = field(default=None, compare=False, repr=False)
    protocol: str = "file"

    def __post_init__(self) -> None:
        if self.fs is None:
            object.__setattr__(self, "root", Path(self.root).expanduser().resolve())
        else:
            object.__setattr__(self, "root", PurePosixPath(str(self.root).strip("/")))

    @classmethod
    def at(cls, location: str | Path) -> StoreLayout:
        """The layout of ``RAGPROOF_STORE``-style ``location``: a path or an fsspec URL."""
        remote = split_url(location)
        if remote is None:
            return cls(local_path(location))
        protocol, path = remote
        return cls(PurePosixPath(path), fs=open_filesystem(protocol), protocol=protocol)

    @property
    def is_remote(self) -> bool:
        return self.fs is not None

    @property
    def location(self) -> str:
        """The store as users name it: a folder, or ``s3://bucket/prefix``."""
        return f"{self.protocol}://{self.root}" if self.is_remote else str(self.root)

    def url(self, path: PurePath | str) -> str:
        """``path`` as DuckDB reads it: absolute local path, or ``s3://...``."""
        return f"{self.protocol}://{path}" if self.is_remote else str(path)

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    @property
    def schema_dir(self) -> Path:
        return self.runs_dir / SCHEMA_DIR_NAME

    @property
    def duckdb_path(self) -> Path:
        return self.root / DUCKDB_NAME

    @property
    def judge_cache_path(self) -> Path | SegmentCacheLocation:
        """The SQLite file of a local store; the segment folder of a remote one."""
        if self.is_remote:
            return SegmentCacheLocation(self.fs, str(self.root / JUDGE_SEGMENTS_DIR))
        return self.root / JUDGE_CACHE_NAME

    # --- the catalog (catalog.py) -----------------------------------------------------------

    @property
    def catalog_dir(self) -> Path:
        return self.root / CATALOG_DIR_NAME

    def catalog_log_dir(self, table: str) -> Path:
        """Entries written since the last compaction: one file per run entry (and part)."""
        return self.catalog_dir / "log" / table

    def catalog_log_path(
        self, table: str, run_id: str, entry: str, part: int | None = None
    ) -> Path:
        name = f"{validate_run_id(run_id)}{ENTRY_SEPARATOR}{entry}"
        if part is not None:
            name += f"{ENTRY_SEPARATOR}{part}"
        return self.catalog_log_dir(table) / f"{name}.parquet"

    def catalog_log_schema_path(self, table: str) -> Path:
        """A zero-row file of the table's schema, so the log's glob always matches a file."""
        return self.catalog_log_dir(table) / f"{SCHEMA_DIR_NAME}.parquet"

    def catalog_part_path(self, table: str, part: str) -> Path:
        return self.catalog_dir / "parts" / table / f"{part}.parquet"

    @property
    def snapshots_dir(self) -> Path:
        return self.catalog_dir / "snapshots"

    def snapshot_path(self, seq: int) -> Path:
        return self.snapshots_dir / f"{seq:010d}.json"

    @property
    def heartbeats_dir(self) -> Path:
        return self.catalog_dir / "heartbeats"

    def heartbeat_path(self, run_id: str) -> Path:
        return self.heartbeats_dir / f"{validate_run_id(run_id)}.json"

    @property
    def heartbeat_schema_path(self) -> Path:
        return self.heartbeats_dir / f"{SCHEMA_DIR_NAME}.json"

    @property
    def quarantine_dir(self) -> Path:
        return self.root / QUARANTINE_DIR_NAME

    def run_dir(self, run_id: str) -> Path:
        return self.runs_dir / validate_run_id(run_id)

    def stop_path(self, run_id: str) -> Path:
        """A run's stop request: the command running it took a signal (CONTRACT 29)."""
        return self.run_dir(run_id) / STOP_NAME

    def to_judge_path(self, run_id: str) -> Path:
        """The stored outputs a resumed run judges without calling the adapter."""
        return self.run_dir(run_id) / TO_JUDGE_NAME

    def manifest_path(self, run_id: str) -> Path:
        return self.run_dir(run_id) / MANIFEST_NAME

    def report_path(self, run_id: str, against: str | None = None) -> Path:
        """The run's HTML report; one per baseline when compared against another run."""
        if against is None:
            return self.run_dir(run_id) / REPORT_NAME
        return self.run_dir(run_id) / f"report-vs-{validate_run_id(against)}.html"

    def document_path(self, run_id: str, name: str) -> Path:
        """A small JSON document of the run, e.g. ``judge`` -> ``judge.json``."""
        if not name.isidentifier() or name == "manifest":
            raise ValueError(f"invalid run document name {name!r}")
        return self.run_dir(run_id) / f"{name}.json"

    def table_path(self, run_id: str, table: str) -> Path:
        return self.run_dir(run_id) / table_file_name(table)

    def record_dir(self, run_id: str, records: str) -> Path:
        """A run's folder of one-file-per-record ``records`` (``RECORD_FOLDERS``)."""
        return self.run_dir(run_id) / _record_folder(records)

    def record_path(self, run_id: str, records: str, record_id: str) -> Path:
        validate_run_id(record_id)  # the same safe-name rules
        return self.record_dir(run_id, records) / f"{record_id}.parquet"

    def calibrations_dir(self, run_id: str) -> Path:
        return self.record_dir(run_id, CALIBRATIONS_DIR_NAME)

    def calibration_path(self, run_id: str, calibration_id: str) -> Path:
        return self.record_path(run_id, CALIBRATIONS_DIR_NAME, calibration_id)

    def shard_table_path(self, run_id: str, table: str, shard: int) -> Path:
        """``<table>-shard-NNNN.parquet``: one shard's part of a sharded table."""
        if table not in SHARDED_TABLES:
            raise ValueError(f"table {table!r} is not written per shard")
        return self.run_dir(run_id) / f"{table}-shard-{shard:04d}.parquet"

    def table_parts_glob(self, run_id: str, table: str) -> str:
        """Glob (no protocol) of every file of ``table`` in one run: whole or shards."""
        return str(self.run_dir(run_id) / _glob_name(table))

    def schema_path(self, table: str) -> Path:
        return self.schema_dir / table_file_name(table)

    def table_glob(self, table: str) -> str:
        """Absolute glob (URL for a remote store) matching ``table`` in every run folder
        (and ``_schema``), shard files included.

        Temp files are named ``.<name>.tmp-...`` (``files.py``), so they never match.
        """
        root = str(self.root)
        if _GLOB_CHARS & set(root):
            raise ValueError(
                f"store root {root!r} contains glob characters ({''.join(sorted(_GLOB_CHARS))}); "
                "DuckDB would misread the view paths, choose another RAGPROOF_STORE"
            )
        return self.url(self.runs_dir / "*" / _glob_name(table))


def _record_folder(records: str) -> str:
    try:
        return RECORD_FOLDERS[records]
    except KeyError:
        raise ValueError(
            f"unknown records {records!r}; known: {', '.join(RECORD_FOLDERS)}"
        ) from None


def _glob_name(table: str) -> str:
    name = table_file_name(table)
    # ``case_results*.parquet`` matches the whole file and every shard's file.
    return name.replace(".parquet", "*.parquet") if table in SHARDED_TABLES else name


def table_file_name(table: str) -> str:
    if table not in TABLES:
        raise ValueError(f"unknown store table {table!r}; known: {', '.join(TABLES)}")
    return f"{table}.parquet"
