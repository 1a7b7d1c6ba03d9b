"""Every runnable command the docs show runs, from a scratch folder, and prints
what the docs say it prints.

The convention (docs/README and docs/*.md):

- a fenced block tagged ``console`` is run: each line starting with ``$ `` is one
  command (a trailing backslash continues it), run by bash in the scratch folder;
  the lines after it, up to the next ``$ `` line, are its output. ``ragproof``
  (or ``.venv/bin/ragproof``) is this checkout's command. A line ``...`` stands for
  any lines; run ids and timestamps are compared as placeholders;
- a fenced block whose tag carries ``file=PATH`` (```` ```toml file=trec/ragproof.toml ````)
  is a file the reader writes: it is written at PATH, relative to the scratch folder,
  before the commands after it run.

Only commands that need no judge and no network are tagged ``console``. The scratch
folder holds copies of ``data/`` and ``tests/fixtures/``, and its own store and
Dagster home, so the docs' commands write nothing into the repository.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.cli import cli_env, ragproof
from tests.support.snapshot import tree_bytes

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_RUN_ID = re.compile(r"\b\d{8}T\d{6}Z-[0-9a-f]{6}\b")
_TIME = re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:\+00:00|Z)?")
ANY_LINES = "..."


@dataclass(frozen=True)
class Command:
    line: int  # of the doc, for the failure message
    text: str
    expected: tuple[str, ...]


@dataclass(frozen=True)
class File:
    path: str
    content: str


def doc_steps(text: str) -> list[Command | File]:
    """The doc's commands and files, in order."""
    steps: list[Command | File] = []
    for fence in _FENCE.finditer(text):
        info, body = fence.group(1).split(), fence.group(2)
        first_line = text.count("\n", 0, fence.start(2)) + 1
        files = [word.removeprefix("file=") for word in info if word.startswith("file=")]
        if files:
            steps.append(File(files[0], body))
        elif info[:1] == ["console"]:
            steps += _commands(body.splitlines(), first_line)
    return steps


def _commands(lines: list[str], first_line: int) -> list[Command]:
    commands: list[Command] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            raise ValueError(f"line {first_line + i}: output before any command")
        start, text = i, lines[i][2:]
        while text.endswith("\\"):
            i += 1
            text = text[:-1] + lines[i].strip()
        i += 1
        output_start = i
        while i < len(lines) and not lines[i].startswith("$ "):
            i += 1
        commands.append(Command(first_line + start, text, tuple(lines[output_start:i])))
    return commands


def _normal(line: str) -> str:
    return _TIME.sub("TIME", _RUN_ID.sub("RUN_ID", line)).rstrip()


def matches(expected: tuple[str, ...], actual: list[str]) -> bool:
    """``actual`` is ``expected`` line for line, an ``...`` line standing for any lines."""
    expected_lines = [_normal(line) for line in expected]
    actual_lines = [_normal(line) for line in actual]
    pattern = "".join(
        r"(?:[^\n]*\n)*?" if line == ANY_LINES else re.escape(line) + r"\n"
        for line in expected_lines
    )
    return re.fullmatch(pattern, "".join(line + "\n" for line in actual_lines)) is not None


def _scratch(root: Path) -> Path:
    work = root / "work"
    ignore = shutil.ignore_patterns("store", "dagster", "__pycache__")
    shutil.copytree(REPO / "data", work / "data", ignore=ignore)
    shutil.copytree(REPO / "tests" / "fixtures", work / "tests" / "fixtures", ignore=ignore)
    return work


# Anything bash would read as more than words: such a command line runs in bash.
_SHELL_SYNTAX = re.compile(r"[|&;<>()$`\\\"'*?~{}\[\]#=]")


def _run(command: Command, work: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The command line as bash runs it. One that is only `ragproof` and plain words
    runs as ``tests.support.cli.ragproof`` runs a command (the same script, forked from
    a process that has imported it): bash would only have split it into those words."""
    text = re.sub(r"(?<![\w/])\.venv/bin/", "", command.text)
    words = text.split()
    if words[0] == "ragproof" and not _SHELL_SYNTAX.search(text):
        # Without the PATH that lets bash find `ragproof`: the script is named directly.
        return ragproof(*words[1:], env={**env, "PATH": os.environ["PATH"]}, cwd=work, timeout=300)
    return subprocess.run(
        ["bash", "-c", text], cwd=work, env=env, capture_output=True, text=True, timeout=300
    )


RUNNABLE = [doc for doc in DOCS if doc_steps(doc.read_text(encoding="utf-8"))]


def test_the_docs_have_runnable_commands():
    assert {doc.name for doc in RUNNABLE} >= {"README.md", "importing.md"}


@pytest.mark.slow
@pytest.mark.parametrize("doc", RUNNABLE, ids=lambda p: p.name)
def test_a_docs_commands_print_what_it_shows(doc, tmp_path):
    work = _scratch(tmp_path)
    fixtures = tree_bytes(work / "tests")
    env = cli_env(
        RAGPROOF_STORE=str(tmp_path / "store"),
        DAGSTER_HOME=str(tmp_path / "dagster"),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    )
    for step in doc_steps(doc.read_text(encoding="utf-8")):
        if isinstance(step, File):
            (work / step.path).parent.mkdir(parents=True, exist_ok=True)
            (work / step.path).write_text(step.content, encoding="utf-8")
            continue
        done = _run(step, work, env)
        where = f"{doc.name}:{step.line}: {step.text}"
        assert done.returncode == 0, f"{where}\n{done.stderr}"
        actual = (done.stdout + done.stderr).splitlines()
        assert matches(step.expected, actual), f"{where}\nprinted:\n" + "\n".join(actual)
    # Commands run where the docs say, never inside the fixtures.
    assert tree_bytes(work / "tests") == fixtures
