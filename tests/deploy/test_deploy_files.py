"""docs/deploy.md shows the deployment's files as they are: every YAML block of the doc is
one of deploy/'s files, whole, named just above it, and every file of deploy/ is shown.
The deployment tests read those same files (tests/deploy/)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO
from tests.deploy.conftest import DEPLOY

DOC = REPO / "docs" / "deploy.md"
_BLOCK = re.compile(r"```yaml\n(.*?)```", re.DOTALL)
_FILE = re.compile(r"deploy/[\w.-]+\.yaml")

pytestmark = pytest.mark.deployment


def _shown() -> list[tuple[str | None, str]]:
    """Each YAML block of the doc, and the deploy/ file the paragraph just above it
    names last (None when it names none)."""
    text = DOC.read_text(encoding="utf-8")
    shown = []
    for block in _BLOCK.finditer(text):
        before = text[: block.start()].rstrip("\n")
        paragraph = before[before.rfind("\n\n") + 2 :]
        names = _FILE.findall(paragraph)
        shown.append((names[-1] if names else None, block.group(1)))
    return shown


def test_every_yaml_block_of_the_doc_is_a_deploy_file_whole():
    for name, block in _shown():
        assert name is not None, f"a YAML block names no deploy/ file above it:\n{block}"
        assert block == (REPO / name).read_text(encoding="utf-8"), name


def test_every_deploy_file_is_shown():
    assert sorted({name for name, _ in _shown()}) == sorted(
        f"deploy/{path.name}" for path in DEPLOY.glob("*.yaml")
    )
