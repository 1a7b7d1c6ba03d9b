"""Dagster's SQLite storages (runs, event logs, schedules), with what a process pays
to touch them cut to what a run needs.

Same tables, files and migrations as Dagster's own ``storage: sqlite`` (the classes
below subclass Dagster's), so the UI, the daemon and every step read one instance,
and Dagster's own classes read a home these wrote. What differs:

- Dagster's storages build a new engine for every transaction and close its
  connection after it. For the event log that is every event a step writes (about a
  dozen a step, those about an asset mirrored into the index database too), and
  closing the last connection to a database in WAL mode checkpoints and deletes its
  log. Here a process keeps an engine a database and its connections open: about
  0.8 ms an event against 3.7 ms, idle (docs/benchmarks.md).
- The first time a process touches a database, Dagster loads every migration script
  to learn the head revision (15 to 30 ms, four databases a step process), only to
  act when the database was never stamped at all. A database already stamped is
  taken as set up here; one that is not goes through Dagster's own set-up.
- A new run's database is a copy of the first one Dagster set up in the home under
  the installed version (``NewRunDatabase``): 2 to 3 ms against 60 to 95 ms, before
  the run can start.

Each evaluation step is a process of its own, so a run paid all of this on its
critical path once a step.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial

import yaml

# Dagster names its storage classes' modules under dagster._core (its dagster.yaml
# examples do too); these are the classes ``storage: sqlite`` builds.
from dagster._config import StringSource
from dagster._core.storage.base_storage import DagsterStorage
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
from dagster._core.storage.sql import create_engine
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS, create_db_conn_string
from dagster._serdes import ConfigurableClass, ConfigurableClassData
from dagster.version import __version__ as dagster_version
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import QueuePool

# The index database every run's events are mirrored into (Dagster's name for it).
INDEX_DATABASE = "index"


class Engines:
    """An engine a database (connection string) for this process, its connections kept
    open between transactions.

    Dagster opens and closes a connection around every transaction, and closing the
    last connection to a database in WAL mode checkpoints the log into the database and
    deletes it: a write of the pages and an fsync for every event a step records. A
    connection kept open leaves that to SQLite's automatic checkpoints.

    Open connections must not cross a fork (SQLite's rule), so a process that finds
    engines made by its parent starts over without them. At most ``kept`` databases
    keep an engine, the least recently used given up first: the UI reads one database
    a run and must not hold a file open for each.
    """

    def __init__(self, kept: int = 4, **connect_args: object) -> None:
        self._kept = kept
        self._connect_args = connect_args
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._pid = os.getpid()
        # Steps write events from more than one thread (the summary step's pool).
        self._lock = threading.Lock()

    def engine(self, conn_string: str) -> Engine:
        with self._lock:
            if self._pid != os.getpid():
                # The parent's engines and connections are the parent's: left unclosed.
                self._engines, self._pid = OrderedDict(), os.getpid()
            engine = self._engines.get(conn_string)
            if engine is None:
                engine = create_engine(
                    conn_string,
                    poolclass=QueuePool,
                    pool_size=2,
                    max_overflow=-1,
                    connect_args={**self._connect_args, "check_same_thread": False},
                )
                self._engines[conn_string] = engine
                if len(self._engines) > self._kept:
                    _, oldest = self._engines.popitem(last=False)
                    # Connections still in use close when they are given back.
                    oldest.dispose()
            self._engines.move_to_end(conn_string)
            return engine

    @contextmanager
    def transaction(self, conn_string: str) -> Iterator[Connection]:
        with self.engine(conn_string).connect() as conn, conn.begin():
            yield conn

    def close(self) -> None:
        """Close every kept connection (those in use close when given back)."""
        with self._lock:
            engines, self._engines = self._engines, OrderedDict()
            if self._pid == os.getpid():
                for engine in engines.values():
                    engine.dispose()


def stamped(database: str, tables: tuple[str, ...] = ()) -> bool:
    """Whether Dagster has set the database file up: an Alembic revision is stamped in
    it and every one of ``tables`` exists. A file not there yet is not created."""
    if not os.path.exists(database):
        return False
    with contextlib.closing(sqlite3.connect(database)) as conn:
        names = _stamped_tables(conn)
    return names is not None and set(tables) <= names


def _stamped_tables(conn: sqlite3.Connection) -> set[str] | None:
    """The tables of a database with its Alembic revision stamped; None without one."""
    listed = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    names = {name for (name,) in listed}
    if "alembic_version" not in names:
        return None
    revision = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    return None if revision is None else names


class _OneDatabase:
    """A Dagster SQLite storage of one database file (``DATABASE``.db under its
    base_dir), that file's engine kept for the process."""

    DATABASE: str
    # Tables Dagster's from_local creates besides stamping the revision.
    TABLES: tuple[str, ...] = ()

    def __init__(self, conn_string: str, inst_data: ConfigurableClassData | None = None) -> None:
        super().__init__(conn_string, inst_data)
        self._database = conn_string
        self._engines = Engines()

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        # Dagster's own builds its own class by name here, not ``cls``.
        return cls.from_local(inst_data=inst_data, **config_value)

    @classmethod
    def from_local(cls, base_dir: str, inst_data: ConfigurableClassData | None = None):
        if stamped(os.path.join(base_dir, f"{cls.DATABASE}.db"), cls.TABLES):
            return cls(create_db_conn_string(base_dir, cls.DATABASE), inst_data)
        # Dagster creates, stamps and indexes a new database (building ``cls``).
        return super().from_local(base_dir, inst_data)

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with self._engines.transaction(self._database) as conn:
            yield conn

    def dispose(self) -> None:
        super().dispose()
        self._engines.close()


class KeptEngineRunStorage(_OneDatabase, SqliteRunStorage):
    """Dagster's SQLite run storage (``history/runs.db``), one engine for the process."""

    DATABASE = "runs"
    TABLES = ("runs", "instance_info")


class KeptEngineScheduleStorage(_OneDatabase, SqliteScheduleStorage):
    """Dagster's SQLite schedule storage (``schedules/schedules.db``), one engine for the
    process."""

    DATABASE = "schedules"


class KeptEngineEventLogStorage(SqliteEventLogStorage):
    """Dagster's SQLite event log (a database a run, and the index), one engine a
    database for the process."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        # Set before Dagster's constructor, which on a new home already writes the index
        # through ``index_connection``. The timeout is Dagster's: how long a write waits
        # for another process writing the same database.
        self._engines = Engines(timeout=SQLITE_BUSY_TIMEOUT_SECONDS)
        self._set_up: set[str] = set()
        self._set_up_lock = threading.Lock()
        self._new_run_database = NewRunDatabase(base_dir)
        super().__init__(base_dir, inst_data)

    def run_connection(self, run_id: str | None = None):
        return self._database_connection(run_id, partial(super().run_connection, run_id))

    def index_connection(self):
        return self._database_connection(INDEX_DATABASE, super().index_connection)

    def wipe(self) -> None:
        # Dagster deletes the run databases' files: none may stay open, or set up.
        self._engines.close()
        with self._set_up_lock:
            self._set_up.clear()
        super().wipe()

    def dispose(self) -> None:
        super().dispose()
        self._engines.close()

    @contextmanager
    def _database_connection(self, name, dagsters_connection) -> Iterator[Connection]:
        conn_string = self.conn_string_for_shard(name)
        with self._set_up_lock:
            if name not in self._set_up:
                if not stamped(self.path_for_shard(name)):
                    self._set_up_database(name, dagsters_connection)
                self._set_up.add(name)
        with self._engines.transaction(conn_string) as conn:
            yield conn

    def _set_up_database(self, name: str, dagsters_connection) -> None:
        """A new database, as Dagster sets one up: a run's copied from the first that
        this Dagster version set up in the home, when there is one."""
        path = self.path_for_shard(name)
        is_run = name != INDEX_DATABASE
        if is_run and self._new_run_database.copied_to(path):
            return
        # Dagster's own connection creates the tables and stamps them.
        with dagsters_connection():
            pass
        if is_run:
            self._new_run_database.keep(path)


class NewRunDatabase:
    """An empty run database as Dagster sets one up (its tables, WAL, the revision it
    stamps), kept beside the event logs' folder once, then copied for every new run.

    Dagster sets up each new run's database itself, loading every migration script to
    check it and again to stamp it: 60 to 95 ms before a run can start. Kept per
    Dagster version, so a copy is always what the installed Dagster would have made.
    """

    def __init__(self, event_logs_folder: str) -> None:
        history = os.path.dirname(os.path.normpath(event_logs_folder))
        self.path = os.path.join(history, f".new-run-events-dagster-{dagster_version}.db")

    def copied_to(self, database: str) -> bool:
        """Whether ``database`` is now a copy of the kept one (False when none is kept
        or another process made ``database`` meanwhile)."""
        if not os.path.exists(self.path):
            return False
        draft = f"{database}.{os.getpid()}.draft"
        try:
            shutil.copyfile(self.path, draft)
            # Never over a database another process has begun to set up.
            os.link(draft, database)
        except FileExistsError:
            return False
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.remove(draft)
        return True

    def keep(self, database: str) -> None:
        """Keep ``database``, just set up by Dagster, unless something was already
        written to it (a copy must hold nothing of another run). Only a saving: when it
        cannot be kept (a full disk, a database busy), the next run sets its own up."""
        if os.path.exists(self.path):
            return
        draft = f"{self.path}.{os.getpid()}.draft"
        try:
            if _stamped_and_empty_copy(database, draft):
                os.replace(draft, self.path)
        except (sqlite3.Error, OSError):
            pass
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.remove(draft)


def _stamped_and_empty_copy(database: str, copy_path: str) -> bool:
    """Copy ``database`` to ``copy_path`` (SQLite's online backup: consistent even while
    another process writes it); whether the copy has its revision stamped and every
    other table empty."""
    with (
        contextlib.closing(sqlite3.connect(database)) as source,
        contextlib.closing(sqlite3.connect(copy_path)) as copy,
    ):
        source.backup(copy)
        tables = _stamped_tables(copy)
        return tables is not None and all(
            copy.execute(f'SELECT 1 FROM "{table}" LIMIT 1').fetchone() is None
            for table in tables - {"alembic_version"}
        )


def _runs_folder(base_dir: str) -> str:
    return os.path.join(base_dir, "history", "")


def _event_logs_folder(base_dir: str) -> str:
    return os.path.join(base_dir, "history", "runs", "")


def _schedules_folder(base_dir: str) -> str:
    return os.path.join(base_dir, "schedules")


class KeptEngineSqliteStorage(DagsterStorage, ConfigurableClass):
    """The instance's storage in dagster.yaml (``storage: custom``): Dagster's SQLite
    layout under ``base_dir`` (``history/runs.db``, ``history/runs/<run>.db``,
    ``history/runs/index.db``, ``schedules/schedules.db``), the three storages above."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self.base_dir = base_dir
        self._inst_data = inst_data
        self._run_storage = KeptEngineRunStorage.from_local(_runs_folder(base_dir))
        self._event_log_storage = KeptEngineEventLogStorage(_event_logs_folder(base_dir))
        self._schedule_storage = KeptEngineScheduleStorage.from_local(_schedules_folder(base_dir))
        super().__init__()

    @property
    def inst_data(self) -> ConfigurableClassData | None:
        return self._inst_data

    @classmethod
    def config_type(cls):
        return {"base_dir": StringSource}

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        os.makedirs(config_value["base_dir"], exist_ok=True)
        return cls(inst_data=inst_data, **config_value)

    def register_instance(self, instance) -> None:
        super().register_instance(instance)
        for storage in (self._run_storage, self._event_log_storage, self._schedule_storage):
            if not storage.has_instance:
                storage.register_instance(instance)

    @property
    def event_log_storage(self):
        return self._event_log_storage

    @property
    def run_storage(self):
        return self._run_storage

    @property
    def schedule_storage(self):
        return self._schedule_storage

    @property
    def event_storage_data(self) -> ConfigurableClassData:
        return _class_data(KeptEngineEventLogStorage, _event_logs_folder(self.base_dir))

    @property
    def run_storage_data(self) -> ConfigurableClassData:
        return _class_data(KeptEngineRunStorage, _runs_folder(self.base_dir))

    @property
    def schedule_storage_data(self) -> ConfigurableClassData:
        return _class_data(KeptEngineScheduleStorage, _schedules_folder(self.base_dir))

    def dispose(self) -> None:
        self._event_log_storage.dispose()
        self._run_storage.dispose()
        self._schedule_storage.dispose()


def _class_data(cls: type, base_dir: str) -> ConfigurableClassData:
    config = yaml.dump({"base_dir": base_dir}, default_flow_style=False)
    return ConfigurableClassData(cls.__module__, cls.__name__, config)
