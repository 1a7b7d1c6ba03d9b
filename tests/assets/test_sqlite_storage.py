"""Dagster's SQLite storages with one engine a database a process, and no migration
scripts loaded for a database already set up (ragproof_assets/instance/sqlite_storage.py)."""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import pytest
import yaml
from alembic.script import ScriptDirectory
from sqlalchemy import event
from sqlalchemy.pool import Pool

from ragproof_assets.instance.sqlite_storage import KeptEngineEventLogStorage, NewRunDatabase

RAGPROOFS = {
    "storage": {
        "custom": {
            "module": "ragproof_assets.instance.sqlite_storage",
            "class": "KeptEngineSqliteStorage",
            "config": {"base_dir": "{home}"},
        }
    }
}
# Dagster's own default for a home whose dagster.yaml names no storage.
DAGSTERS: dict = {}


@contextmanager
def _instance(home: Path, storage: dict) -> Iterator[dg.DagsterInstance]:
    """The home's instance with ``storage``, entered as Dagster's own code enters one:
    its definitions state storage is the current one only inside (a leaked one, from an
    instance gone, fails every materialization after it)."""
    home.mkdir(parents=True, exist_ok=True)
    settings = {"telemetry": {"enabled": False}, **storage}
    text = yaml.safe_dump(settings).replace("{home}", str(home))
    (home / "dagster.yaml").write_text(text)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        yield instance


@dg.asset
def numbers() -> int:
    return 7


def _materialize(instance: dg.DagsterInstance) -> str:
    result = dg.materialize([numbers], instance=instance)
    assert result.success
    return result.run_id


def _materializations(instance: dg.DagsterInstance) -> int:
    records = instance.fetch_materializations(dg.AssetKey("numbers"), limit=100).records
    return len(records)


def test_a_home_reads_the_same_through_dagsters_storage_and_ragproofs(tmp_path):
    home = tmp_path / "home"
    with _instance(home, RAGPROOFS) as ours:
        first = _materialize(ours)
        _materialize(ours)
        events = [e.dagster_event_type for e in ours.all_logs(first)]

    with _instance(home, DAGSTERS) as dagsters:
        assert {r.run_id for r in dagsters.get_runs()} >= {first}
        assert len(dagsters.get_runs()) == 2
        assert _materializations(dagsters) == 2
        assert [e.dagster_event_type for e in dagsters.all_logs(first)] == events
        _materialize(dagsters)

    with _instance(home, RAGPROOFS) as ours_again:
        assert len(ours_again.get_runs()) == 3
        assert _materializations(ours_again) == 3


def _schema(home: Path) -> dict[str, list]:
    found = {}
    for database in sorted(home.rglob("*.db")):
        with sqlite3.connect(database) as conn:
            tables = conn.execute(
                "SELECT type, name, sql FROM sqlite_master ORDER BY type, name"
            ).fetchall()
            version = conn.execute("SELECT version_num FROM alembic_version").fetchall()
            indexes = [r for r in tables if r[0] == "index"]
        name = str(database.relative_to(home))
        found[name] = [tables, version, len(indexes)]
    return found


def test_a_new_home_and_its_runs_get_dagsters_files_tables_and_revisions(tmp_path):
    run_ids: dict[str, list[str]] = {}
    for name, storage in (("ours", RAGPROOFS), ("dagsters", DAGSTERS)):
        with _instance(tmp_path / name, storage) as instance:
            # The second and third runs' databases are copies of the first's, as set up.
            run_ids[name] = [_materialize(instance) for _ in range(3)]
    ours, dagsters = _schema(tmp_path / "ours"), _schema(tmp_path / "dagsters")
    # Each run's database is named by its run, and the same inside as Dagster's.
    a_run_database = dagsters.pop(f"history/runs/{run_ids['dagsters'][0]}.db")
    for run_id in run_ids["dagsters"][1:]:
        dagsters.pop(f"history/runs/{run_id}.db")
    for run_id in run_ids["ours"]:
        assert ours.pop(f"history/runs/{run_id}.db") == a_run_database
    kept = ours.pop(f"history/.new-run-events-dagster-{dg.__version__}.db")
    assert ours == dagsters
    assert set(ours) == {"history/runs.db", "history/runs/index.db", "schedules/schedules.db"}
    assert kept == a_run_database
    # Each run holds its own events only, as Dagster's runs do.
    with _instance(tmp_path / "ours", DAGSTERS) as dagster_reads:
        assert {r.run_id for r in dagster_reads.get_runs()} == set(run_ids["ours"])
        for run_id in run_ids["ours"]:
            assert {e.run_id for e in dagster_reads.all_logs(run_id)} == {run_id}


class _Opened:
    """What a process pays to touch the instance's databases: engines' first
    connections, per database file, and loads of Alembic's migration scripts."""

    def __init__(self, monkeypatch) -> None:
        self.first_connections: Counter[str] = Counter()
        self.script_loads = 0
        event.listen(Pool, "first_connect", self._connected)
        loader = ScriptDirectory.from_config

        def counted(config, *args, **kwargs):
            self.script_loads += 1
            return loader(config, *args, **kwargs)

        monkeypatch.setattr(ScriptDirectory, "from_config", staticmethod(counted))

    def _connected(self, dbapi_connection, record) -> None:
        database = dbapi_connection.execute("PRAGMA database_list").fetchone()[2]
        self.first_connections[Path(database).name] += 1

    def close(self) -> None:
        event.remove(Pool, "first_connect", self._connected)


@pytest.fixture
def opened(monkeypatch):
    counts = _Opened(monkeypatch)
    yield counts
    counts.close()


def _second_run(home: Path, storage: dict, opened: _Opened) -> tuple[str, int, dict, int]:
    """A run in a home that has had one, with what opening and writing it cost (the
    run's id, migration script loads, first connections a database, events written)."""
    with _instance(home, storage) as instance:
        _materialize(instance)
    opened.first_connections.clear()
    opened.script_loads = 0
    with _instance(home, storage) as instance:
        run_id = _materialize(instance)
    script_loads, first_connections = opened.script_loads, dict(opened.first_connections)
    with _instance(home, DAGSTERS) as reader:
        events = len(reader.all_logs(run_id))
    return run_id, script_loads, first_connections, events


def test_a_set_up_home_is_opened_without_migration_scripts_and_an_engine_a_database(
    tmp_path, opened
):
    run_id, script_loads, first_connections, events = _second_run(
        tmp_path / "home", RAGPROOFS, opened
    )

    assert events >= 10
    # The run's own database is new: a copy of the first run's as Dagster set it up.
    assert script_loads == 0
    # Per database: the one kept engine, and Dagster's own where it set one up
    # (Dagster's storage: one an event).
    assert first_connections[f"{run_id}.db"] <= 3
    assert max(first_connections.values()) <= 3


def test_dagsters_own_storage_pays_an_engine_an_event_and_loads_the_scripts(tmp_path, opened):
    # The contrast the storage above exists for: if Dagster's own class stops doing
    # this, ragproof's subclasses are no longer needed.
    run_id, script_loads, first_connections, events = _second_run(
        tmp_path / "home", DAGSTERS, opened
    )

    # Each database checked (runs, schedules, index, the new run's), the new one stamped.
    assert script_loads >= 5
    assert first_connections[f"{run_id}.db"] >= events


def test_events_written_from_many_threads_at_once_are_all_stored(tmp_path):
    storage = KeptEngineEventLogStorage(str(tmp_path / "runs"))
    run_id = "a-run"

    def write(thread: int) -> None:
        for i in range(25):
            storage.store_event(
                dg.EventLogEntry(
                    error_info=None,
                    level="INFO",
                    user_message=f"thread {thread} event {i}",
                    run_id=run_id,
                    timestamp=time.time(),
                )
            )

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(write, range(4)))
    messages = [e.user_message for e in storage.get_logs_for_run(run_id)]
    assert sorted(messages) == sorted(f"thread {t} event {i}" for t in range(4) for i in range(25))


def _database(path: Path, *, stamped: bool, rows: int) -> Path:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE event_logs (id INTEGER PRIMARY KEY, event TEXT)")
        conn.executemany("INSERT INTO event_logs (event) VALUES (?)", [("e",)] * rows)
        if stamped:
            conn.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
            conn.execute("INSERT INTO alembic_version VALUES ('abc123')")
    return path


@pytest.mark.parametrize(
    ("stamped", "rows", "kept"),
    [(True, 0, True), (True, 1, False), (False, 0, False)],
    ids=["stamped and empty", "an event written", "never stamped"],
)
def test_only_a_stamped_empty_run_database_is_kept_for_new_runs(tmp_path, stamped, rows, kept):
    folder = tmp_path / "history" / "runs"
    folder.mkdir(parents=True)
    new_run = NewRunDatabase(str(folder) + "/")
    new_run.keep(str(_database(folder / "first.db", stamped=stamped, rows=rows)))

    assert Path(new_run.path).exists() is kept
    assert new_run.copied_to(str(folder / "second.db")) is kept
    # Nothing else is left beside them (the drafts are gone).
    assert sorted(p.name for p in (tmp_path / "history").rglob("*")) == sorted(
        ["runs", "first.db", *(["second.db", Path(new_run.path).name] if kept else [])]
    )


def test_a_database_another_process_made_first_is_not_copied_over(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    new_run = NewRunDatabase(str(folder) + "/")
    new_run.keep(str(_database(folder / "first.db", stamped=True, rows=0)))
    theirs = _database(folder / "second.db", stamped=True, rows=3)

    assert new_run.copied_to(str(theirs)) is False
    with sqlite3.connect(theirs) as conn:
        assert conn.execute("SELECT count(*) FROM event_logs").fetchone() == (3,)


def test_a_run_database_that_cannot_be_kept_costs_nothing_but_the_saving(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    new_run = NewRunDatabase(str(folder) + "/")
    unreadable = folder / "first.db"
    unreadable.write_bytes(b"not an SQLite database, " * 100)

    new_run.keep(str(unreadable))

    assert not Path(new_run.path).exists()
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["first.db", "runs"]
    assert new_run.copied_to(str(folder / "second.db")) is False
