"""Reading source files line by line, with the line numbers bad-input messages need.

Every problem raises ``DatasetError`` (``PATH:LINE: reason``; line 0 for the
file itself), the error ``ragproof`` reports as bad input, exit 1.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ragproof_core.data.dataset import DatasetError, json_type, open_input  # noqa: F401 - json_type is used by the importers


def open_text(path: str | Path):
    """Open a UTF-8 text file (a byte-order mark is dropped), mapping OS errors to line 0."""
    # newline="" keeps "\r\n" inside quoted CSV fields as written.
    return open_input(path, encoding="utf-8-sig", newline="")


def read_text(path: str | Path) -> str:
    """The whole file as text."""
    with open_text(path) as handle:
        try:
            return handle.read()
        except UnicodeDecodeError:
            raise DatasetError(str(path), bad_utf8_line(path), "not valid UTF-8") from None


def text_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` for each non-blank line, line endings removed."""
    with open_text(path) as handle:
        try:
            for number, raw in enumerate(handle, start=1):
                line = raw.rstrip("\r\n")
                if line.strip():
                    yield number, line
        except UnicodeDecodeError:
            raise DatasetError(str(path), bad_utf8_line(path), "not valid UTF-8") from None


def bad_utf8_line(path: str | Path) -> int:
    """The first line that is not valid UTF-8 (a text reader decodes ahead in blocks,
    so the line it was on when decoding failed can be far before the bad byte)."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return number
    return 0


def optional_string(row: Mapping[str, Any], key: str) -> str | None:
    """``row[key]`` as a string, None when absent or null; raises ValueError otherwise."""
    value = row.get(key)
    if value is None or isinstance(value, str):
        return value
    raise ValueError(f"{key!r} must be a string, got {json_type(value)}")


def string_list(value: Any, key: str) -> list[str] | None:
    """A list of strings, None when absent or null; raises ValueError otherwise."""
    if value is None:
        return None
    if not isinstance(value, list | tuple):
        raise ValueError(f"{key!r} must be a list of strings, got {json_type(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise ValueError(f"{key!r} item {index} must be a string, got {json_type(item)}")
    return list(value)
