"""Run identity (CONTRACT section 25): the name and tags a run is stored with, and its
config digest.

A name and tags are labels a team gives runs (``--name nightly``, ``--tag
branch=main``) to find and group them later; they change nothing a run does, so
they are not part of the config digest. The digest is what tells two runs' set-ups
apart: the sha256 of the resolved ``[run]`` settings (the metric selection as
names), the adapter target and the adapter options after redaction, so a rotated
secret does not change it while every setting that changes what the pipeline does
or how it is scored does. Runs with equal digests on the same dataset are one
series of the browser's trends.

Tag keys are restricted to what a Dagster run tag and a shell's ``KEY=VALUE`` take
without quoting; ``dagster/`` and ``ragproof/`` are left to the tags those two set.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ragproof_core.config.redaction import config_sha256, redact

# The [run] keys that label a run rather than set it up: left out of the digest.
IDENTITY_KEYS: tuple[str, ...] = ("name", "tags")

MAX_TEXT = 200
MAX_TAG_KEY = 63
_TAG_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-/]*")
RESERVED_TAG_PREFIXES = ("dagster/", "ragproof/")
# Shown in the runs table and the browser: enough to tell set-ups apart at a glance.
SHORT_DIGEST = 8


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be a run's name or a tag's value, or None."""
    if len(value) > MAX_TEXT:
        return f"at most {MAX_TEXT} characters, got {len(value)}"
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        return "no control characters (a line break, a tab)"
    return None


def tag_key_problem(key: str) -> str | None:
    """Why ``key`` cannot be a tag's key, or None."""
    if not key:
        return "a tag needs a key"
    if len(key) > MAX_TAG_KEY:
        return f"a tag key has at most {MAX_TAG_KEY} characters, got {len(key)}"
    if not _TAG_KEY.fullmatch(key):
        return f"tag key {key!r}: letters, digits and _ . - / only, starting with a letter or digit"
    if key.startswith(RESERVED_TAG_PREFIXES):
        return f"tag key {key!r}: the prefixes {' and '.join(RESERVED_TAG_PREFIXES)} are reserved"
    return None


def check_name(name: str | None) -> None:
    """``ValueError`` naming ``run.name`` when it cannot be a run's name."""
    if name is None:
        return
    if not name.strip():
        raise ValueError("run.name: expected a non-empty name")
    problem = text_problem(name)
    if problem:
        raise ValueError(f"run.name: {problem}")


def check_tags(tags: Mapping[str, str]) -> None:
    """``ValueError`` naming ``run.tags`` and the tag when a key or value is refused."""
    for key, value in tags.items():
        problem = tag_key_problem(key)
        if problem:
            raise ValueError(f"run.tags: {problem}")
        problem = text_problem(value)
        if problem:
            raise ValueError(f"run.tags.{key}: {problem}")


def parse_tag(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` (a flag's value) as a pair; ``ValueError`` saying what is wrong."""
    key, equals, value = text.partition("=")
    if not equals:
        raise ValueError(f"expected KEY=VALUE, got {text!r}")
    key = key.strip()
    problem = tag_key_problem(key) or text_problem(value)
    if problem:
        raise ValueError(problem)
    return key, value


def config_digest(run: Mapping[str, Any], adapter_target: str, options: Mapping[str, Any]) -> str:
    """sha256 of the run's set-up: ``run`` (the ``[run]`` table as stored, metric
    selection resolved to names) without its identity keys, the adapter target and the
    adapter options, secrets redacted (so a rotated key keeps the digest)."""
    settings = {key: value for key, value in run.items() if key not in IDENTITY_KEYS}
    return config_sha256(
        {"run": settings, "adapter": {"target": adapter_target, "options": redact(dict(options))}}
    )


def tags_text(tags: Mapping[str, str]) -> str:
    """``key=value`` pairs by key, comma-separated: how listings show a run's tags."""
    return ",".join(f"{key}={tags[key]}" for key in sorted(tags))
