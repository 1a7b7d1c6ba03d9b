"""Every path of the run store, in one place.

The store is a folder (``RAGPROOF_STORE``, default ``data/store``)::

    runs/<run_id>/manifest.json           run config and identity, written first
    runs/<run_id>/<name>.json             small per-run documents (the judge ledger)
    runs/<run_id>/dataset.parquet         the cases evaluated
    runs/<run_id>/outputs.parquet         what the adapter returned per case
    runs/<run_id>/case_results.parquet    one row per case and metric
    runs/<run_id>/metric_summaries.parquet
    runs/<run_id>/run.parquet             the run record, written LAST: its
                                          presence marks the run finished
    runs/<run_id>/calibrations/<id>.parquet  bias-corrected means from human
                                          labels, one file per calibration
    runs/<run_id>/report.html             the run's HTML report (report-vs-<id>.html
                                          when compared against another run)
    runs/_schema/<table>.parquet          zero-row files with the exact schemas,
                                          so view globs always match something
    judge_cache.sqlite                    the judge cache (owned elsewhere)
    ragproof.duckdb                       views over the Parquet files only

One folder per run is one Dagster partition: runs never share a file, so any
number of them can be written at once. Nothing else in ragproof builds store
paths; moving the store to object storage means changing this module and
``files.py``.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")

# Table name -> file name inside a run folder. The order is the write order of
# a run; ``run`` comes last because its file marks the run finished.
TABLES: tuple[str, ...] = ("dataset", "outputs", "case_results", "metric_summaries", "run")

SCHEMA_DIR_NAME = "_schema"  # cannot clash with a run id: ids start alphanumeric
MANIFEST_NAME = "manifest.json"
CALIBRATIONS_DIR_NAME = "calibrations"
REPORT_NAME = "report.html"
DUCKDB_NAME = "ragproof.duckdb"
JUDGE_CACHE_NAME = "judge_cache.sqlite"

# Characters DuckDB would read as glob syntax inside the absolute view paths.
_GLOB_CHARS = frozenset("*?[]{}")


class InvalidRunId(ValueError):
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


@dataclass(frozen=True, slots=True)
class StoreLayout:
    """The paths of one store. ``root`` is made absolute on construction.

    Absolute because the DuckDB views embed these paths and DuckDB resolves
    relative paths against the reading process's working directory, not
    against the database file.
    """

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root).expanduser().resolve())

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
    def judge_cache_path(self) -> Path:
        return self.root / JUDGE_CACHE_NAME

    def run_dir(self, run_id: str) -> Path:
        return self.runs_dir / validate_run_id(run_id)

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

    def calibrations_dir(self, run_id: str) -> Path:
        return self.run_dir(run_id) / CALIBRATIONS_DIR_NAME

    def calibration_path(self, run_id: str, calibration_id: str) -> Path:
        validate_run_id(calibration_id)  # the same safe-name rules
        return self.calibrations_dir(run_id) / f"{calibration_id}.parquet"

    @property
    def calibrations_schema_path(self) -> Path:
        """Matched by ``calibrations_glob``, so the view always has a file to read."""
        return self.schema_dir / CALIBRATIONS_DIR_NAME / "schema.parquet"

    def calibrations_glob(self) -> str:
        self.table_glob("run")  # the same check of the root for glob characters
        return str(self.runs_dir / "*" / CALIBRATIONS_DIR_NAME / "*.parquet")

    def schema_path(self, table: str) -> Path:
        return self.schema_dir / table_file_name(table)

    def table_glob(self, table: str) -> str:
        """Absolute glob matching ``table`` in every run folder (and ``_schema``).

        Temp files are named ``.<name>.tmp-...`` (``files.py``), so they never match.
        """
        root = str(self.root)
        if _GLOB_CHARS & set(root):
            raise ValueError(
                f"store root {root!r} contains glob characters ({''.join(sorted(_GLOB_CHARS))}); "
                "DuckDB would misread the view paths, choose another RAGPROOF_STORE"
            )
        return str(self.runs_dir / "*" / table_file_name(table))


def table_file_name(table: str) -> str:
    if table not in TABLES:
        raise ValueError(f"unknown store table {table!r}; known: {', '.join(TABLES)}")
    return f"{table}.parquet"
