"""Reads the metric fixture files in tests/fixtures/metrics/ into model objects.

Each JSONL line names the test that checks it (``"test"``), so a test runs
exactly its own lines and every line is owned by a test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ragproof_core.model import Answer, Chunk

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "metrics"


def load_jsonl(name: str) -> list[dict[str, Any]]:
    path = FIXTURES / name
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def unowned_lines(name: str, module: object) -> list[str]:
    """Tests named by fixture file ``name`` that ``module`` does not define."""
    owners = {line["test"] for line in load_jsonl(name)}
    return sorted(test for test in owners if not callable(getattr(module, test, None)))


def cases_for(name: str, test: str) -> list[dict[str, Any]]:
    """The lines of fixture file ``name`` owned by ``test``; at least one."""
    lines = [line for line in load_jsonl(name) if line["test"] == test]
    assert lines, f"{name} has no line for {test}"
    return lines


def chunks(raw: list[dict[str, Any]] | None) -> tuple[Chunk, ...] | None:
    if raw is None:
        return None
    return tuple(
        Chunk(item["id"], item.get("text", ""), item.get("score"), item.get("metadata", {}))
        for item in raw
    )


def answer(raw: dict[str, Any] | None) -> Answer | None:
    if raw is None:
        return None
    citations = raw.get("citations")
    return Answer(
        raw["text"],
        chunks(raw.get("retrieved_chunks")),
        None if citations is None else tuple(citations),
    )
