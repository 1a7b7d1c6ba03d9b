"""The project's own documentation stays true to the code: every test a doc names exists."""

from __future__ import annotations

import ast
import re

import pytest

from tests.conftest import REPO

DOCS = sorted((REPO / "docs").glob("*.md"))
# Docs name tests as tests/core/x/test_y.py::name or, inside a section about one
# area, just test_y.py::name; both must point at one existing test.
_REFERENCE = re.compile(r"((?:[\w]+/)*test_\w+\.py)::(\w+)")
TEST_FILES = sorted((REPO / "tests").rglob("test_*.py"))


def _test_names(path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_test_a_doc_names_exists(doc):
    missing = []
    for file, name in _REFERENCE.findall(doc.read_text(encoding="utf-8")):
        candidates = [p for p in TEST_FILES if p.as_posix().endswith("/" + file)]
        if not any(name in _test_names(p) for p in candidates):
            missing.append(f"{file}::{name}")
    assert missing == []


def test_metrics_doc_covers_every_metric():
    from ragproof_core.metrics.registry import METRIC_NAMES

    text = (REPO / "docs" / "metrics.md").read_text(encoding="utf-8")
    assert [m for m in METRIC_NAMES if m not in text] == []


def test_the_metric_table_is_the_registry():
    from ragproof_core.metrics.registry import registry_markdown

    text = (REPO / "docs" / "metrics.md").read_text(encoding="utf-8")
    begin, end = "<!-- registry table: begin -->\n", "\n<!-- registry table: end -->"
    table = text[text.index(begin) + len(begin) : text.index(end)]
    assert table == registry_markdown()
