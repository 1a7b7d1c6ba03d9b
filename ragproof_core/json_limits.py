"""Bounds on JSON-like values from outside: how deep they nest and how big their integers are.

Python's JSON decoder, pydantic, Arrow and ``json.dumps`` all recurse, so a value
nested a few thousand levels raises ``RecursionError`` wherever it is next
touched, far from where it came in; a 5,000-digit integer makes ``str()`` raise.
Anything read from a user (dataset metadata, recordings, imports, adapter
options) or from a judge is checked here first, so such a value is refused
where it enters, with a message naming what was too deep or too big.

``scan_depth`` checks JSON *text* without decoding it (a plain scan over its
brackets); ``loads_bounded`` decodes JSON text within both bounds; ``check_value``
checks an already-decoded value without recursing.

What is read is strict JSON too: Python's decoder takes ``NaN``, ``Infinity`` and
``1e400`` (an infinity), which no other JSON reader does and which ragproof would
write back out as bare ``NaN``; ``loads_bounded`` and ``STRICT_DECODING`` refuse them.
"""

from __future__ import annotations

import datetime
import decimal
import functools
import json
import math
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import orjson

# Deeper than any real metadata or judge reply; far below the interpreter's
# recursion limit (1,000), which the decoders and encoders downstream share.
MAX_DEPTH = 64
# Python's own bound on converting an integer to and from text (sys.int_info
# .default_max_str_digits): a wider one cannot even be written back as JSON.
MAX_INT_DIGITS = 4300

# The widest integer orjson keeps exact (it reads a wider one as a float; 2**63 has 19 digits).
_EXACT_INT_DIGITS = 18
# Every ASCII digit as "0", every other byte as "x": a run of zeros is a run of digits.
_DIGITS_AS_ZERO = bytes(ord("0") if 48 <= i <= 57 else ord("x") for i in range(256))
_DIGIT_RUN = b"0" * (_EXACT_INT_DIGITS + 1)

# What a decoded JSON value nests in.
_CONTAINERS = (dict, list)

# How many levels of a too-deep value's path a message names.
_NAMED_LEVELS = 3

# Half of a UTF-16 surrogate pair: a Python string may hold one, UTF-8 cannot.
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")

# Strings (with their escapes) and the brackets outside them.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


class JsonLimitError(ValueError):
    """A value past one of the bounds; the message says which and where. ``offset``:
    where in the scanned text the limit was passed (0 for a decoded value)."""

    def __init__(self, message: str, offset: int = 0) -> None:
        super().__init__(message)
        self.offset = offset


def scan_depth(text: str, max_depth: int = MAX_DEPTH) -> None:
    """Raise ``JsonLimitError`` if the JSON text nests deeper than ``max_depth``.

    Brackets inside strings do not count. Malformed text is left for the decoder
    to report; this only guarantees the decoder will not recurse too far.
    """
    if text.count("[") + text.count("{") <= max_depth:
        return  # the common case, decided at C speed: too few brackets to nest that deep
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > max_depth:
                raise JsonLimitError(f"nested deeper than {max_depth} levels", match.start())
        elif token in "]}":
            depth -= 1


def refuse_constant(name: str) -> Any:
    """``json.loads``'s ``parse_constant``: ``NaN`` and the infinities are not JSON."""
    raise JsonLimitError(f"{name} is not a JSON number (JSON numbers are finite)")


def finite_float(text: str) -> float:
    """``json.loads``'s ``parse_float``: a number too big for a float (``1e400``) is refused,
    not read as an infinity."""
    value = float(text)
    if value in (math.inf, -math.inf):
        raise JsonLimitError(f"{text[:20]}{'...' if len(text) > 20 else ''} is out of range")
    return value


def bounded_int(digits: str) -> int:
    """``json.loads``'s ``parse_int``: an integer of more than ``MAX_INT_DIGITS`` digits is
    refused before ``int()`` (which raises past 4,300 digits, or takes long to get there)."""
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise JsonLimitError(f"an integer of more than {MAX_INT_DIGITS} digits")
    return int(digits)


# The keyword arguments of a strict, bounded ``json.loads`` (or ``json.JSONDecoder``).
STRICT_DECODING: Mapping[str, Any] = MappingProxyType(
    {"parse_int": bounded_int, "parse_float": finite_float, "parse_constant": refuse_constant}
)


def loads_bounded(text: str, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` of ``text`` from outside, integers bounded (``bounded_int``); raises
    ``JsonLimitError`` exactly where ``scan_depth`` before decoding would, else the
    decoder's own error.

    A line with many brackets but little depth (a conversation's recording: five turns
    of ten chunks) is decoded first and its depth read from the value, a level at a
    time; the scan over its text, a regular-expression match per bracket and string,
    cost ten times the decoding. The decoder itself is safe on any depth (it raises
    ``RecursionError`` long before the interpreter's stack runs out), and on valid
    JSON the value nests exactly as deep as the text's brackets."""
    if text.count("[") + text.count("{") <= max_depth:
        return json.loads(text, **STRICT_DECODING)
    try:
        value = json.loads(text, **STRICT_DECODING)
    except (ValueError, RecursionError):
        # A depth problem is the one to report, as when the text was scanned first.
        scan_depth(text, max_depth)
        raise
    if _nested_deeper(value, max_depth):
        scan_depth(text, max_depth)  # raises, naming where
        raise JsonLimitError(f"nested deeper than {max_depth} levels")
    return value


def loads_plain(raw: bytes, max_depth: int = MAX_DEPTH) -> tuple[bool, Any]:
    """``(True, value)`` for JSON bytes that are plainly valid and within both bounds, read
    by orjson (about twice as fast as ``json.loads``); ``(False, None)`` for anything
    else, which the caller decodes with ``loads_bounded`` to get the value or the error.

    Plain means: no run of more than 18 digits (orjson would read a wider integer as
    a float), decoded by orjson, nested at most ``max_depth`` deep. orjson refuses all
    that ``json.loads`` refuses (bad JSON, invalid UTF-8, a lone surrogate escape) and
    some valid text too (NaN, 1e400, a byte order mark), so such bytes go the exact way;
    on what both accept they agree."""
    if _DIGIT_RUN in raw.translate(_DIGITS_AS_ZERO):
        return False, None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False, None
    if raw.count(b"[") + raw.count(b"{") > max_depth and _nested_deeper(value, max_depth):
        return False, None
    return True, value


def _nested_deeper(value: Any, max_depth: int) -> bool:
    """Whether a decoded JSON value holds containers more than ``max_depth`` deep."""
    level = [value] if type(value) in _CONTAINERS else []
    for _ in range(max_depth):
        if not level:
            return False
        level = [
            child
            for item in level
            for child in (item.values() if type(item) is dict else item)
            if type(child) in _CONTAINERS
        ]
    return bool(level)


def has_surrogate(text: str) -> bool:
    return _SURROGATE.search(text) is not None


def has_surrogate_escape(json_text: str) -> bool:
    """Whether JSON text escapes a surrogate (``\\ud800``): its value may hold half of a
    pair, which ``check_value(..., json_only=True)`` then finds. A pair decodes whole."""
    return _SURROGATE_ESCAPE.search(json_text) is not None


def check_value(
    value: Any,
    what: str = "value",
    *,
    json_only: bool = False,
    max_depth: int = MAX_DEPTH,
    max_digits: int = MAX_INT_DIGITS,
) -> None:
    """Raise ``JsonLimitError`` if ``value`` (dicts, lists, tuples, scalars) nests deeper
    than ``max_depth`` or holds an integer of more than ``max_digits`` digits. Iterative,
    so it is safe on any depth; a value that contains itself is refused as too deep.
    ``json_only``: also refuse anything JSON cannot hold (a timestamp, bytes, a Decimal,
    an arbitrary object, a key that is not a string), naming its type, never its text."""
    stack: list[tuple[Any, int, str]] = [(value, 0, what)]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, str):
            if json_only and not item.isascii() and has_surrogate(item):
                raise JsonLimitError(f"{path}: a lone surrogate is not valid text")
            continue
        if isinstance(item, bool | float) or item is None:
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
            if depth >= _NAMED_LEVELS:  # a message naming 64 levels is no help
                children = [
                    (v, path) for v in (item.values() if isinstance(item, Mapping) else item)
                ]
            elif isinstance(item, Mapping):
                children = [(v, f"{path}.{k}") for k, v in item.items()]
            else:
                children = [(v, f"{path}[{i}]") for i, v in enumerate(item)]
            if json_only and isinstance(item, Mapping):
                bad_key = next((k for k in item if not isinstance(k, str)), None)
                if bad_key is not None:
                    raise JsonLimitError(
                        f"{path}: a key of type {_kind(bad_key)} is not a JSON key"
                    )
            stack.extend((child, depth + 1, child_path) for child, child_path in children)
        elif json_only:
            raise JsonLimitError(f"{path}: {_kind(item)} is not a JSON value")


def _too_wide(number: int, max_digits: int) -> bool:
    # Compared as numbers: converting a too-wide integer to text is what raises.
    return abs(number) >= _power_of_ten(max_digits)


@functools.cache
def _power_of_ten(digits: int) -> int:
    return 10**digits


def _kind(value: Any) -> str:
    # The type only: str() of an arbitrary object may raise, or leak what it holds.
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return "a timestamp"
    if isinstance(value, bytes | bytearray | memoryview):
        return "bytes"
    if isinstance(value, decimal.Decimal):
        return "a Decimal"
    if isinstance(value, int):
        return "an integer"
    name = type(value).__name__
    return f"an {name}" if name[0].lower() in "aeiou" else f"a {name}"
