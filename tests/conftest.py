"""Shared test set-up: every test gets its own store and Dagster home, and no judge
unless it asks for one, whatever the developer's shell exports."""

from __future__ import annotations

import compileall
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.support import cpu_usage
from tests.support.scheduling import UNITS_DIR_KEY, UnitScheduling, save_durations, write_units

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"


_MIN_SCRATCH_BYTES = 4 * 2**30  # the suite writes well under 1 GB at a time


def _scratch_in_memory() -> None:
    """Put the tests' scratch space (tmp_path, and TMPDIR for every subprocess) on
    a RAM-backed tmpfs when the machine has one.

    The tests create thousands of small SQLite, DuckDB and Parquet files, and
    Dagster's SQLite event log opens and closes a connection per event: on a disk
    each close waits for a sync, about 1.5 s of idle wall time per CLI run here.
    On tmpfs the syncs cost nothing. Only where the tests keep their scratch files
    changes; what the product does is the same. Set TMPDIR yourself to choose.
    This runs when pytest imports this file, before it picks its base temp folder.
    """
    shm = Path("/dev/shm")
    if "TMPDIR" in os.environ or not (shm.is_dir() and os.access(shm, os.W_OK | os.X_OK)):
        return
    # A container's /dev/shm may be tiny (Docker's default is 64 MB): disk is safer then.
    free = os.statvfs(shm)
    if free.f_bavail * free.f_frsize < _MIN_SCRATCH_BYTES:
        return
    os.environ["TMPDIR"] = str(shm)
    tempfile.tempdir = None  # forget a temp folder already looked up


_scratch_in_memory()

# Haystack decides on telemetry when first imported; tests/core/adapters/test_haystack.py
# imports it at collection. Set for the whole session here, before tests/support/cli.py
# records the environment its preloaded command server forks with: a variable first set
# during collection makes every later command differ from that record, so the whole
# suite would quietly exec every command instead of forking it.
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

# The repository's own packages, which every `ragproof` subprocess imports.
_COMPILED_PACKAGES = ("ragproof_core", "ragproof_assets", "ragproof_cli", "ragproof_serve", "tests")


def _compile_repository() -> None:
    """Write the bytecode of the repository's own modules once, before any test starts.

    Where the environment sets PYTHONDONTWRITEBYTECODE (this machine's does), Python
    never caches them, so each of the suite's hundreds of `ragproof` subprocesses, and
    each Dagster step process, compiled every ragproof module it imports from source
    again: 0.35 s of CPU for `ragproof --help`, more for a run. An installed package
    comes with its bytecode; the repository's checkout does not. compileall writes it
    whatever that variable says; every process still reads the source when it is newer.
    """
    for package in _COMPILED_PACKAGES:
        compileall.compile_dir(REPO / package, quiet=1, workers=1)


_JUDGE_VARS = (
    "RAGPROOF_JUDGE_MODEL",
    "RAGPROOF_JUDGE_API_BASE",
    "RAGPROOF_JUDGE_INPUT_COST_PER_MTOK",
    "RAGPROOF_JUDGE_OUTPUT_COST_PER_MTOK",
    "RAGPROOF_MAX_COST_USD",
    "RAGPROOF_JUDGE_MODE",
    "RAGPROOF_JUDGE_RPM",
)


_UNITS_DIR = pytest.StashKey[Path]()
_SCHEDULER = pytest.StashKey[UnitScheduling]()


def pytest_addoption(parser):
    parser.addoption(
        "--update-test-durations",
        action="store_true",
        help="with -n N: update tests/durations.json, which the scheduler weighs tests by, "
        "with the seconds each test of this run took",
    )
    cpu_usage.add_option(parser)


def pytest_configure(config):
    """In the controller (or the one process without -n): the repository's bytecode;
    with ``-n N``, a folder where the workers describe their tests. In every pytest
    process: ``--cpu-report``'s recorder, when asked for."""
    cpu_usage.register(config)
    if hasattr(config, "workerinput"):
        return
    _compile_repository()
    if config.getoption("dist", "no") != "no":
        config.stash[_UNITS_DIR] = Path(tempfile.mkdtemp(prefix="ragproof-test-units-"))


def pytest_unconfigure(config):
    if _UNITS_DIR in config.stash:
        shutil.rmtree(config.stash[_UNITS_DIR], ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    node.workerinput[UNITS_DIR_KEY] = str(node.config.stash[_UNITS_DIR])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist load`` (what ``-n N`` means unless told otherwise) by units: see
    tests/support/scheduling.py. Any other ``--dist`` is xdist's own."""
    if config.getvalue("dist") != "load" or _UNITS_DIR not in config.stash:
        return None
    config.stash[_SCHEDULER] = UnitScheduling(config, config.stash[_UNITS_DIR], log)
    return config.stash[_SCHEDULER]


def pytest_sessionfinish(session):
    config = session.config
    if config.getoption("update_test_durations") and _SCHEDULER in config.stash:
        save_durations(config.stash[_SCHEDULER].durations)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session):
    """In an xdist worker: tell the controller's scheduler each test's group and weight,
    before xdist's own hook sends it the collected test ids."""
    workerinput = getattr(session.config, "workerinput", None)
    if workerinput and UNITS_DIR_KEY in workerinput:
        write_units(session.items, Path(workerinput[UNITS_DIR_KEY]), workerinput["workerid"])


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path_factory, monkeypatch):
    for name in _JUDGE_VARS:
        monkeypatch.delenv(name, raising=False)
    # LiteLLM must never fetch its price map from the network, in any test.
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("RAGPROOF_STORE", str(tmp_path_factory.mktemp("store")))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path_factory.mktemp("dagster_home")))


@pytest.fixture
def store_path() -> Path:
    return Path(os.environ["RAGPROOF_STORE"])


@pytest.fixture(scope="session")
def s3_server():
    """One moto S3 server on loopback per test session (per xdist worker)."""
    from tests.support.s3_server import MotoServer

    server = MotoServer().start()
    yield server
    server.stop()


@pytest.fixture
def s3_store(s3_server, monkeypatch) -> str:
    """A fresh bucket; RAGPROOF_STORE and the AWS variables point at it. Returns the URL."""
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    url = f"s3://{s3_server.new_bucket()}/store"
    monkeypatch.setenv("RAGPROOF_STORE", url)
    return url


@pytest.fixture(params=["local", "s3"])
def any_store(request, monkeypatch):
    """The test's store, once on local disk and once in a fresh S3 bucket (moto)."""
    from tests.support.stores import StoreUnderTest

    if request.param == "local":
        return StoreUnderTest("local", os.environ["RAGPROOF_STORE"])
    return StoreUnderTest("s3", request.getfixturevalue("s3_store"))
