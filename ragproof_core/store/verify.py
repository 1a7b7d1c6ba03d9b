"""``ragproof verify``: the whole store read against its catalog (CONTRACT section 29).

Every run's files against the sizes and sha256 the catalog holds, the catalog's own
parts against its snapshot, the judge cache, the views file, and leftovers: temporary
files of processes that are gone, and folders of runs with no result whose process is
gone (an ``interrupted`` run with results is kept: ``--resume`` continues it). One pass,
linear in the store's size. ``repair`` moves damaged runs and an unreadable cache into
``quarantine/`` (never deletes them), removes leftovers, catalogues run folders the
catalog lacks, rebuilds a damaged catalog and the views.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import asdict, dataclass
from pathlib import Path, PurePath
from typing import Any

import duckdb

from ragproof_core.quarantine import quarantine_file
from ragproof_core.store import views
from ragproof_core.store.catalog import CATALOG_TABLES, file_sha256
from ragproof_core.store.catalog_views import RUN_STATES_VIEW
from ragproof_core.store.files import is_temp_name
from ragproof_core.store.layout import JUDGE_CACHE_NAME, MANIFEST_NAME
from ragproof_core.store.run_store import RunStore

# The judge cache's SQLite companions, moved with it.
WAL_SUFFIXES = ("-wal", "-shm")


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem found: what kind, which run (if any), which file, what is wrong, and
    (with ``repair``) what was done about it."""

    kind: str  # damaged | uncatalogued | leftover | cache | catalog | views
    run_id: str | None
    file: str
    detail: str
    repaired: str | None = None

    def line(self) -> str:
        run = f"run {self.run_id}: " if self.run_id else ""
        done = f" -> {self.repaired}" if self.repaired else ""
        return f"{self.kind}: {run}{self.file}: {self.detail}{done}"


@dataclass(frozen=True, slots=True)
class VerifyReport:
    runs: int
    files: int
    bytes: int
    problems: list[Problem]
    repaired: bool

    @property
    def ok(self) -> bool:
        """Nothing wrong, or everything wrong repaired."""
        return all(p.repaired for p in self.problems) if self.repaired else not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "runs": self.runs,
            "files": self.files,
            "bytes": self.bytes,
            "problems": [asdict(p) for p in self.problems],
        }


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _temp_pid(name: str) -> int | None:
    """The writer's process id in a temporary file's name (``files.temp_path_for``)."""
    with suppress(ValueError, IndexError):
        return int(name.rsplit(".tmp-", 1)[1].split("-")[0])
    return None


def verify_store(store: RunStore, *, repair: bool = False) -> VerifyReport:
    """Read the whole store; with ``repair``, set right what can be."""
    problems: list[Problem] = []
    runs = files = size = 0
    views.prepare_store(store.layout)
    catalog = store.catalog
    problems += _check_parts(store, repair)
    found = store.catalog_query(
        f"SELECT run_id, kind, status, files, damaged_file FROM {RUN_STATES_VIEW} ORDER BY run_id"
    ).to_pylist()
    rows = [(r["run_id"], r["kind"], r["status"], r["files"], r["damaged_file"]) for r in found]
    catalogued = {row[0] for row in rows}
    for run_id, kind, status, listed, damaged_file in rows:
        runs += 1
        if kind == "open":
            problems += _check_open(store, run_id, status, repair)
            continue
        listed = list(listed or [])
        files += len(listed)
        size += sum(item["size"] for item in listed)
        found = catalog.damage(run_id, listed, deep=True)
        if found is None and damaged_file is not None:
            found = (damaged_file, "found damaged on read")
        if found is None:
            continue
        repaired = None
        if repair:
            store.remove_run(run_id, quarantine=True)
            repaired = f"moved to quarantine/runs/{run_id}"
        problems.append(Problem("damaged", run_id, found[0], found[1], repaired))
    problems += _check_folders(store, catalogued, repair)
    problems += _check_temp_files(store, repair)
    problems += _check_cache(store, repair)
    problems += _check_views(store, repair)
    if repair and any(p.repaired for p in problems):
        with suppress(OSError):
            catalog.compact(min_entries=0)
        with suppress(OSError, views.StoreLocked):
            store.ensure_views()
    return VerifyReport(runs, files, size, problems, repair)


def _check_open(store: RunStore, run_id: str, status: str, repair: bool) -> list[Problem]:
    """A started run with no record: running, kept (interrupted with results, which
    ``--resume`` continues), or a leftover (no result, its process gone)."""
    if status == "running" or store.table_parts(run_id, "case_results"):
        return []
    if not store.run_exists(run_id) and not store.files.walk(store.layout.run_dir(run_id)):
        detail = "catalogued, but its folder is gone"
    else:
        detail = "started, no result, and its process is gone"
    repaired = None
    if repair:
        store.remove_run(run_id)
        repaired = "removed"
    return [Problem("leftover", run_id, f"runs/{run_id}", detail, repaired)]


def _check_folders(store: RunStore, catalogued: set[str], repair: bool) -> list[Problem]:
    """Run folders the catalog does not know (written by hand, or by a process killed
    between its record and its entry)."""
    problems = []
    for path in store.files.glob(str(store.layout.runs_dir / "*" / MANIFEST_NAME)):
        run_id = PurePath(path).parent.name
        if run_id in catalogued:
            continue
        repaired = None
        finished = store.is_finished(run_id)
        if repair:
            if finished:
                store.catalog.register_finished(run_id, compact=False)
                repaired = "catalogued"
            else:
                store.remove_run(run_id)
                repaired = "removed"
        detail = "a finished run the catalog lacks" if finished else "an unfinished run folder"
        kind = "uncatalogued" if finished else "leftover"
        problems.append(Problem(kind, run_id, f"runs/{run_id}", detail, repaired))
    return problems


def _check_temp_files(store: RunStore, repair: bool) -> list[Problem]:
    """Temporary files of writers that are gone (a writer's own, while it lives, stay)."""
    if store.layout.is_remote:
        return []  # object stores write whole objects: no temporary file exists there
    problems = []
    for name, _ in store.files.walk(store.layout.root):
        base = name.rsplit("/", 1)[-1]
        if not is_temp_name(base):
            continue
        pid = _temp_pid(base)
        if pid is not None and _pid_alive(pid):
            continue
        repaired = None
        if repair:
            store.files.remove(Path(store.layout.root) / name)
            repaired = "removed"
        problems.append(
            Problem("leftover", None, name, "a temporary file whose writer is gone", repaired)
        )
    return problems


def _check_cache(store: RunStore, repair: bool) -> list[Problem]:
    """The local judge cache opens and passes SQLite's own check."""
    path = store.layout.judge_cache_path
    if not isinstance(path, Path) or not path.exists():
        return []
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
            verdict = con.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.Error as exc:
        verdict = " ".join(str(exc).split())
    if verdict == "ok":
        return []
    repaired = None
    if repair:
        moved = quarantine_file(path, WAL_SUFFIXES)
        repaired = f"moved to quarantine/{moved.name}" if moved else "already moved"
    return [Problem("cache", None, JUDGE_CACHE_NAME, f"cannot be read ({verdict})", repaired)]


def _check_parts(store: RunStore, repair: bool) -> list[Problem]:
    """The catalog's parts against its snapshot's sizes and sha256."""
    catalog = store.catalog
    snapshot = catalog.snapshot()
    problems = []
    for table in CATALOG_TABLES:
        for part in snapshot.table_parts(table):
            path = store.layout.catalog_part_path(table, part.name)
            try:
                found_size, digest = file_sha256(store.files, path)
            except FileNotFoundError:
                found_size, digest = None, None
            if found_size == part.size and digest == part.sha256:
                continue
            detail = "missing" if found_size is None else "differs from the catalog's snapshot"
            problems.append(Problem("catalog", None, catalog.relative(path), detail))
    if problems and repair:
        store.files.remove_tree(store.layout.catalog_dir)
        catalog.rebuild()
        problems = [
            Problem(p.kind, p.run_id, p.file, p.detail, "catalog rebuilt from the run folders")
            for p in problems
        ]
    return problems


def _check_views(store: RunStore, repair: bool) -> list[Problem]:
    """The local views file opens (it holds only views: rebuilt at will)."""
    path = store.layout.duckdb_path
    if store.layout.is_remote or not Path(path).exists():
        return []
    try:
        con = duckdb.connect(str(path), read_only=True)
        con.close()
        return []
    except duckdb.Error as exc:
        detail = " ".join(str(exc).split())[:200]
    repaired = None
    if repair:
        Path(path).unlink()
        repaired = "rebuilt"
    return [Problem("views", None, path.name, f"cannot be opened ({detail})", repaired)]


def problem_lines(report: VerifyReport) -> Iterator[str]:
    for problem in report.problems:
        yield problem.line()
