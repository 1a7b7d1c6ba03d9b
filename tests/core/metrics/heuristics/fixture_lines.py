"""Reads the robustness fixture files in tests/fixtures/robustness/.

Lines that carry a ``"test"`` key belong to that test, so each test runs
exactly its own lines and ``assert_every_line_owned`` catches orphans.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

from ragproof_core.model import Answer, Case, CaseKind, CaseOutput, Chunk

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "robustness"


def load_jsonl(name: str) -> list[dict[str, Any]]:
    with (FIXTURES / name).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def lines_for(name: str, test: str) -> list[dict[str, Any]]:
    lines = [line for line in load_jsonl(name) if line["test"] == test]
    assert lines, f"{name} has no line for {test}"
    return lines


def assert_every_line_owned(name: str, module: ModuleType) -> None:
    owners = {line["test"] for line in load_jsonl(name)}
    missing = sorted(owner for owner in owners if not hasattr(module, owner))
    assert not missing, f"{name} names tests that do not exist: {missing}"


def case_from(raw: dict[str, Any]) -> Case:
    allowed = raw.get("allowed_restricted_ids")
    return Case(
        id=raw["id"],
        question=raw.get("question", "q?"),
        kind=CaseKind(raw.get("kind", "qa")),
        adversarial_payload=raw.get("adversarial_payload"),
        poison_marker=raw.get("poison_marker"),
        allowed_restricted_ids=None if allowed is None else tuple(allowed),
    )


def output_for(case: Case, text: str | None) -> CaseOutput:
    return CaseOutput(case.id, answer=None if text is None else Answer(text))


def chunks_from(raw: list[dict[str, Any]] | None) -> tuple[Chunk, ...] | None:
    if raw is None:
        return None
    return tuple(Chunk(c["id"], c["text"], metadata=c.get("metadata", {})) for c in raw)


def attack_output(case: Case, line: dict[str, Any]) -> CaseOutput:
    """A fixture line's output: its answer with its own chunks (``context``) and
    ``citations``, and the separate ``retrieved`` chunks, each when given."""
    text = line["answer"]
    answer = None
    if text is not None:
        citations = line.get("citations")
        answer = Answer(
            text, chunks_from(line.get("context")), None if citations is None else tuple(citations)
        )
    return CaseOutput(case.id, answer=answer, retrieved=chunks_from(line.get("retrieved")))
