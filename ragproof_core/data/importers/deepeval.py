"""``ragproof import deepeval``: DeepEval goldens or test cases saved as JSON.

The file is a JSON array of objects (what ``EvaluationDataset.save_as("json")``
writes, and what ``add_test_cases_from_json_file`` reads) with keys ``input``
(required), ``actual_output``, ``expected_output``, ``retrieval_context`` and
``context``; the camelCase spellings of Confident AI's API (``actualOutput``,
``expectedOutput``, ``retrievalContext``, ``additionalMetadata``) are accepted
too, and other keys are ignored.

Cases: ``question`` = input, ``expected_answer`` = expected_output; ``context``
(DeepEval's ideal context) and ``additional_metadata`` are kept under
``metadata``. Goldens have no id, so a case is ``row-N`` (N the 1-based array
element) unless the object has an ``id``; bad input names the line where its
element starts.

Recorded outputs: ``actual_output`` is the answer text and
``retrieval_context`` the retrieved chunks, ids ``CASE_ID:ctx-I`` (I from 1).

An element with ``turns`` is a conversational test case (``ConversationalTestCase``:
``turns`` of ``{role, content, retrieval_context, ...}``, role ``user`` or
``assistant``) and becomes a conversation (CONTRACT section 16); see
``conversation`` for how its messages make turns. Its ``scenario``,
``expected_outcome``, ``user_description``, ``chatbot_role``, ``context`` and
``additional_metadata`` are kept under ``metadata``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragproof_core.data.dataset import DatasetError
from ragproof_core.data.importers.conversation import chat_message, conversation_rows
from ragproof_core.data.importers.reading import json_type, optional_string, read_text, string_list
from ragproof_core.data.importers.writer import Imported, case_row, collect, recorded_row, row_id
from ragproof_core.json_limits import (
    MAX_DEPTH,
    STRICT_DECODING,
    JsonLimitError,
    check_value,
    has_surrogate_escape,
    scan_depth,
)

# snake_case key -> the camelCase alias Confident AI's API uses.
_ALIASES = {
    "actual_output": "actualOutput",
    "expected_output": "expectedOutput",
    "retrieval_context": "retrievalContext",
    "additional_metadata": "additionalMetadata",
}
_WHITESPACE = " \t\r\n"
# A conversational test case's own fields kept under the conversation's metadata.
_CONVERSATION_TEXT = ("scenario", "expected_outcome", "user_description", "chatbot_role")
_ROLES = {"user": "user", "assistant": "assistant"}


def import_deepeval(path: str | Path) -> Imported:
    """Cases and recorded outputs from a DeepEval JSON file."""
    return collect(path, json_array_items(path), _convert, "no goldens or test cases to import")


def _get(item: dict[str, Any], key: str) -> Any:
    value = item.get(key)
    if value is None and key in _ALIASES:
        value = item.get(_ALIASES[key])
    return value


def _convert(item: Any, number: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
    if not isinstance(item, dict):
        raise ValueError(f"expected a JSON object, got {json_type(item)}")
    if item.get("turns") is not None:
        return _convert_conversation(item, number)
    question = item.get("input")
    if question is None:
        raise ValueError("missing required field 'input'")
    if not isinstance(question, str):
        raise ValueError(f"'input' must be a string, got {json_type(question)}")
    if not question.strip():
        raise ValueError("'input' must not be empty")
    case_id = optional_string(item, "id") or row_id(number)
    fields = {key: _get(item, key) for key in ("actual_output", "expected_output")}
    metadata = _context_metadata(item)
    case = case_row(
        case_id,
        question,
        expected_answer=optional_string(fields, "expected_output"),
        metadata=metadata,
    )
    retrieved = string_list(_get(item, "retrieval_context"), "retrieval_context")
    output = recorded_row(case_id, retrieved, optional_string(fields, "actual_output"))
    return case, output


def _context_metadata(item: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    context = string_list(item.get("context"), "context")
    if context is not None:
        metadata["context"] = context
    extra = _get(item, "additional_metadata")
    if extra is not None:
        if not isinstance(extra, dict):
            raise ValueError(f"'additional_metadata' must be an object, got {json_type(extra)}")
        metadata["additional_metadata"] = extra
    return metadata


def _convert_conversation(
    item: dict[str, Any], number: int
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    turns = item["turns"]
    if not isinstance(turns, list):
        raise ValueError(f"'turns' must be a list of turns, got {json_type(turns)}")
    messages = [
        chat_message(turn, f"'turns' item {index}", "role", _ROLES, "retrieval_context")
        for index, turn in enumerate(turns)
    ]
    metadata = {key: value for key in _CONVERSATION_TEXT if (value := optional_string(item, key))}
    metadata.update(_context_metadata(item))
    case_id = optional_string(item, "id") or row_id(number)
    return conversation_rows(case_id, messages, "turns", metadata)


def json_array_items(path: str | Path) -> Iterator[tuple[int, Any]]:
    """``(line where the element starts, element)`` for each element of a top-level JSON array.

    ``json.load`` gives no positions, so the array is walked with
    ``raw_decode``, element by element, counting newlines as it goes.
    """
    path_text = str(path)
    text = read_text(path)
    decoder = json.JSONDecoder(**STRICT_DECODING)
    # An escape of half a surrogate pair decodes to text no UTF-8 file can hold: where the
    # file has such an escape at all, each element's text is checked for one.
    surrogates = has_surrogate_escape(text)
    lines = _LineCounter(text)
    try:
        # The decoder recurses; one level more for the array around the elements.
        scan_depth(text, MAX_DEPTH + 1)
    except JsonLimitError as exc:
        raise DatasetError(path_text, lines.at(exc.offset), str(exc)) from None

    pos = _skip(text, 0)
    if pos == len(text):
        raise DatasetError(path_text, 1, "empty file: expected a JSON array")
    if text[pos] != "[":
        raise DatasetError(
            path_text, lines.at(pos), "expected a JSON array of goldens or test cases"
        )
    pos = _skip(text, pos + 1)
    if pos < len(text) and text[pos] == "]":
        pos += 1
    else:
        while True:
            try:
                value, end = decoder.raw_decode(text, pos)
                if surrogates:
                    check_value(value, "element", json_only=True)
            except JsonLimitError as exc:
                raise DatasetError(path_text, lines.at(pos), str(exc)) from None
            except json.JSONDecodeError as exc:
                raise DatasetError(
                    path_text, exc.lineno, f"not valid JSON ({exc.msg} at column {exc.colno})"
                ) from None
            yield lines.at(pos), value
            pos = _skip(text, end)
            if pos < len(text) and text[pos] == ",":
                pos = _skip(text, pos + 1)
                continue
            if pos < len(text) and text[pos] == "]":
                pos += 1
                break
            raise DatasetError(path_text, lines.at(pos), "expected ',' or ']' after an element")
    if _skip(text, pos) != len(text):
        raise DatasetError(path_text, lines.at(_skip(text, pos)), "extra data after the array")


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WHITESPACE:
        pos += 1
    return pos


class _LineCounter:
    """1-based line of a text offset; offsets must be asked in increasing order."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._pos = 0
        self._line = 1

    def at(self, pos: int) -> int:
        self._line += self._text.count("\n", self._pos, pos)
        self._pos = pos
        return self._line
