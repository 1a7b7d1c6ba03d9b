"""DAGSTER_HOME on a disk that cannot take a write (CONTRACT section 29), through the
installed command: a full tmpfs and a read-only bind mount each end `ragproof run` with
exit 5 and one line naming DAGSTER_HOME's files and the error, never exit 3. Dagster's
stock SQLite storages are what is on main (the deployment issue's instance)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.assets.expected import RUN_ARGS
from tests.support.cli import cli_env, ragproof
from tests.support.mounts import fill, read_only, tmpfs


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[Path]:
    """A 3 MB tmpfs (skipped where mounting is not allowed)."""
    with tmpfs(tmp_path / "disk", "3m") as disk:
        yield disk


def _assert_dagster_home_fault(done, error: str) -> None:
    assert done.returncode == 5, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("ragproof: DAGSTER_HOME: "), line
    assert error in line


def test_a_full_dagster_home_is_exit_5_naming_its_files(mounted: Path, tmp_path: Path) -> None:
    env = cli_env(RAGPROOF_STORE=str(tmp_path / "store"), DAGSTER_HOME=str(mounted / "home"))
    first = ragproof(*RUN_ARGS, env=env)
    assert first.returncode == 0, first.stderr
    fill(mounted)
    done = ragproof(*RUN_ARGS, env=env)
    _assert_dagster_home_fault(done, "history/runs.db")


def test_a_read_only_dagster_home_is_exit_5_naming_its_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = cli_env(RAGPROOF_STORE=str(tmp_path / "store"), DAGSTER_HOME=str(home))
    first = ragproof(*RUN_ARGS, env=env)
    assert first.returncode == 0, first.stderr
    with read_only(home, tmp_path / "ro") as mount:
        env["DAGSTER_HOME"] = str(mount)
        ran = ragproof(*RUN_ARGS, env=env)
    _assert_dagster_home_fault(ran, "Read-only file system")
