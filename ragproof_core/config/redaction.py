"""Secrets out of everything a run writes: the config as stored and shown.

A rule, not a list of header names (docs/errors.md, "Secrets in the config"):

- a key whose name holds a secret word is stored as ``REDACTED`` whatever its
  value (a string, a list, a table). Which names hold secrets is the one rule of
  ``ragproof_core.masking`` (``is_secret_key``), the same for environment
  variables and the judge's error masking: ``openai_key``,
  ``Ocp-Apim-Subscription-Key``, ``X-Auth-Token``, ``creds`` and ``pwd`` are
  redacted; ``max_tokens``, ``tokenizer``, ``keys`` and ``author`` are kept;
- in every string, each URL loses its user info (``https://TOKEN@host`` ->
  ``https://***@host``; ``https://user:pw@host`` -> ``https://user:***@host``)
  and every query-string value (``?api_key=X&v=2`` -> ``?api_key=***&v=***``);
- lists and tables are walked to any depth.

The run's ``config_sha256`` is taken from the unredacted values (``config_sha256``),
so two runs that differ only in a secret still have different configs.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from ragproof_core.masking import MASK, is_secret_key

REDACTED = MASK

# A URL: a scheme (a letter, then letters, digits, "+", "." or "-"), "://", and what
# follows up to a space, a quote or an angle bracket. Written so a search is linear in the
# text: a match is tried only where a run of scheme characters starts (the lookbehind),
# the run's leading non-letters and its scheme are taken possessively, and only the
# scheme (group "url") is masked. The plain pattern tried every letter of a long run of
# letters as a scheme's start, each trial scanning the rest of the run: quadratic (a
# 200 KB status message, a minute; 1 MB, hours).
_URL = re.compile(
    r"(?<![A-Za-z0-9+.\-])[0-9+.\-]*+(?P<url>[A-Za-z][A-Za-z0-9+.\-]*+://[^\s\"'<>]+)"
)


def _redact_query_part(part: str) -> str:
    name, equals, value = part.partition("=")
    if equals:
        return f"{name}={REDACTED}" if value else part
    return REDACTED if name else part


def redact_url(url: str) -> str:
    """``url`` without its user info's secret part and with every query value masked."""
    scheme, _, rest = url.partition("://")
    ends = [i for i in (rest.find(c) for c in "/?#") if i >= 0]
    cut = min(ends, default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    if "@" in authority:
        userinfo, host = authority.rsplit("@", 1)
        user, colon, _ = userinfo.partition(":")
        authority = f"{user}:{REDACTED}@{host}" if colon else f"{REDACTED}@{host}"
    path, question, query = tail.partition("?")
    if question:
        query, hash_, fragment = query.partition("#")
        masked = "&".join(_redact_query_part(part) for part in query.split("&"))
        tail = f"{path}?{masked}{hash_}{fragment}"
    return f"{scheme}://{authority}{tail}"


def _redact_match(match: re.Match[str]) -> str:
    start = match.start("url") - match.start()
    return match.group()[:start] + redact_url(match.group("url"))


def find_urls(text: str) -> list[str]:
    """Every URL in ``text``, as ``redact_text`` finds them."""
    if "://" not in text:
        return []
    return [match.group("url") for match in _URL.finditer(text)]


def redact_text(text: str) -> str:
    """Every URL in ``text`` redacted (``redact_url``); the rest kept. Linear in the text."""
    if "://" not in text:  # most strings: no URL, and no pass of the pattern
        return text
    return _URL.sub(_redact_match, text)


def redact(value: Any) -> Any:
    """A copy of a JSON-like value with the rule applied; the input is left untouched."""
    if isinstance(value, Mapping):
        return {
            key: REDACTED
            if is_secret_key(str(key)) and value[key] is not None
            else redact(value[key])
            for key in value
        }
    if isinstance(value, list | tuple):
        return [redact(item) for item in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


def config_sha256(config: Any) -> str:
    """The hash of a config's unredacted values, keys sorted: equal configs, equal hashes."""
    text = json.dumps(config, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()
