"""A team's own components-ready Dagster project, written by hand (``create-dagster`` and
``uv sync`` need the network): its own ``vector_index`` asset and ragproof suites in
``defs/``, beside ragproof's own code location in one workspace."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

from tests.conftest import FIXTURES, REPO
from tests.support.cli import cli_env

PACKAGE = "my_project"
BIN = Path(sys.executable).parent
DG = BIN / "dg"
DAGSTER = BIN / "dagster"
DAEMON = BIN / "dagster-daemon"
WEBSERVER = BIN / "dagster-webserver"
# How long a code server or the webserver may take to start on a loaded machine.
STARTUP_S = 240

PYPROJECT = f"""\
[project]
name = "{PACKAGE}"
version = "0.1.0"
requires-python = ">=3.11"
dependencies = ["ragproof"]

[tool.dg]
directory_type = "project"

[tool.dg.project]
root_module = "{PACKAGE}"
"""

# The project's definitions: every component under defs/, run in one process per run
# (the project's own choice of executor, as any Dagster project makes it).
DEFINITIONS = """\
from pathlib import Path

import dagster as dg


@dg.definitions
def defs():
    return dg.Definitions.merge(
        dg.load_from_defs_folder(path_within_project=Path(__file__).parent),
        dg.Definitions(executor=dg.in_process_executor),
    )
"""

VECTOR_INDEX = '''\
import dagster as dg


@dg.asset
def vector_index() -> None:
    """The project's own index: what the suites evaluate is built from it."""
'''


RECORDED_FILES = (
    "cases.jsonl",
    "outputs.jsonl",
    "ragproof.toml",
    "outputs_worse.jsonl",
    "ragproof_worse.toml",
)


def write_project(root: Path, suites: dict[str, str]) -> Path:
    """The project at ``root`` (named ``my_project``) with each suite's ``defs.yaml``
    under ``defs/<folder>/``; the recorded fixture's dataset, outputs and config are
    copied beside each one, so its relative paths are from its own folder."""
    package = root / "src" / PACKAGE
    (package / "defs").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (package / "__init__.py").write_text("")
    (package / "definitions.py").write_text(DEFINITIONS)
    (package / "defs" / "__init__.py").write_text("")
    (package / "defs" / "index.py").write_text(VECTOR_INDEX)
    for folder, yaml in suites.items():
        target = package / "defs" / folder
        target.mkdir()
        for name in RECORDED_FILES:
            shutil.copy(FIXTURES / "recorded" / name, target / name)
        (target / "defs.yaml").write_text(textwrap.dedent(yaml))
    return root


def defs_folder(root: Path) -> Path:
    return root / "src" / PACKAGE / "defs"


def write_workspace(root: Path, *, with_ragproof: bool = True) -> Path:
    """The project's code location, and ragproof's own beside it, in one workspace."""
    path = root / "workspace.yaml"
    ragproof = (
        "  - python_module:\n"
        "      module_name: ragproof_assets.definitions\n"
        "      location_name: ragproof\n"
        f"      working_directory: {REPO}\n"
    )
    path.write_text(
        "load_from:\n" + (ragproof if with_ragproof else "") + "  - python_module:\n"
        f"      module_name: {PACKAGE}.definitions\n"
        f"      location_name: {PACKAGE}\n"
        f"      working_directory: {root / 'src'}\n"
    )
    return path


def project_env(root: Path, **extra: str) -> dict[str, str]:
    """The environment the project's tools run in: the project's package importable, as
    an editable install would make it."""
    env = cli_env(**extra)
    env["PYTHONPATH"] = f"{root / 'src'}:{env['PYTHONPATH']}"
    return env


def dg_command(root: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """The real ``dg``, run in the project's folder."""
    return subprocess.run(
        [str(DG), *args],
        cwd=root,
        env=project_env(root),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def new_home(path: Path) -> Path:
    """A Dagster home, its databases made before any process shares it (the daemon, its
    code servers and a materialization would otherwise race to create them)."""
    path.mkdir(parents=True)
    (path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with dg.DagsterInstance.from_config(str(path)) as instance:
        instance.get_runs(limit=1)
    return path


@contextmanager
def webserver(workspace: Path, env: dict[str, str], log: Path) -> Iterator[str]:
    """``dagster-webserver`` on a free loopback port, serving ``workspace``; its URL. Its
    whole process group is stopped afterwards."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with log.open("w") as out:
        process = subprocess.Popen(
            [str(WEBSERVER), "-w", str(workspace), "-h", "127.0.0.1", "-p", str(port)],
            cwd=workspace.parent,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            assert process.poll() is None, log.read_text()[-3000:]
            try:
                with urllib.request.urlopen(f"{url}/server_info", timeout=5) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(1)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
