"""One-line messages for pydantic validation errors (CONTRACT section 14).

Every declared schema (ragproof.toml tables, dataset rows, recorded-output
lines, environment settings) reports its first problem as
``KEY: what was expected, got VALUE``, where KEY is the dotted name a user
would write (``run.k``, ``adapter.options``, ``expected_source_ids[2]``) and an
unknown key names the closest known one. Callers add the file (and line).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError


class UserError(Exception):
    """Bad input whose message is already the one line a user needs (CONTRACT section
    14): the command line prints ``ragproof: MESSAGE`` and exits 1, where any other
    exception is a bug. Every such error derives from it, so the command line tells
    one from a bug without importing the modules that raise them (the store, Arrow,
    pandas: most of a second at every start)."""


class StoreFault(Exception):
    """The store (or ``DAGSTER_HOME``) cannot be read or written where a command needs it
    (CONTRACT section 29): the message is the one line ``the store ...`` (or
    ``DAGSTER_HOME ...``) naming the file, relative to the store, and the error; the
    command line exits 5. Never a bug, never bad input."""


class ConfigError(UserError, ValueError):
    """Bad configuration: the message names the file and the key."""


_MAX_VALUE_CHARS = 60

# pydantic error type -> what the user should have written.
_EXPECTED = {
    "int_type": "expected an integer",
    "int_parsing": "expected an integer",
    "int_from_float": "expected an integer",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
    "string_type": "expected a string",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "list_type": "expected a list",
    "tuple_type": "expected a list",
    "finite_number": "expected a finite number",
}
_UNKNOWN = ("unexpected_keyword_argument", "extra_forbidden")
_MISSING = ("missing", "missing_argument", "missing_keyword_only_argument")


def show_value(value: Any) -> str:
    """A value as the user wrote it (TOML and JSON agree on scalars), cut to one short line."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    # One line on any terminal: no raw control or separator characters.
    text = "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text
    )
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 3] + "..."


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def show_key(name: str) -> str:
    """A key as written: bare if TOML would write it bare, else quoted and escaped."""
    return name if _BARE_KEY.fullmatch(name) else show_value(name)


def _bound(value: Any) -> Any:
    # A float field's bound 0 reads as 0, not 0.0.
    return int(value) if isinstance(value, float) and value.is_integer() else value


def closest(name: str, known: Iterable[str]) -> str | None:
    matches = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return matches[0] if matches else None


def unknown_key_reason(name: str, known: Iterable[str], *, noun: str = "key") -> str:
    """``unknown key (did you mean 'target'?)`` or, with nothing close, the known names."""
    known = sorted(known)
    suggestion = closest(name, known)
    if suggestion is not None:
        return f"unknown {noun} (did you mean {suggestion!r}?)"
    return f"unknown {noun} (known: {', '.join(known)})"


def dotted(loc: Sequence[str | int], prefix: str = "") -> str:
    """``('options', 'path')`` under ``adapter`` -> ``adapter.options.path``; items as ``[i]``."""
    text = prefix
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text = f"{text}.{show_key(str(part))}" if text else show_key(str(part))
    return text


def describe(
    exc: ValidationError,
    *,
    prefix: str = "",
    known: Iterable[str] = (),
    mapping: str = "a table",
    noun: str = "key",
    rename: Mapping[str, str] | None = None,
) -> str:
    """The first error of ``exc`` as one line: ``run.k: expected an integer, got 2.5``.

    ``known`` are the field names at the top level, for unknown-key
    suggestions; ``mapping`` is how a mapping is called in the source format
    ("a table" in TOML, "a JSON object" in JSON Lines); ``rename`` maps a
    top-level field to the name the user wrote (an environment variable).
    """
    error = exc.errors(include_url=False)[0]
    loc = [part for part in error["loc"] if part != "__root__"]
    if rename and loc and loc[0] in rename:
        # E.g. a JudgeEnv field named by the environment variable that set it.
        loc[0] = rename[loc[0]]
    key = dotted(loc, prefix)
    kind = error["type"]
    value = error.get("input")
    ctx = error.get("ctx") or {}
    if kind in _UNKNOWN:
        name = str(loc[-1]) if loc else "?"
        return f"{key}: {unknown_key_reason(name, known, noun=noun)}"
    if kind in _MISSING:
        return f"{key}: missing required {noun}"
    if kind == "value_error":
        # Raised by our own checks, whose message already names what is wrong.
        # A check of the whole table (loc empty) names its key itself.
        reason = str(ctx.get("error", error["msg"]))
        return f"{key}: {reason}" if loc else reason
    if kind in _EXPECTED:
        reason = _EXPECTED[kind]
    elif kind in ("dict_type", "model_type", "dataclass_type"):
        reason = f"expected {mapping}"
    elif kind == "literal_error":
        reason = f"expected {ctx.get('expected', 'one of the allowed values')}"
    elif kind == "greater_than_equal":
        reason = f"must be at least {_bound(ctx['ge'])}"
    elif kind == "greater_than":
        reason = f"must be greater than {_bound(ctx['gt'])}"
    elif kind == "less_than_equal":
        reason = f"must be at most {_bound(ctx['le'])}"
    elif kind == "string_too_short":
        reason = "must not be empty"
    else:
        reason = error["msg"][0].lower() + error["msg"][1:]
    where = f"{key}: " if key else ""
    return f"{where}{reason}, got {show_value(value)}"
