"""Nuggets written by the judge model (``ragproof generate nuggets``, CONTRACT section 20).

For each case (a conversation's turn included) with an ``expected_answer`` and no
``nuggets``, the judge is asked for the expected answer's nuggets (prompt
``generate_nuggets``, reply ``{"nuggets": [{"text": str, "vital": bool}]}``, at
most ten, validated like every reply: one repair retry, then a judge error).
The request names the seed (``--seed``, default 0), so the same seed asks the
same question and a warm judge cache answers it: the same seed writes a
byte-identical file, and another seed is a fresh request.

The output is the dataset with those cases' ``nuggets`` added right after their
``expected_answer``, and the generation recorded in the line's metadata
(``metadata.nuggets_generated = {"seed", "model", "prompt_hashes"}``, on the
conversation for a turn). Every other line is copied byte for byte, blank lines
included; a Parquet dataset is written as JSON Lines, a row a line (its null
fields left out, as null means absent). A case whose nuggets failed (a judge
error) is copied without them and reported, so a second run asks only for it.

The judge's budget, or a judge that cannot answer (its breaker), stops the requests
(``JudgeStopped``): the nuggets already written are kept, the rest named.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragproof_core.data.dataset import iter_json_line_spans, open_input
from ragproof_core.judge.types import Judge, JudgeStopped, JudgeVerdict
from ragproof_core.metrics.diagnostics import GENERATE_PROMPT, generate_inputs
from ragproof_core.model import CONVERSATION_KIND, Case, turn_id

GENERATED_KEY = "nuggets_generated"


def needs_nuggets(case: Case) -> bool:
    return case.nuggets is None and bool(case.expected_answer and case.expected_answer.strip())


@dataclass
class NuggetOutcome:
    """What a generation did: the nuggets written by case id, the failures, the rest."""

    written: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)  # case id -> why
    without_expected_answer: int = 0
    with_nuggets: int = 0
    aborted: str | None = None  # the judge's stop (budget, unavailable): its message
    status: str = "completed"  # or that stop's status (aborted:budget, aborted:judge)

    @property
    def nuggets(self) -> int:
        return sum(len(n) for n in self.written.values())

    @property
    def vital(self) -> int:
        return sum(item["vital"] for n in self.written.values() for item in n)


async def generate_nuggets(cases: Sequence[Case], judge: Judge, seed: int) -> NuggetOutcome:
    """Ask for the nuggets of every case that needs them, concurrently (the judge bounds
    the calls in flight)."""
    outcome = NuggetOutcome()
    asking = [case for case in cases if needs_nuggets(case)]
    outcome.with_nuggets = sum(case.nuggets is not None for case in cases)
    outcome.without_expected_answer = len(cases) - len(asking) - outcome.with_nuggets

    async def ask(case: Case) -> JudgeVerdict | JudgeStopped:
        try:
            inputs = generate_inputs(case.question, case.expected_answer, seed)
            return await judge.ask(GENERATE_PROMPT, inputs)
        except JudgeStopped as exc:
            return exc

    verdicts = await asyncio.gather(*(ask(case) for case in asking))
    for case, verdict in zip(asking, verdicts, strict=True):
        if isinstance(verdict, JudgeStopped):
            if outcome.aborted is None:
                outcome.aborted, outcome.status = str(verdict), verdict.status
            outcome.failed[case.id] = verdict.skip_reason
        elif not verdict.ok or verdict.data is None:
            outcome.failed[case.id] = verdict.error or "judge failed"
        else:
            outcome.written[case.id] = [
                {"text": item["text"], "vital": item["vital"]} for item in verdict.data["nuggets"]
            ]
    return outcome


def with_nuggets(row: dict[str, Any], nuggets: list[dict[str, Any]]) -> dict[str, Any]:
    """``row`` (a case or a turn) with ``nuggets`` right after its ``expected_answer``."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        out[key] = value
        if key == "expected_answer":
            out["nuggets"] = nuggets
    return out


def with_generation(row: dict[str, Any], generated: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` with ``metadata.nuggets_generated`` set (its metadata otherwise kept)."""
    metadata = dict(row.get("metadata") or {})
    metadata[GENERATED_KEY] = dict(generated)
    return {**row, "metadata": metadata}


def updated_row(
    row: Any,
    written: Mapping[str, list[dict[str, Any]]],
    generated: Mapping[str, Any],
) -> dict[str, Any] | None:
    """The line's new value when the generation gave it nuggets, else None (kept as is)."""
    if not isinstance(row, dict):
        return None
    if row.get("kind") == CONVERSATION_KIND:
        turns = row.get("turns") or []
        ids = [turn_id(row["id"], number) for number in range(1, len(turns) + 1)]
        if not any(case_id in written for case_id in ids):
            return None
        new_turns = [
            with_nuggets(turn, written[case_id]) if case_id in written else turn
            for case_id, turn in zip(ids, turns, strict=True)
        ]
        return with_generation({**row, "turns": new_turns}, generated)
    if row.get("id") not in written:
        return None
    return with_generation(with_nuggets(row, written[row["id"]]), generated)


def output_lines(
    path: str | Path,
    written: Mapping[str, list[dict[str, Any]]],
    generated: Mapping[str, Any],
) -> Iterator[bytes]:
    """The output file's lines: the dataset's, those given nuggets rewritten."""
    path = Path(path)
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq  # only a Parquet dataset needs it

        for row in pq.read_table(path).to_pylist():
            present = {key: value for key, value in row.items() if value is not None}
            yield _line(updated_row(present, written, generated) or present)
        return
    spans = {start: value for _line_number, start, _size, value in iter_json_line_spans(path)}
    offset = 0
    with open_input(path, "rb") as handle:
        for raw in handle:
            start, offset = offset, offset + len(raw)
            new = updated_row(spans[start], written, generated) if start in spans else None
            if new is None:
                yield raw if raw.endswith(b"\n") else raw + b"\n"
            else:
                yield _line(new)


def _line(value: Any) -> bytes:
    return (json.dumps(value, ensure_ascii=False) + "\n").encode("utf-8")
