"""``ragproof import ragas``: a RAGAS evaluation dataset (JSON Lines or CSV).

Columns (RAGAS ``SingleTurnSample``): ``user_input`` (required), ``reference``,
``response``, ``retrieved_contexts``, ``reference_contexts``; other columns are
ignored. A ``.csv`` file is read as CSV with a header row, anything else as
JSON Lines. A list column holds a JSON array or a Python-literal list (what
``EvaluationDataset.to_csv`` writes through pandas), read with
``ast.literal_eval``, which evaluates literals only, never code. An empty CSV
cell is an absent value.

Cases: ``question`` = user_input, ``expected_answer`` = reference, and
``reference_contexts`` kept under ``metadata``. RAGAS rows have no id, so a
case is ``row-N`` (N the 1-based data row) unless the row has an ``id``.

Recorded outputs: ``response`` is the answer text and ``retrieved_contexts``
the retrieved chunks, ids ``CASE_ID:ctx-I`` (I from 1); see
``writer.recorded_row`` for rows with only one of them or neither.

A JSON Lines row whose ``user_input`` is a list of messages is a multi-turn
sample (``MultiTurnSample``: messages ``{"content", "type"}``, type ``human``,
``ai`` or ``tool``) and becomes a conversation (CONTRACT section 16); see
``conversation`` for how its messages make turns (tool messages are not part
of one). Its ``reference`` and ``reference_topics`` are kept under
``metadata``; RAGAS messages carry no retrieved contexts, so its recording
holds answers only.
"""

from __future__ import annotations

import ast
import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragproof_core.data.dataset import DatasetError, iter_json_lines
from ragproof_core.data.importers.conversation import chat_message, conversation_rows
from ragproof_core.data.importers.reading import (
    bad_utf8_line,
    json_type,
    open_text,
    optional_string,
    string_list,
)
from ragproof_core.data.importers.writer import Imported, case_row, collect, recorded_row, row_id

LIST_COLUMNS = ("retrieved_contexts", "reference_contexts")
# A RAGAS message type -> its role in a conversation.
_ROLES = {"human": "user", "ai": "assistant", "tool": "other"}


def import_ragas(path: str | Path) -> Imported:
    """Cases and recorded outputs from a RAGAS dataset file."""
    rows = _csv_rows(path) if Path(path).suffix.lower() == ".csv" else _jsonl_rows(path)
    return collect(path, rows, _convert, "no rows to import")


def _convert(row: Any, number: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
    if not isinstance(row, dict):
        raise ValueError(f"expected a JSON object, got {json_type(row)}")
    question = row.get("user_input")
    if question is None:
        hint = " (RAGAS 0.1 names such as 'question' are not read)" if "question" in row else ""
        raise ValueError(f"missing required field 'user_input'{hint}")
    if isinstance(question, list):
        return _convert_multi_turn(row, question, number)
    if not isinstance(question, str):
        raise ValueError(
            f"'user_input' must be a string or a list of messages, got {json_type(question)}"
        )
    if not question.strip():
        raise ValueError("'user_input' must not be empty")
    case_id = optional_string(row, "id") or row_id(number)
    lists = {key: string_list(parse_list(row.get(key), key), key) for key in LIST_COLUMNS}
    metadata = {}
    if lists["reference_contexts"] is not None:
        metadata["reference_contexts"] = lists["reference_contexts"]
    case = case_row(
        case_id,
        question,
        expected_answer=optional_string(row, "reference"),
        metadata=metadata,
    )
    output = recorded_row(case_id, lists["retrieved_contexts"], optional_string(row, "response"))
    return case, output


def _convert_multi_turn(
    row: dict[str, Any], messages: list[Any], number: int
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    metadata: dict[str, Any] = {}
    reference = optional_string(row, "reference")
    if reference is not None:
        metadata["reference"] = reference
    topics = string_list(row.get("reference_topics"), "reference_topics")
    if topics is not None:
        metadata["reference_topics"] = topics
    chat = [
        chat_message(message, f"'user_input' item {index}", "type", _ROLES)
        for index, message in enumerate(messages)
    ]
    case_id = optional_string(row, "id") or row_id(number)
    return conversation_rows(case_id, chat, "user_input", metadata)


def parse_list(value: Any, key: str) -> Any:
    """A list column's value: lists pass through; a string is a JSON array or a Python list."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):  # tried as a Python literal below
        pass
    try:
        parsed = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ValueError(
            f"{key!r} must hold a JSON array or a Python list literal, got {_preview(text)}"
        ) from None
    if isinstance(parsed, tuple):
        parsed = list(parsed)
    return parsed


def _jsonl_rows(path: str | Path) -> Iterator[tuple[int, Any]]:
    return iter_json_lines(path)


def _csv_rows(path: str | Path) -> Iterator[tuple[int, dict[str, str]]]:
    """``(first line of the record, {column: cell})``, empty cells left out."""
    path_text = str(path)
    with open_text(path) as handle:
        reader = csv.reader(handle)
        try:
            header = next(reader, None)
            if header is None:
                raise DatasetError(path_text, 1, "empty CSV file: expected a header row")
            header = [name.strip() for name in header]
            if "user_input" not in header:
                raise DatasetError(
                    path_text,
                    1,
                    f"missing column 'user_input' (columns: {', '.join(header) or 'none'})",
                )
            end = reader.line_num
            for record in reader:
                start, end = end + 1, reader.line_num
                if not record or not any(cell.strip() for cell in record):
                    continue  # a blank line
                if len(record) != len(header):
                    raise DatasetError(
                        path_text,
                        start,
                        f"expected {len(header)} columns as in the header, got {len(record)}",
                    )
                cells = zip(header, record, strict=True)
                yield start, {name: cell for name, cell in cells if cell != ""}
        except csv.Error as exc:
            raise DatasetError(path_text, reader.line_num, f"not valid CSV ({exc})") from None
        except UnicodeDecodeError:
            raise DatasetError(path_text, bad_utf8_line(path), "not valid UTF-8") from None


def _preview(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")
