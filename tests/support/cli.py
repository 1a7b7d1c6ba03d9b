"""Run the installed `ragproof` command as a user would: a subprocess with its own env."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.preloaded_cli import ForkedProcess, PreloadedCommands

REPO = Path(__file__).resolve().parents[2]
RAGPROOF = Path(sys.executable).parent / "ragproof"
# Set (to anything) to run every command by exec, as before tests/support/preloaded_cli.py.
EXEC_ONLY_ENV = "RAGPROOF_TESTS_EXEC_ONLY"


def cli_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    # Test adapters live under tests/support; the installed script does not see the repo otherwise.
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


# The environment as collection found it, before any test set or removed a variable:
# the server imports with it, whichever test starts it.
_COLLECTION_ENV = cli_env()


@functools.cache
def preloaded_commands() -> PreloadedCommands:
    """This pytest process's server of forked commands, started on first use."""
    return PreloadedCommands(RAGPROOF, REPO, _COLLECTION_ENV)


def ragproof(
    *args: str, env: dict[str, str] | None = None, timeout: float = 180, cwd: Path = REPO
) -> subprocess.CompletedProcess:
    """The command, run to its end in ``cwd``: forked from a process that has imported
    the command line where its environment allows (tests/support/preloaded_cli.py),
    else exec'd."""
    env = env or cli_env()
    argv = [str(RAGPROOF), *args]
    if EXEC_ONLY_ENV not in os.environ and preloaded_commands().serves(env):
        return preloaded_commands().run(argv, env, cwd, timeout)
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_json(dataset: Path, config: Path, env: dict[str, str] | None = None) -> dict:
    """`ragproof run --json` on a dataset and config that must succeed: its JSON reply."""
    done = ragproof("run", "--dataset", str(dataset), "--config", str(config), "--json", env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def ragproof_popen(
    *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen | ForkedProcess:
    """The command started, not waited for (a test signals, kills or reads it while it
    runs): forked as ``ragproof()`` forks, where its environment allows, else exec'd."""
    env = env or cli_env()
    argv = [str(RAGPROOF), *args]
    if EXEC_ONLY_ENV not in os.environ and preloaded_commands().serves(env):
        return preloaded_commands().popen(argv, env, REPO)
    return ragproof_exec_popen(*args, env=env)


def ragproof_exec_popen(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """The command exec'd as a fresh process, for a test of what only a fresh process shows."""
    return subprocess.Popen(
        [str(RAGPROOF), *args],
        cwd=REPO,
        env=env or cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
