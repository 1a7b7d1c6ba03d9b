"""The store's catalog: every run, its files with their size and sha256, and where the
views read its rows (CONTRACT sections 29 and 31).

A run folder (``runs/<run_id>/``) stays the record of a run: what ``show``, ``report``,
``compare`` and ``--resume`` read, what gc removes and verify quarantines. The catalog
is the index every view reads instead of globbing every run folder, so a query costs by
the rows it reads, not by the number of runs, and a run whose files are damaged is left
out by name instead of failing the whole scan::

    catalog/log/runs/<run_id>~<entry>.parquet         one row: an entry of a run (below)
    catalog/log/<table>/<run_id>~<entry>~<n>.parquet  a finished entry's rows of <table>
                                                      (case_results, outputs, metric_summaries):
                                                      the run's own file, hard-linked
                                                      (copied on object storage)
    catalog/log/<records>/<run_id>~<record_id>.parquet  a label, calibration or probe added to
                                                      a finished run (its file, hard-linked)
    catalog/log/<table>/_schema.parquet               zero rows: the log's glob always matches
    catalog/heartbeats/<run_id>.parquet               a running run's last beat (every 5 s)
    catalog/parts/<table>/<part>.parquet              compacted rows of many entries
    catalog/snapshots/<seq>.json                      the parts in force, and the log files
                                                      they fold

A run's start writes an ``open`` entry; its end replaces that file with the ``finished``
entry (the run record, its files and their sha256), after linking its ``case_results``,
``metric_summaries`` and conversation ``turns`` into the log. A reader that finds a run's
files damaged adds a ``damaged`` entry; gc and quarantine add a ``removed`` one. The
latest open or finished entry of a run is the one in force; only its rows of the other
tables are read (``catalog_views``), so an earlier attempt's rows never mix with a
resumed or restarted run's. Records (labels, calibrations, probes) are added to a
finished run one file each, logged as they are written and compacted alike; they
belong to their run, not to an entry, and are read while the run is in force.

Compaction (``Catalog.compact``, after every ``COMPACT_EVERY`` finished entries) folds
the log into parts: the runs table is rewritten whole, one row per run as it stands; the
other tables get one new part, and neighbouring parts are merged while the older is at
most twice the newer (so a year of runs is a handful of parts, each row rewritten a
logarithmic number of times). The snapshot is created exclusively (a hard link on local
disk, ``If-None-Match`` on S3): of two compactions at once, one wins and the other
deletes its parts. Nothing a reader may be reading is deleted at once: a snapshot's
folded log files and retired parts go one compaction later, and a reader that still
misses a file retries once (``views.py``).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import secrets
import socket
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePath
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ragproof_core.store import tables
from ragproof_core.store.layout import (
    ENTRY_SEPARATOR,
    RECORD_FOLDERS,
    SCHEMA_DIR_NAME,
    STOP_NAME,
    StoreLayout,
)

# Finished entries the log holds before a run's end compacts it.
COMPACT_EVERY = 16
HEARTBEAT_EVERY_S = 5.0
# A run whose last beat is older than this is listed ``interrupted`` (CONTRACT section 29).
HEARTBEAT_STALE_S = 15
# Unreferenced parts this old are orphans of a compaction that lost or died.
ORPHAN_AGE = timedelta(minutes=10)

RUNS = "runs"
# The catalog's tables of rows (beside ``runs``), each logged and compacted alike.
DATA_TABLES: dict[str, tables.Table] = {
    "metric_summaries": tables.METRIC_SUMMARIES,
    "case_results": tables.CASE_RESULTS,
    "outputs": tables.OUTPUTS,
    "turns": tables.TURNS,
}
# Records added to a finished run (CONTRACT sections 12 and 22), one file each: logged
# as written under ``<run_id>~<record_id>``, compacted with the entries, kept with their run.
RECORD_TABLES: dict[str, tables.Table] = {
    "calibrations": tables.CALIBRATIONS,
    "labels": tables.LABELS,
    "probes": tables.PROBES,
}
ROW_TABLES: dict[str, tables.Table] = {**DATA_TABLES, **RECORD_TABLES}
CATALOG_TABLES: dict[str, tables.Table] = {RUNS: tables.CATALOG_RUNS, **ROW_TABLES}
# Logged records that weigh one pending entry: a person's labels compact the log too,
# not at every sixteenth label.
RECORDS_PER_ENTRY = 8
ENTRY_FIELD = pa.field("entry", pa.string(), nullable=False)

OPEN, FINISHED, DAMAGED, REMOVED = "open", "finished", "damaged", "removed"


def new_entry(now: datetime | None = None) -> str:
    """A fresh entry id: sortable by time, random after (two at once never clash)."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return f"{moment:%Y%m%dT%H%M%S%fZ}-{secrets.token_hex(3)}"


def entry_key(run_id: str, entry: str) -> str:
    return f"{run_id}{ENTRY_SEPARATOR}{entry}"


def key_of(path: PurePath) -> str:
    """``<run_id>~<entry>`` of a log file, whatever table (and part) it holds."""
    return ENTRY_SEPARATOR.join(path.stem.split(ENTRY_SEPARATOR)[:2])


def part_schema(table: str) -> pa.Schema:
    """A compacted part of ``table``: its columns, then the entry its rows belong to."""
    schema = CATALOG_TABLES[table].schema
    return schema if table == RUNS else schema.append(ENTRY_FIELD)


@dataclass(frozen=True, slots=True)
class Part:
    name: str
    rows: int
    size: int
    sha256: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "rows": self.rows, "size": self.size, "sha256": self.sha256}


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The parts in force and the log files they fold (``folded``: this compaction's and
    the previous one's, whose files may still be listed)."""

    seq: int = 0
    parts: Mapping[str, tuple[Part, ...]] = field(default_factory=dict)
    folded: frozenset[str] = frozenset()
    folded_now: frozenset[str] = frozenset()
    created_at: str = ""

    def table_parts(self, table: str) -> tuple[Part, ...]:
        return tuple(self.parts.get(table, ()))

    def to_json(self) -> str:
        return json.dumps(
            {
                "seq": self.seq,
                "created_at": self.created_at,
                "parts": {t: [p.to_json() for p in ps] for t, ps in self.parts.items()},
                "folded_now": sorted(self.folded_now),
                "folded": sorted(self.folded),
            },
            indent=1,
        )

    @classmethod
    def from_json(cls, text: str) -> Snapshot:
        data = json.loads(text)
        return cls(
            seq=int(data["seq"]),
            parts={t: tuple(Part(**p) for p in ps) for t, ps in data["parts"].items()},
            folded=frozenset(data["folded"]),
            folded_now=frozenset(data["folded_now"]),
            created_at=data.get("created_at", ""),
        )


@dataclass(frozen=True, slots=True)
class CatalogState:
    """What a reader reads: a snapshot's parts, and the log files it does not fold."""

    snapshot: Snapshot
    log: Mapping[str, tuple[str, ...]]  # table -> log file URLs not folded
    # (run id, last beat as ISO text) of every running run, read as the state was: a
    # beat file a run's end removes after the listing is then never read by DuckDB.
    heartbeats: tuple[tuple[str, str], ...]

    @property
    def empty(self) -> bool:
        return self.snapshot.seq == 0 and not self.log.get(RUNS)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_sha256(files: Any, path: PurePath) -> tuple[int, str]:
    """(size, sha256) of a stored file, read in blocks."""
    digest = hashlib.sha256()
    size = 0
    with files.open_read(path) as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
            size += len(block)
    return size, digest.hexdigest()


def _utc(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    moment = datetime.fromisoformat(str(value))
    return moment if moment.utcoffset() is not None else moment.replace(tzinfo=UTC)


def open_entry_row(run_id: str, entry: str, manifest: Mapping[str, Any]) -> dict[str, Any]:
    """A started run's row, from what its manifest says (a test's manifest may say little)."""
    adapter = manifest.get("adapter")
    return {
        "run_id": run_id,
        "dataset": str(manifest.get("dataset") or ""),
        "adapter": str(adapter.get("target", "") if isinstance(adapter, dict) else adapter or ""),
        "status": "running",
        "started_at": _utc(manifest.get("started_at")) or datetime.now(UTC),
        "finished_at": None,
        "judge_model": None,
        "prompt_hashes": "{}",
        "config_json": json.dumps(dict(manifest), sort_keys=True, ensure_ascii=False),
        "cost_usd": None,
        "cases": int(manifest.get("cases") or 0),
        "case_failures": 0,
        "judge_requests": 0,
        "cache_hits": 0,
        "entry": entry,
        "kind": OPEN,
        "files": None,
        "damaged_file": None,
        "host": socket.gethostname(),
        "pid": os.getpid(),
    }


def catalog_table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Rows of the catalog's runs table (missing columns null)."""
    schema = tables.CATALOG_RUNS.schema
    return pa.Table.from_pylist(
        [{name: row.get(name) for name in schema.names} for row in rows], schema=schema
    )


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    columns = []
    for f in schema:
        if f.name in table.column_names:
            columns.append(table.column(f.name).cast(f.type))
        else:
            columns.append(pa.nulls(table.num_rows, f.type))
    return pa.Table.from_arrays(columns, schema=schema)


class Catalog:
    """The catalog of the store at ``layout``, through its file operations ``files``."""

    def __init__(self, layout: StoreLayout, files: Any) -> None:
        self.layout = layout
        self.files = files

    # --- reading ----------------------------------------------------------------------------

    def exists(self) -> bool:
        """Whether this store has a catalog yet (a store from before it has none)."""
        return self.files.is_file(self.layout.catalog_log_schema_path(RUNS))

    def complete(self) -> bool:
        """Whether every table's log has its schema file (``ensure_schema_files``)."""
        return all(
            self.files.is_file(self.layout.catalog_log_schema_path(t)) for t in CATALOG_TABLES
        )

    def snapshots(self) -> list[int]:
        found = []
        for path in self.files.glob(str(self.layout.snapshots_dir / "*.json")):
            with suppress(ValueError):
                found.append(int(PurePath(path).stem))
        return sorted(found)

    def _snapshot_at(self, seq: int) -> Snapshot:
        """Snapshot ``seq``, or an empty one when it is gone or unreadable."""
        try:
            return Snapshot.from_json(self.files.read_text(self.layout.snapshot_path(seq)))
        except (FileNotFoundError, ValueError, KeyError):
            return Snapshot()

    def snapshot(self) -> Snapshot:
        """The latest snapshot (an empty one before the first compaction)."""
        for seq in reversed(self.snapshots()):
            try:
                return Snapshot.from_json(self.files.read_text(self.layout.snapshot_path(seq)))
            except FileNotFoundError:  # retired by a compaction since the listing
                continue
        return Snapshot()

    def log_files(self, table: str) -> list[PurePath]:
        """The table's log files (the schema file aside), in name order."""
        return [
            p
            for p in self.files.glob(str(self.layout.catalog_log_dir(table) / "*.parquet"))
            if PurePath(p).stem != SCHEMA_DIR_NAME
        ]

    def state(self, found_damaged: Mapping[str, str] | None = None) -> CatalogState:
        """The snapshot and the log files it does not fold. Listed before the snapshot is
        read: a log file folded by a compaction in between is then in the snapshot's parts
        and excluded by its ``folded``, never missed.

        A run marked damaged or removed (its mark's kind is in its file name), or found
        damaged by this reader (``found_damaged``: a store it cannot mark), has its rows'
        log files left out: they may be the very files that cannot be read."""
        listed = self._listed(found_damaged)
        beats = [
            p
            for p in self.files.glob(str(self.layout.heartbeats_dir / "*.json"))
            if PurePath(p).stem != SCHEMA_DIR_NAME
        ]
        snapshot = self.snapshot()
        log = {
            table: tuple(self.layout.url(p) for p in paths if key_of(p) not in snapshot.folded)
            for table, paths in listed.items()
        }
        return CatalogState(snapshot, log, self._read_beats(beats))

    def _read_beats(self, paths: Sequence[PurePath]) -> tuple[tuple[str, str], ...]:
        """(run id, beat_at) of each beat file still there (a run's end removes its own,
        maybe since the listing); one that cannot be parsed is no beat."""
        found = []
        for data in self.files.read_present(paths):
            with suppress(ValueError, KeyError, TypeError):
                beat = json.loads((data or b"").decode("utf-8"))
                found.append((str(beat["run_id"]), datetime.fromisoformat(beat["beat_at"])))
        return tuple((run_id, moment.isoformat()) for run_id, moment in found)

    def _listed(self, found_damaged: Mapping[str, str] | None = None) -> dict[str, list[PurePath]]:
        """Every catalog table's log files, those of damaged or removed runs' rows left out."""
        listed = {table: self.log_files(table) for table in CATALOG_TABLES}
        marked: dict[str, str] = {run_id: "~" for run_id in found_damaged or {}}
        for path in listed[RUNS]:
            run_id, entry = key_of(path).split(ENTRY_SEPARATOR)
            if entry.endswith((f"-{DAMAGED}", f"-{REMOVED}")):
                marked[run_id] = max(marked.get(run_id, ""), entry)
        for table in ROW_TABLES:
            listed[table] = [p for p in listed[table] if not _marked_out(p, marked)]
        return listed

    def part_url(self, table: str, part: Part) -> str:
        return self.layout.url(self.layout.catalog_part_path(table, part.name))

    def _entry_paths(self, run_id: str) -> list[str]:
        pattern = str(self.layout.catalog_log_dir(RUNS) / f"{run_id}{ENTRY_SEPARATOR}*.parquet")
        return self.files.glob(pattern)

    def entries_of(self, run_id: str) -> pa.Table:
        """Every logged entry row of one run (not the compacted ones)."""
        found = []
        for path in self._entry_paths(run_id):
            with suppress(FileNotFoundError):
                found.append(conform(self.files.parquet_file(path).read(), _RUNS_SCHEMA))
        return pa.concat_tables(found) if found else _RUNS_SCHEMA.empty_table()

    def open_entry(self, run_id: str) -> str | None:
        """The entry id of the run's open entry in force, if its latest entry is open."""
        # Two string columns, file by file: concatenating whole entries (their UTC times)
        # goes through pandas, which the command that launches a run never imports.
        entries = []
        for path in self._entry_paths(run_id):
            with suppress(FileNotFoundError):
                entries += self.files.parquet_file(path).read(["kind", "entry"]).to_pylist()
        live = [r for r in entries if r["kind"] in (OPEN, FINISHED)]
        if not live:
            return None
        latest = max(live, key=lambda r: r["entry"])
        return latest["entry"] if latest["kind"] == OPEN else None

    # --- writing ----------------------------------------------------------------------------

    def ensure_schema_files(self) -> None:
        """The zero-row files that make every log glob match (a new catalog). A catalog
        from before records were logged gets its runs' records logged first (once: the
        schema file, written after, says they are)."""
        for table in CATALOG_TABLES:
            path = self.layout.catalog_log_schema_path(table)
            if not self.files.is_file(path):
                if table in RECORD_TABLES:
                    self._log_stored_records(table)
                self.files.write_parquet(path, CATALOG_TABLES[table].schema.empty_table())
        if not self.files.is_file(self.layout.heartbeat_schema_path):
            self.files.write_bytes(self.layout.heartbeat_schema_path, b"")

    def write_entry(self, row: Mapping[str, Any]) -> None:
        """One entry of one run: the file of its (run, entry), replaced if it exists."""
        path = self.layout.catalog_log_path(RUNS, row["run_id"], row["entry"])
        self.files.write_parquet(path, catalog_table([row]))

    def open_run(self, run_id: str, manifest: Mapping[str, Any]) -> str:
        """Log a run's start (or restart, or resume): a new open entry; returns its id."""
        self.ensure_schema_files()
        entry = new_entry()
        self.write_entry(open_entry_row(run_id, entry, manifest))
        self.beat(run_id)
        return entry

    def link_rows(self, table: str, run_id: str, entry: str, sources: Sequence[PurePath]) -> None:
        """A finished entry's files of ``table`` become its log files of that table."""
        for index, source in enumerate(sources):
            self.files.link(source, self.layout.catalog_log_path(table, run_id, entry, index))

    def write_rows(self, table: str, run_id: str, entry: str, rows: pa.Table) -> None:
        self.files.write_parquet(self.layout.catalog_log_path(table, run_id, entry, 0), rows)

    def log_record(self, table: str, run_id: str, record_id: str) -> None:
        """A record just written to a finished run's folder joins the log; the log is
        compacted when records and entries together weigh ``COMPACT_EVERY``."""
        self.ensure_schema_files()
        self._link_record(table, run_id, record_id)
        if self.pending() >= COMPACT_EVERY:
            self.compact()

    def _link_record(self, table: str, run_id: str, record_id: str) -> None:
        source = self.layout.record_path(run_id, table, record_id)
        self.files.link(source, self.layout.catalog_log_path(table, run_id, record_id))

    def _log_stored_records(self, table: str) -> None:
        """Every run folder's records of ``table`` into the log (a catalog built before
        records were logged, or rebuilt)."""
        folder = PurePath(RECORD_FOLDERS[table])
        for path in self.files.glob(str(self.layout.runs_dir / "*" / folder / "*.parquet")):
            run_id = PurePath(path).parents[len(folder.parts)].name
            self._link_record(table, run_id, PurePath(path).stem)

    def beat(self, run_id: str, now: datetime | None = None) -> None:
        """Renew the run's heartbeat: a line of JSON (no Arrow array is built, so the
        command that beats between a run's steps never imports pandas)."""
        moment = (now or datetime.now(UTC)).astimezone(UTC)
        line = json.dumps({"run_id": run_id, "beat_at": moment.isoformat()}) + "\n"
        self.files.write_bytes(self.layout.heartbeat_path(run_id), line.encode())

    def end_beats(self, run_id: str) -> None:
        self.files.remove(self.layout.heartbeat_path(run_id))

    def mark(self, run_id: str, kind: str, damaged_file: str | None = None) -> None:
        """A damaged or removed mark on the run's entry in force. The run's rows leave the
        log at once (links of its own files, which stay in its folder): a glob over the
        log, the views file's, must never meet a file that cannot be read."""
        self.ensure_schema_files()
        for table in ROW_TABLES:
            pattern = str(self.layout.catalog_log_dir(table) / f"{run_id}{ENTRY_SEPARATOR}*")
            for path in self.files.glob(pattern):
                self.files.remove(path)
        self.write_entry(
            {
                "run_id": run_id,
                "dataset": "",
                "adapter": "",
                "status": kind,
                "started_at": datetime.now(UTC),
                "config_json": "{}",
                "prompt_hashes": "{}",
                "cases": 0,
                "case_failures": 0,
                "judge_requests": 0,
                "cache_hits": 0,
                # Its kind in its name: readers leave the run's rows out unread (``state``).
                "entry": f"{new_entry()}-{kind}",
                "kind": kind,
                "damaged_file": damaged_file,
            }
        )

    # --- a run's end: its files, its rows, its finished entry ------------------------------

    def run_files(self, run_id: str) -> list[dict[str, Any]]:
        """The run's files the catalog keeps (name relative to its folder, size, sha256):
        all but temporary files, reports (rewritten at will) and what is added after the
        run ends (labels, calibrations, probes: records of their own)."""
        folder = self.layout.run_dir(run_id)
        found = []
        for name, _ in self.files.walk(folder):
            if not kept_file(name):
                continue
            try:
                size, digest = file_sha256(self.files, folder / name)
            except FileNotFoundError:
                continue
            found.append({"name": name, "size": size, "sha256": digest})
        return found

    def register_finished(self, run_id: str, *, compact: bool = True) -> str:
        """Catalog a run whose record is written: link its rows into the log, then replace
        its open entry with the finished one (so its rows are there before it shows).
        Returns the entry id."""
        self.ensure_schema_files()
        entry = self.open_entry(run_id) or new_entry()
        record_path = self.layout.table_path(run_id, "run")
        record = conform(self.files.parquet_file(record_path).read(), _RUNS_SCHEMA).to_pylist()[0]
        files = self.run_files(run_id)
        for table in ("case_results", "outputs"):
            self.link_rows(
                table, run_id, entry, self.files.glob(self.layout.table_parts_glob(run_id, table))
            )
        summaries = self.layout.table_path(run_id, "metric_summaries")
        if self.files.is_file(summaries):
            self.link_rows("metric_summaries", run_id, entry, [summaries])
        turns = self._turns(run_id)
        if turns is not None and turns.num_rows:
            self.write_rows("turns", run_id, entry, turns)
        record.update(
            entry=entry,
            kind=FINISHED,
            files=files,
            damaged_file=None,
            host=socket.gethostname(),
            pid=os.getpid(),
        )
        self.write_entry(record)
        self.end_beats(run_id)
        if compact and self.pending() >= COMPACT_EVERY:
            self.compact()
        return entry

    def _turns(self, run_id: str) -> pa.Table | None:
        """The conversation turns of the run's dataset (none for single cases)."""
        path = self.layout.table_path(run_id, "dataset")
        try:
            parquet = self.files.parquet_file(path)
        except FileNotFoundError:
            return None
        if "conversation_id" not in parquet.schema_arrow.names:
            return None
        data = parquet.read(columns=["run_id", "id", "conversation_id"])
        data = data.filter(pc.is_valid(data["conversation_id"]))
        return conform(data, tables.TURNS.schema)

    def rebuild(self) -> int:
        """Catalog every run folder afresh (a store from before the catalog, or one whose
        catalog was lost): finished runs as finished, the others as open (listed
        ``interrupted``, having no heartbeat); then one compaction. Returns runs found."""
        self.ensure_schema_files()
        found = 0
        for path in self.files.glob(str(self.layout.runs_dir / "*" / "manifest.json")):
            run_id = PurePath(path).parent.name
            found += 1
            if self.files.is_file(self.layout.table_path(run_id, "run")):
                self.register_finished(run_id, compact=False)
            else:
                manifest = json.loads(self.files.read_text(path))
                entry = new_entry()
                row = open_entry_row(run_id, entry, manifest)
                self.write_entry(row)
        self.compact(min_entries=0, merge_all=True)
        return found

    # --- damage -----------------------------------------------------------------------------

    def damage(
        self, run_id: str, files: Sequence[Mapping[str, Any]], *, deep: bool = False
    ) -> tuple[str, str] | None:
        """The first of a run's catalogued ``files`` that is missing or of another size (or,
        ``deep``, of another sha256): (``runs/R/NAME``, what is wrong); None when all hold.
        Sizes are one stat a file: cheap enough for every run a command names or lists."""
        folder = self.layout.run_dir(run_id)
        for item in files:
            path = folder / item["name"]
            shown = self.relative(path)
            size = self.files.size(path)
            if size is None:
                return shown, "missing"
            if size != item["size"]:
                change = "truncated" if size < item["size"] else "grown"
                return shown, f"{change} ({size} of {item['size']} bytes)"
            if deep:
                try:
                    _, digest = file_sha256(self.files, path)
                except FileNotFoundError:
                    return shown, "missing"
                if digest != item["sha256"]:
                    return shown, "changed (its sha256 is not the catalog's)"
        return None

    def relative(self, path: PurePath) -> str:
        """``path`` as a fault names it: relative to the store."""
        try:
            return PurePath(path).relative_to(self.layout.root).as_posix()
        except ValueError:
            return str(path)

    # --- compaction -------------------------------------------------------------------------

    @contextmanager
    def _compaction_lock(self) -> Iterator[bool]:
        """Local stores: one compaction at a time (others skip). Object stores have no
        lock: the exclusive snapshot decides (``compact``)."""
        if self.layout.is_remote:
            yield True
            return
        path = Path(self.layout.catalog_dir) / "compact.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def pending(self) -> int:
        """Entries in the log that no snapshot folds yet, and records by their weight
        (``RECORDS_PER_ENTRY``)."""
        snapshot = self.snapshot()
        entries = sum(1 for p in self.log_files(RUNS) if key_of(p) not in snapshot.folded)
        records = sum(
            1 for t in RECORD_TABLES for p in self.log_files(t) if key_of(p) not in snapshot.folded
        )
        return entries + records // RECORDS_PER_ENTRY

    def compact(self, *, min_entries: int = COMPACT_EVERY, merge_all: bool = False) -> bool:
        """Fold the log into parts when it holds ``min_entries`` settled entries or more;
        True when a new snapshot was written. ``merge_all``: one part per table."""
        with self._compaction_lock() as held:
            if not held:
                return False
            return self._compact(min_entries, merge_all)

    def _compact(self, min_entries: int, merge_all: bool) -> bool:
        listed = self._listed()
        snapshot = self.snapshot()
        pending = [p for p in listed[RUNS] if key_of(p) not in snapshot.folded]
        rows: list[pa.Table] = []
        for path in pending:
            with suppress(FileNotFoundError):
                rows.append(conform(self.files.parquet_file(path).read(), _RUNS_SCHEMA))
        logged = pa.concat_tables(rows) if rows else _RUNS_SCHEMA.empty_table()
        settled = logged.filter(pc.not_equal(logged["kind"], OPEN))
        records = {
            table: [p for p in listed[table] if key_of(p) not in snapshot.folded]
            for table in RECORD_TABLES
        }
        weight = settled.num_rows + sum(map(len, records.values())) // RECORDS_PER_ENTRY
        if weight < min_entries and not merge_all:
            return False
        folding = {
            entry_key(r, e)
            for r, e in zip(
                settled["run_id"].to_pylist(), settled["entry"].to_pylist(), strict=True
            )
        }
        folding |= {key_of(p) for paths in records.values() for p in paths}
        compacted = [self._read_part(RUNS, p) for p in snapshot.table_parts(RUNS)]
        runs_now = resolve_runs(pa.concat_tables([*compacted, settled]))
        live = set(zip(runs_now["run_id"].to_pylist(), runs_now["entry"].to_pylist(), strict=True))
        # Open entries still in the log count as live for the rows the tables keep.
        for run_id, entry, kind in zip(
            logged["run_id"].to_pylist(),
            logged["entry"].to_pylist(),
            logged["kind"].to_pylist(),
            strict=True,
        ):
            if kind == OPEN:
                live.add((run_id, entry))
        written: list[tuple[str, Part]] = []
        parts: dict[str, tuple[Part, ...]] = {}
        parts[RUNS] = (self._write_part(RUNS, runs_now),)
        written.append((RUNS, parts[RUNS][0]))
        for table in ROW_TABLES:
            new = self._fold_rows(table, [p for p in listed[table] if key_of(p) in folding])
            kept = list(snapshot.table_parts(table))
            if new is not None and new.num_rows:
                part = self._write_part(table, new)
                written.append((table, part))
                kept.append(part)
            kept, merged = self._merge(table, kept, live, merge_all)
            written.extend((table, p) for p in merged)
            parts[table] = tuple(kept)
        successor = Snapshot(
            seq=snapshot.seq + 1,
            parts=parts,
            folded=frozenset(folding | snapshot.folded_now),
            folded_now=frozenset(folding),
            created_at=datetime.now(UTC).isoformat(),
        )
        try:
            self.files.create_exclusive(
                self.layout.snapshot_path(successor.seq), successor.to_json().encode()
            )
        except FileExistsError:
            # Another compaction won; its snapshot folds what this one would have.
            for table, part in written:
                self.files.remove(self.layout.catalog_part_path(table, part.name))
            return False
        # Parts this compaction wrote and merged at once: no snapshot ever named them.
        named = {(t, p.name) for t, ps in successor.parts.items() for p in ps}
        for table, part in written:
            if (table, part.name) not in named:
                self.files.remove(self.layout.catalog_part_path(table, part.name))
        self._retire(snapshot, successor, listed)
        return True

    def _read_part(self, table: str, part: Part) -> pa.Table:
        path = self.layout.catalog_part_path(table, part.name)
        return conform(self.files.parquet_file(path).read(), part_schema(table))

    def _fold_rows(self, table: str, paths: Sequence[PurePath]) -> pa.Table | None:
        schema = part_schema(table)
        found = []
        for path in paths:
            try:
                data = self.files.parquet_file(path).read()
            except FileNotFoundError:
                continue
            except (OSError, pa.ArrowException):
                # Damaged under the run's feet: marked, and its rows left out of the part.
                run_id, logged_as = key_of(path).split(ENTRY_SEPARATOR)
                with suppress(OSError):
                    self.mark(run_id, DAMAGED, run_file(table, run_id, logged_as))
                continue
            entry = PurePath(path).stem.split(ENTRY_SEPARATOR)[1]
            data = conform(data, CATALOG_TABLES[table].schema)
            found.append(
                conform(
                    data.append_column(ENTRY_FIELD, pa.repeat(pa.scalar(entry), data.num_rows)),
                    schema,
                )
            )
        return pa.concat_tables(found) if found else None

    def _write_part(self, table: str, rows: pa.Table) -> Part:
        rows = rows.sort_by([("run_id", "ascending"), ("entry", "ascending")])
        name = new_entry()
        path = self.layout.catalog_part_path(table, name)
        sink = pa.BufferOutputStream()
        pq.write_table(rows, sink, compression="zstd", row_group_size=PART_ROW_GROUP)
        data = sink.getvalue().to_pybytes()
        self.files.write_bytes(path, data)
        return Part(name, rows.num_rows, len(data), sha256_bytes(data))

    def _merge(
        self,
        table: str,
        parts: list[Part],
        live: set[tuple[str, str]],
        merge_all: bool,
    ) -> tuple[list[Part], list[Part]]:
        """Merge the newest parts while the older is at most twice the newer (all of them
        with ``merge_all``), keeping only rows of entries in force."""
        written: list[Part] = []
        while len(parts) >= 2 and (merge_all or parts[-2].rows <= 2 * parts[-1].rows):
            older, newer = parts[-2], parts[-1]
            rows = pa.concat_tables([self._read_part(table, older), self._read_part(table, newer)])
            rows = _keep_live(rows, live, by_run=table in RECORD_TABLES)
            merged = self._write_part(table, rows)
            written.append(merged)
            parts = [*parts[:-2], merged]
        return parts, written

    def _retire(
        self, previous: Snapshot, successor: Snapshot, listed: Mapping[str, Sequence[PurePath]]
    ) -> None:
        """Delete what no reader of the new snapshot or of the one before needs: log files
        folded by the previous compaction, parts neither references, older snapshots."""
        for paths in listed.values():
            for path in paths:
                if key_of(path) in previous.folded and key_of(path) not in successor.folded_now:
                    self.files.remove(path)
        keep = {
            (t, p.name)
            for snap in (previous, successor)
            for t, ps in snap.parts.items()
            for p in ps
        }
        # Parts of the snapshots before the previous one: no reader is sent to them now.
        older = self.snapshots()
        retired = {
            (t, p.name)
            for seq in older
            if seq < previous.seq
            for t, ps in self._snapshot_at(seq).parts.items()
            for p in ps
        }
        cutoff = datetime.now(UTC) - ORPHAN_AGE
        for table in CATALOG_TABLES:
            folder = self.layout.catalog_dir / "parts" / table
            for path in self.files.glob(str(folder / "*.parquet")):
                name = PurePath(path).stem
                if (table, name) in keep:
                    continue
                referenced_before = (table, name) in retired or any(
                    p.name == name for p in previous.table_parts(table)
                )
                if referenced_before or entry_time(name) < cutoff:
                    self.files.remove(path)
        for seq in older:
            if seq < previous.seq:
                self.files.remove(self.layout.snapshot_path(seq))


# Row groups of a part: small enough that a query about a few runs reads little of it.
PART_ROW_GROUP = 16_384
_RUNS_SCHEMA = tables.CATALOG_RUNS.schema


def entry_time(name: str) -> datetime:
    """When an entry (or a part) was made: the time its id starts with (``new_entry``)."""
    try:
        return datetime.strptime(name.split("-")[0], "%Y%m%dT%H%M%S%fZ").replace(tzinfo=UTC)
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)


def _keep_live(rows: pa.Table, live: set[tuple[str, str]], *, by_run: bool = False) -> pa.Table:
    """The rows of entries in ``live``; ``by_run`` (records): of the runs in ``live``."""
    if by_run:
        runs = pa.array(sorted({run_id for run_id, _ in live}), pa.string())
        return rows.filter(pc.is_in(rows["run_id"], value_set=runs))
    keep = [
        (run_id, entry) in live
        for run_id, entry in zip(rows["run_id"].to_pylist(), rows["entry"].to_pylist(), strict=True)
    ]
    return rows.filter(pa.array(keep, pa.bool_()))


def run_file(table: str, run_id: str, logged_as: str) -> str:
    """The run folder's file (relative to the store) that a log file of ``table`` links,
    ``logged_as`` the entry or record id its name carries."""
    if table == RUNS:
        return f"runs/{run_id}/run.parquet"
    if table == "turns":
        return f"runs/{run_id}/dataset.parquet"
    if table in RECORD_TABLES:
        return f"runs/{run_id}/{RECORD_FOLDERS[table]}/{logged_as}.parquet"
    return f"runs/{run_id}/{table}.parquet"


def resolve_runs(entries: pa.Table) -> pa.Table:
    """One row per run as the catalog stands, from entry rows: the latest finished entry
    in force with a later damaged mark folded in; runs removed after it, and runs whose
    entry in force is open, left out (open entries stay in the log)."""
    rows = entries.to_pylist()
    latest: dict[str, dict[str, Any]] = {}
    marks: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row["kind"] in (OPEN, FINISHED):
            held = latest.get(row["run_id"])
            if held is None or row["entry"] > held["entry"]:
                latest[row["run_id"]] = row
        else:
            marks.setdefault(row["run_id"], []).append(row)
    kept = []
    for run_id, row in latest.items():
        if row["kind"] != FINISHED:
            continue
        later = [m for m in marks.get(run_id, ()) if m["entry"] > row["entry"]]
        if any(m["kind"] == REMOVED for m in later):
            continue
        damaged = [m for m in later if m["kind"] == DAMAGED]
        if damaged:
            row = {**row, "damaged_file": max(damaged, key=lambda m: m["entry"])["damaged_file"]}
        kept.append(row)
    return pa.Table.from_pylist(kept, schema=_RUNS_SCHEMA)


def _marked_out(path: PurePath, marked: Mapping[str, str]) -> bool:
    """Whether a log file's rows are of an entry older than its run's damaged mark."""
    run_id, entry = key_of(path).split(ENTRY_SEPARATOR)
    return run_id in marked and entry < marked[run_id]


def kept_file(name: str) -> bool:
    """Whether the catalog keeps a run folder's file ``name`` (relative, posix)."""
    first, _, _ = name.partition("/")
    base = name.rsplit("/", 1)[-1]
    if base.startswith(".") or first == "calibrations" or name == STOP_NAME:
        return False
    return not (base.startswith("report") and base.endswith(".html"))
