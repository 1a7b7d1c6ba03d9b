"""The suite's commands are forked from the preloaded server where they can be, and a
forked command behaves as the exec'd one: the same output, exit code and signals."""

from __future__ import annotations

import signal
import subprocess

import pytest

from tests.support.cli import (
    RAGPROOF,
    REPO,
    cli_env,
    ragproof,
    ragproof_exec_popen,
    ragproof_popen,
)
from tests.support.preloaded_cli import ForkedProcess, PreloadedCommands


@pytest.fixture
def own_server():
    """A server of this test's own, recorded with another store and Dagster home than the
    test's: what the worker's shared server met before (a test that left something
    behind in this process) is not what these tests are about."""
    server = PreloadedCommands(
        RAGPROOF, REPO, cli_env(RAGPROOF_STORE="/recorded/store", DAGSTER_HOME="/recorded/home")
    )
    try:
        yield server
    finally:
        server.stop()


def test_a_tests_own_store_and_dagster_home_still_fork(own_server):
    # conftest.py gives every test its own RAGPROOF_STORE and DAGSTER_HOME (forkable)
    # after the server's environment was recorded (TMPDIR included): a command in
    # that environment must fork, or the whole suite quietly pays every import again.
    assert own_server.serves(cli_env())
    with own_server.popen([str(RAGPROOF), "--help"], cli_env(), REPO) as proc:
        assert proc.communicate(timeout=120)[0].startswith("usage: ragproof")
    assert proc.returncode == 0
    assert not own_server.serves(cli_env(RAGPROOF_EXECUTOR="multiprocess"))


def test_a_forked_command_prints_and_exits_as_the_execd_one(own_server):
    for args in (["--help"], ["frobnicate"]):
        forked = own_server.popen([str(RAGPROOF), *args], cli_env(), REPO)
        execd = ragproof_exec_popen(*args)
        assert isinstance(forked, ForkedProcess) and isinstance(execd, subprocess.Popen)
        assert forked.communicate(timeout=120) == execd.communicate(timeout=120)
        assert forked.returncode == execd.returncode == (0 if args == ["--help"] else 1)
        assert forked.poll() == forked.returncode


def test_a_forked_command_is_signalled_and_waited_for_as_popen(store_path):
    # `ragproof serve` runs until stopped; its first line says where it listens.
    proc = ragproof_popen("serve", "--port", "0")
    line = proc.stdout.readline()
    assert line.startswith("ragproof: serving"), proc.communicate(timeout=30)
    assert proc.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0.1)
    proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, err
    proc.kill()  # after its end: nothing to do, as Popen
    assert ragproof("--help").returncode == 0
