"""Bounds on JSON-like values from outside: how deep they nest and how big their integers are.

Python's JSON decoder, pydantic, Arrow and ``json.dumps`` all recurse, so a value
nested a few thousand levels raises ``RecursionError`` wherever it is next
touched, far from where it came in; a 5,000-digit integer makes ``str()`` raise.
Anything read from a user (dataset metadata, recordings, imports, adapter
options) or from a judge is checked here first, so such a value is refused
where it enters, with a message naming what was too deep or too big.

``scan_depth`` checks JSON *text* without decoding it (a plain scan over its
brackets); ``check_value`` checks an already-decoded value without recursing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# Deeper than any real metadata or judge reply; far below the interpreter's
# recursion limit (1,000), which the decoders and encoders downstream share.
MAX_DEPTH = 64
# Integers wider than int64 cannot be stored anyway; 20 digits covers them all.
MAX_INT_DIGITS = 20

# Strings (with their escapes) and the brackets outside them.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


class JsonLimitError(ValueError):
    """A value past one of the bounds; the message says which and where."""


def scan_depth(text: str, max_depth: int = MAX_DEPTH) -> None:
    """Raise ``JsonLimitError`` if the JSON text nests deeper than ``max_depth``.

    Brackets inside strings do not count. Malformed text is left for the decoder
    to report; this only guarantees the decoder will not recurse too far.
    """
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > max_depth:
                raise JsonLimitError(f"nested deeper than {max_depth} levels")
        elif token in "]}":
            depth -= 1


def check_value(
    value: Any, what: str = "value", max_depth: int = MAX_DEPTH, max_digits: int = MAX_INT_DIGITS
) -> None:
    """Raise ``JsonLimitError`` if ``value`` (dicts, lists, tuples, scalars) nests deeper
    than ``max_depth`` or holds an integer of more than ``max_digits`` digits. Iterative,
    so it is safe on any depth; a value that contains itself is refused as too deep."""
    stack: list[tuple[Any, int, str]] = [(value, 0, what)]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, bool) or item is None:
            continue
        if isinstance(item, int):
            if _too_wide(item, max_digits):
                raise JsonLimitError(f"{path}: an integer of more than {max_digits} digits")
            continue
        if isinstance(item, Mapping | list | tuple):
            if depth >= max_depth:
                raise JsonLimitError(
                    f"{path}: nested deeper than {max_depth} levels (or contains itself)"
                )
            if isinstance(item, Mapping):
                children = [(v, f"{path}.{k}") for k, v in item.items()]
            else:
                children = [(v, f"{path}[{i}]") for i, v in enumerate(item)]
            stack.extend((child, depth + 1, child_path) for child, child_path in children)


def _too_wide(number: int, max_digits: int) -> bool:
    # bit_length first: converting a huge integer to decimal is what raises (and is slow).
    if abs(number).bit_length() > max_digits * 4:
        return True
    return len(str(abs(number))) > max_digits
