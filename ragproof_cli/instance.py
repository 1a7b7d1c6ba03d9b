"""The persistent Dagster instance the command line records its runs in, so
every command-line run also shows in the UI."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

DEFAULT_DAGSTER_HOME = Path("data/dagster_home")

# Telemetry off: ragproof runs on machines without internet and sends nothing anywhere.
_DAGSTER_YAML = "telemetry:\n  enabled: false\n"
_LOCK_NAME = ".ragproof-instance.lock"


def ensure_dagster_home() -> Path:
    """Use $DAGSTER_HOME, defaulting under data/; create it with telemetry off."""
    home = Path(os.environ.get("DAGSTER_HOME") or DEFAULT_DAGSTER_HOME).resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(_DAGSTER_YAML, encoding="utf-8")
    os.environ["DAGSTER_HOME"] = str(home)
    return home


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
