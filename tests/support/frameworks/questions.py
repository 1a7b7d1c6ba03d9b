"""The framework test dataset (tests/fixtures/frameworks/cases.jsonl) as Cases, and a runner."""

from __future__ import annotations

import asyncio

from ragproof_core.adapters.runner import run_adapter
from ragproof_core.config.settings import RunSettings
from ragproof_core.data.dataset import load_dataset
from ragproof_core.model import CaseOutput
from tests.conftest import FIXTURES

CASES = tuple(load_dataset(FIXTURES / "frameworks" / "cases.jsonl"))
# A single case s1, then conversations c1 (three turns) and c2 (one turn).
CONVERSATION_CASES = tuple(load_dataset(FIXTURES / "conversations" / "mixed.jsonl"))


def run_cases(adapter: object, concurrency: int = 1) -> dict[str, CaseOutput]:
    """Every test case through the real runner, one at a time by default (scripted
    fake models reply in call order)."""
    settings = RunSettings(concurrency=concurrency, timeout_s=30)
    outputs = asyncio.run(run_adapter(list(CASES), adapter, settings))
    return {output.case_id: output for output in outputs}


def run_conversations(adapter: object) -> dict[str, CaseOutput]:
    """The conversation dataset through the real runner, one case at a time."""
    settings = RunSettings(concurrency=1, timeout_s=30)
    outputs = asyncio.run(run_adapter(list(CONVERSATION_CASES), adapter, settings))
    return {output.case_id: output for output in outputs}


def retrieved_ids(outputs: dict[str, CaseOutput]) -> dict[str, list[str] | None]:
    return {
        case_id: None if o.retrieved is None else [c.id for c in o.retrieved]
        for case_id, o in sorted(outputs.items())
    }


def citations(outputs: dict[str, CaseOutput]) -> dict[str, tuple[str, ...] | None]:
    return {case_id: o.answer.citations for case_id, o in sorted(outputs.items())}
