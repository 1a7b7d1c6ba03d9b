"""The deployment tests' shared parts: Debian's PostgreSQL (and Redis) on loopback, and a
Dagster home whose dagster.yaml is deploy/dagster.yaml itself, the file docs/deploy.md
shows (tests/deploy/test_deploy_files.py keeps the two equal)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from tests.conftest import REPO
from tests.support.services import PostgresDatabase, PostgresServer, RedisServer

DEPLOY = REPO / "deploy"
# Long enough for a loaded machine (load 10 to 20) to finish a few small runs.
WAIT_S = 600


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    """One PostgreSQL server a test module (each test takes a database of its own)."""
    with PostgresServer() as server:
        yield server


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@dataclass(frozen=True)
class PostgresHome:
    """A Dagster home on deploy/dagster.yaml, its database, and the variables both need."""

    path: Path
    database: PostgresDatabase

    def env(self) -> dict[str, str]:
        return {"DAGSTER_HOME": str(self.path), **self.database.env()}


def postgres_home(server: PostgresServer, folder: Path) -> PostgresHome:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(DEPLOY / "dagster.yaml", folder / "dagster.yaml")
    return PostgresHome(folder, server.new_database())


@pytest.fixture
def pg_home(postgres, tmp_path, monkeypatch) -> PostgresHome:
    """A new database, and this process pointed at it (DAGSTER_HOME and the variables)."""
    home = postgres_home(postgres, tmp_path / "dagster_home")
    for name, value in home.env().items():
        monkeypatch.setenv(name, value)
    return home


def wait_until(found: Callable[[], object], what: str, timeout_s: float = WAIT_S) -> object:
    """Poll ``found`` until it returns something true; that value."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"gave up waiting for {what} after {timeout_s:.0f} s")


def events_of(instance: dg.DagsterInstance, run_id: str, kind: dg.DagsterEventType) -> list:
    return [e for e in instance.all_logs(run_id, of_type=kind)]
