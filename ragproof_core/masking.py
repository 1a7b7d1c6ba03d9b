"""Secrets masked wherever they travel (CONTRACT section 28): the one rule that says which
names hold secrets, and the masker that writes each secret value as ``***``.

The rule (docs/errors.md, "Secrets in the config") is used for config keys
(``config.redaction``), for environment variable names (``environment_secrets``)
and by the judge's error masking alike, so it lives here, below every layer:

- a name is split into words at separators and camelCase humps and compared
  case-insensitively; it is a secret's name when a word is one of ``SECRET_WORDS``
  or ends with one of ``SECRET_ENDINGS`` (``apikey``, ``accesstoken``). So
  ``OPENAI_API_KEY``, ``openai_key``, ``X-Auth-Token``, ``creds`` and ``pwd`` are
  secrets' names; ``max_tokens``, ``tokenizer``, ``keys`` and ``author`` are not.

A ``Masker`` holds a run's secret values (6 characters or more: shorter ones would
mask ordinary words) and masks them in one pass over a string: the values are
compiled into a single regular expression shaped as a trie (common prefixes
factored out, a longer value tried before a value it begins with), so a search
costs at most the longest value's length at each position of the text, however
many values there are, and never one ``replace`` per value. ``re2_pattern`` is the
same expression for Arrow's compute functions (RE2), which mask stored columns.
It counts the strings it changed: a run says how many it masked.
"""

from __future__ import annotations

import dataclasses
import os
import re
import threading
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any

MASK = "***"
MIN_SECRET_CHARS = 6

SECRET_WORDS = frozenset(
    {
        "key",
        "token",
        "secret",
        "secrets",
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "bearer",
        "auth",
        "authorization",
        "authentication",
        "credential",
        "credentials",
        "cred",
        "creds",
        "cookie",
        "cookies",
        "signature",
        "sig",
    }
)
# A word made of several run together (``apikey``, ``authtoken``, ``oauth``).
SECRET_ENDINGS = ("key", "token", "secret", "password", "passwd", "pwd", "auth", "cookie")

_HUMP = re.compile(r"([a-z0-9])([A-Z])")
_WORD = re.compile(r"[a-z0-9]+")


def name_words(name: str) -> list[str]:
    """``X-Auth-Token`` -> ``["x", "auth", "token"]``; ``openaiKey`` -> ``["openai", "key"]``."""
    return _WORD.findall(_HUMP.sub(r"\1_\2", name).lower())


# The framework adapters' options that name a field of the pipeline's data ("key" as in a
# dict's key): their values are field names such as "answer" or "source_id", and masking
# them would rewrite every output holding that name (docs/adapters.md).
FIELD_NAME_OPTIONS = frozenset(
    {"id_key", "answer_key", "citations_key", "context_key", "history_key", "input_key"}
)


def is_secret_key(name: str) -> bool:
    """True when a key or variable of this name holds a secret (the module's rule)."""
    if name in FIELD_NAME_OPTIONS:
        return False
    return any(word in SECRET_WORDS or word.endswith(SECRET_ENDINGS) for word in name_words(name))


# The shell's working folders: "pwd" ends their names, but as print-working-directory, and
# masking them would hide every path under the folder a command runs in.
SHELL_FOLDER_VARIABLES = frozenset({"PWD", "OLDPWD"})


def environment_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of the environment variables whose names are secrets' names."""
    environ = os.environ if environ is None else environ
    return [
        value
        for name, value in environ.items()
        if name not in SHELL_FOLDER_VARIABLES and is_secret_key(name) and value
    ]


class Masker:
    """Writes each of ``secrets`` as ``***`` (the module docstring); thread-safe."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets = tuple(sorted({s for s in secrets if len(s) >= MIN_SECRET_CHARS}))
        self._pattern = re.compile(_trie(self.secrets, _escape)) if self.secrets else None
        self._lock = threading.Lock()
        self._masked = 0

    def __bool__(self) -> bool:
        """False when there is nothing to mask: callers skip the work entirely."""
        return self._pattern is not None

    @property
    def masked(self) -> int:
        """How many strings this masker changed so far."""
        return self._masked

    def fresh(self) -> Masker:
        """A masker of the same values counting from 0 (work that may be done again)."""
        return Masker(self.secrets)

    def count(self, strings: int) -> None:
        """Count ``strings`` masked elsewhere with ``re2_pattern`` (a stored column)."""
        if strings:
            with self._lock:
                self._masked += strings

    @property
    def re2_pattern(self) -> str:
        """The same expression in RE2's syntax (Arrow's ``replace_substring_regex``)."""
        return _trie(self.secrets, _escape_re2)

    def text(self, text: str) -> str:
        """``text`` with every secret value written as ``***``, in one pass."""
        if self._pattern is None or not text:
            return text
        masked, found = self._pattern.subn(MASK, text)
        if not found:
            return text  # the very object: a str subclass (an enum's value) stays one
        self.count(1)
        return masked

    def optional(self, text: str | None) -> str | None:
        return None if text is None else self.text(text)

    def value(self, value: Any, keep: frozenset[str] = frozenset()) -> Any:
        """A value with every string in it masked: JSON-like values (mappings, lists,
        tuples; keys included) and dataclasses (a case's output: its answer, chunks,
        steps), whose fields named in ``keep`` (ids that line it up) are left as they are.
        The input is left untouched; what holds no secret is returned as it is."""
        if self._pattern is None or isinstance(value, Enum):
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.value(k): self.value(v, keep) for k, v in value.items()}
        if isinstance(value, list | tuple):
            items = [self.value(item, keep) for item in value]
            if all(new is old for new, old in zip(items, value, strict=True)):
                return value
            return type(value)(items)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            changed = {}
            for field in dataclasses.fields(value):
                if field.name in keep:
                    continue
                old = getattr(value, field.name)
                new = self.value(old, keep)
                if new is not old:
                    changed[field.name] = new
            return dataclasses.replace(value, **changed) if changed else value
        return value


NO_SECRETS = Masker()


def secrets_line(masked: int) -> str | None:
    """What a run or an import that masked secret values says (``secrets: N strings
    masked``); None when it masked nothing, which is not said."""
    if not masked:
        return None
    return f"secrets: {masked} string{'' if masked == 1 else 's'} masked"


def _trie(secrets: Iterable[str], escape) -> str:
    """An expression matching any of ``secrets``, a longer one where two overlap."""
    root: dict[str, Any] = {}
    for secret in secrets:
        node = root
        for char in secret:
            node = node.setdefault(char, {})
        node[""] = {}  # a value ends here
    return _node_pattern(root, escape)


def _node_pattern(node: Mapping[str, Any], escape) -> str:
    """The alternatives that continue from ``node``, each single-child chain written out
    (a long token is one literal run, not one group per character)."""
    branches = []
    for char in sorted(c for c in node if c):
        chain, child = [escape(char)], node[char]
        while len(child) == 1 and "" not in child:
            ((char, child),) = child.items()
            chain.append(escape(char))
        rest = _node_pattern(child, escape) if child.keys() - {""} else ""
        if rest and "" in child:
            rest = f"(?:{rest})?"  # greedy: the longer value first
        branches.append("".join(chain) + rest)
    return branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"


def _escape(char: str) -> str:
    return re.escape(char)


def _escape_re2(char: str) -> str:
    if char.isascii() and not char.isalnum():
        return f"\\x{{{ord(char):02x}}}"
    return char
