"""A team's own components-ready Dagster project, written by hand (``create-dagster`` and
``uv sync`` need the network): its own ``vector_index`` asset and ragproof suites in
``defs/``, beside ragproof's own code location in one workspace."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import FIXTURES, REPO
from tests.support.cli import cli_env

PACKAGE = "my_project"
BIN = Path(sys.executable).parent
DG = BIN / "dg"
DAGSTER = BIN / "dagster"
DAEMON = BIN / "dagster-daemon"

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
        for name in ("cases.jsonl", "outputs.jsonl", "ragproof.toml"):
            shutil.copy(FIXTURES / "recorded" / name, target / name)
        (target / "defs.yaml").write_text(textwrap.dedent(yaml))
    return root


def defs_folder(root: Path) -> Path:
    return root / "src" / PACKAGE / "defs"


def write_workspace(root: Path) -> Path:
    """ragproof's own code location and the project's, in one workspace."""
    path = root / "workspace.yaml"
    path.write_text(
        "load_from:\n"
        "  - python_module:\n"
        "      module_name: ragproof_assets.definitions\n"
        "      location_name: ragproof\n"
        f"      working_directory: {REPO}\n"
        "  - python_module:\n"
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
