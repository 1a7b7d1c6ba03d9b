"""Run the installed `ragproof` command as a user would: a subprocess with its own env."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RAGPROOF = Path(sys.executable).parent / "ragproof"


def cli_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    # Test adapters live under tests/support; the installed script does not see the repo otherwise.
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


def ragproof(
    *args: str, env: dict[str, str] | None = None, timeout: float = 180
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(RAGPROOF), *args],
        cwd=REPO,
        env=env or cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_json(dataset: Path, config: Path, env: dict[str, str] | None = None) -> dict:
    """`ragproof run --json` on a dataset and config that must succeed: its JSON reply."""
    done = ragproof("run", "--dataset", str(dataset), "--config", str(config), "--json", env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def ragproof_popen(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [str(RAGPROOF), *args],
        cwd=REPO,
        env=env or cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
