"""The generated test set as a dataset file (CONTRACT sections 1 and 13).

Rows use only dataset fields: qa cases keep ``expected_source_ids`` (the chunks
the question was written from) and ``expected_answer``; unanswerable cases
have neither. Every row carries ``metadata.generated = {"seed", "model",
"prompt_hashes"}``. Ids number the kept cases in slot order (``gen-0001``,
``gen-u-0001``), so a slot left unfilled leaves no gap.

Byte-identical for identical inputs: keys in a fixed order, no timestamps,
``\\n`` line endings. Written to a temporary file and renamed into place, so a
reader never sees half a file.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragproof_core.generate.qa import QA, KeptQuestion

ID_PREFIX = {QA: "gen-", "unanswerable": "gen-u-"}


def case_rows(
    kept: Sequence[KeptQuestion], seed: int, model: str, prompt_hashes: Mapping[str, str]
) -> list[dict[str, Any]]:
    generated = {"seed": seed, "model": model, "prompt_hashes": dict(sorted(prompt_hashes.items()))}
    numbers: dict[str, int] = {}
    rows = []
    for question in kept:
        numbers[question.kind] = numbers.get(question.kind, 0) + 1
        row: dict[str, Any] = {
            "id": f"{ID_PREFIX[question.kind]}{numbers[question.kind]:04d}",
            "question": question.question,
            "kind": question.kind,
        }
        if question.kind == QA:
            row["expected_source_ids"] = list(question.source_ids)
            row["expected_answer"] = question.answer
        row["metadata"] = {"generated": dict(generated)}
        rows.append(row)
    return rows


def write_rows(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    text = "".join(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n" for row in rows)
    write_text(path, text)


def write_text(path: Path, text: str) -> None:
    """``text`` written to ``path`` (its folder made), through a temporary file renamed
    into place, so a reader never sees half a file."""
    write_bytes(path, text.encode("utf-8"))


def write_bytes(path: Path, data: bytes) -> None:
    """``data`` as the file at ``path`` (its folder made), through a temporary file
    renamed into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
