"""The persistent Dagster instance the command line records its runs in, so
every command-line run also shows in the UI."""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import yaml

# Dagster's description of an instance from its dagster.yaml, read without opening it.
from dagster._core.instance.ref import InstanceRef

DEFAULT_DAGSTER_HOME = Path("data/dagster_home")

# The compute log manager of the homes ragproof creates (ragproof_assets/instance/compute_logs.py).
_COMPUTE_LOGS_MODULE = "ragproof_assets.instance.compute_logs"
_COMPUTE_LOGS_CLASS = "MirroredComputeLogManager"
# Where Dagster keeps a home's compute logs when its dagster.yaml names no manager.
_COMPUTE_LOGS_FOLDER = "storage"
# Dagster's own SQLite storages, as its dagster.yaml documentation names them: a run's
# events go to one consolidated event log (history/event_log.db) instead of a database
# of their own (history/runs/<run>.db, about 330 KB a 50-case run, docs/architecture.md).
_DAGSTER_STORAGES = (
    ("run_storage", "dagster._core.storage.runs", "SqliteRunStorage", "history"),
    (
        "event_log_storage",
        "dagster._core.storage.event_log",
        "ConsolidatedSqliteEventLogStorage",
        "history",
    ),
    ("schedule_storage", "dagster._core.storage.schedules", "SqliteScheduleStorage", "schedules"),
)
# What ragproof named as a home's storage from 2026-12-06 to 2026-12-07: Dagster's
# SQLite layout (a database a run) opened by classes of its own, since removed.
_REMOVED_STORAGE = {
    "custom": {
        "module": "ragproof_assets.instance.sqlite_storage",
        "class": "KeptEngineSqliteStorage",
    }
}
_LOCK_NAME = ".ragproof-instance.lock"
# What Dagster opens where dagster.yaml names nothing (the secrets loader, the
# definitions state storage) and what its SQLite migrations import when they are checked.
_OPENED_BY_DEFAULT = (
    "dagster._core.secrets.env_file",
    "dagster._core.storage.defs_state.blob_storage_state_storage",
    "dagster._core.storage.migration.utils",
    "upath.implementations.local",
)


def use_dagster_home() -> Path:
    """Use $DAGSTER_HOME, defaulting under data/, for this process and those it starts;
    nothing is created yet."""
    home = Path(os.environ.get("DAGSTER_HOME") or DEFAULT_DAGSTER_HOME).resolve()
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def dagster_yaml(home: Path) -> str:
    """The dagster.yaml of a home ragproof creates: telemetry off (ragproof runs on
    machines without internet and sends nothing anywhere); the local compute log
    manager's files, copied to the terminal by a thread instead of four processes a
    step; Dagster's own SQLite run and schedule storages and its consolidated SQLite
    event log, every run's events in one database."""
    settings = _compute_logs_settings(home)
    for key, module, cls, folder in _DAGSTER_STORAGES:
        settings[key] = {"module": module, "class": cls, "config": {"base_dir": str(home / folder)}}
    return yaml.safe_dump(settings, sort_keys=False)


def run_database_dagster_yaml(home: Path) -> str:
    """The dagster.yaml given a home an earlier ragproof set up: Dagster's own SQLite
    storage (``storage: sqlite``) over the files already there, a database a run, so
    every run and event it holds stays readable."""
    settings = {**_compute_logs_settings(home), "storage": {"sqlite": {"base_dir": str(home)}}}
    return yaml.safe_dump(settings, sort_keys=False)


def _compute_logs_settings(home: Path) -> dict:
    return {
        "telemetry": {"enabled": False},
        "compute_logs": {
            "module": _COMPUTE_LOGS_MODULE,
            "class": _COMPUTE_LOGS_CLASS,
            "config": {"base_dir": str(home / _COMPUTE_LOGS_FOLDER)},
        },
    }


def earlier_dagster_yamls(home: Path) -> tuple[str, ...]:
    """What earlier versions of ragproof wrote into a new home's dagster.yaml: a file
    still exactly one of these was never edited, and is brought up to date."""
    compute_logs = _compute_logs_settings(home)
    storage = {
        name: {**value, "config": {"base_dir": str(home)}}
        for name, value in _REMOVED_STORAGE.items()
    }
    return (
        "telemetry:\n  enabled: false\n",
        yaml.safe_dump(compute_logs, sort_keys=False),
        yaml.safe_dump({**compute_logs, "storage": storage}, sort_keys=False),
    )


def ensure_dagster_home() -> Path:
    """Use $DAGSTER_HOME, defaulting under data/; give it ragproof's dagster.yaml
    (``dagster_yaml``) unless it has one of its own: one that is still exactly what an
    earlier ragproof wrote is replaced, by Dagster's storage over the files it holds
    (``run_database_dagster_yaml``)."""
    home = use_dagster_home()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        _replace(config, dagster_yaml(home))
    elif config.read_text(encoding="utf-8") in earlier_dagster_yamls(home):
        _replace(config, run_database_dagster_yaml(home))
    return home


def _replace(config: Path, text: str) -> None:
    """Write ``config`` whole, never in place: another process opening the instance
    meanwhile (a second run, the UI) reads the old file or the new, never half of one.
    Named per process (and made with the umask's permissions, as any file is)."""
    draft = config.with_name(f".dagster.yaml.{os.getpid()}")
    draft.write_text(text, encoding="utf-8")
    os.replace(draft, config)


def instance_modules(home: Path) -> list[str]:
    """The modules of the instance's storages, run launcher and coordinator: what every
    process opening the instance imports first (SQLite's storages bring SQLAlchemy and
    Alembic, hundreds of modules). Read from its dagster.yaml; nothing is created."""
    if (home / "dagster.yaml").exists():
        ref = InstanceRef.from_dir(str(home))
    else:
        # Not created yet: read the dagster.yaml ensure_dagster_home will write.
        with tempfile.TemporaryDirectory() as future:
            (Path(future) / "dagster.yaml").write_text(dagster_yaml(home), encoding="utf-8")
            ref = InstanceRef.from_dir(future)
    parts = (
        ref.local_artifact_storage_data,
        ref.storage_data,
        ref.run_storage_data,
        ref.event_storage_data,
        ref.schedule_storage_data,
        ref.compute_logs_data,
        ref.scheduler_data,
        ref.run_coordinator_data,
        ref.run_launcher_data,
        ref.secrets_loader_data,
        ref.defs_state_storage_data,
        ref.custom_instance_class_data,
    )
    named = [part.module_name for part in parts if part is not None]
    return list(dict.fromkeys([*named, *_OPENED_BY_DEFAULT]))


@contextmanager
def instance_setup_lock(home: Path) -> Iterator[None]:
    """Serialise the first touches of the instance across processes.

    Two `ragproof run` processes starting on a fresh DAGSTER_HOME would both
    create Dagster's SQLite tables and one can fail ("UNIQUE constraint failed:
    alembic_version"); once the tables exist, concurrent runs are safe.
    """
    with open(home / _LOCK_NAME, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def open_instance_with_partition(partitions_def_name: str, partition_key: str):
    """The persistent instance, with ``partition_key`` added to the dynamic partitions."""
    home = ensure_dagster_home()
    with instance_setup_lock(home):
        instance = dg.DagsterInstance.get()
        instance.add_dynamic_partitions(partitions_def_name, [partition_key])
        # Creates the run storage's tables too, still under the lock.
        instance.get_runs(limit=1)
    return instance
