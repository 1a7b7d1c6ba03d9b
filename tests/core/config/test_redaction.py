"""The redaction rule (``ragproof_core/config/redaction.py``, docs/errors.md) on its own."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragproof_core.config.redaction import (
    REDACTED,
    config_sha256,
    is_secret_key,
    redact,
    redact_text,
    redact_url,
)
from ragproof_core.masking import name_words


@pytest.mark.parametrize(
    "name",
    [
        "openai_key",
        "Ocp-Apim-Subscription-Key",
        "X-Auth-Token",
        "creds",
        "pwd",
        "bearer",
        "Authorization",
        "proxy-authentication",
        "Set-Cookie",
        "x-amz-signature",
        "apiKey",
        "APIKEY",
        "client_secret",
        "dbPassword",
        "db_passwd",
        "oauth",
        "accesstoken",
        "aws_credentials",
        "private_key_passphrase",
    ],
)
def test_names_that_hold_a_secret(name: str) -> None:
    assert is_secret_key(name)


@pytest.mark.parametrize(
    "name",
    ["max_tokens", "tokenizer", "keys", "author", "url", "headers", "timeout_s", "k", "model"],
)
def test_names_that_do_not(name: str) -> None:
    assert not is_secret_key(name)


def test_names_split_at_separators_and_humps() -> None:
    assert name_words("X-Auth-Token") == ["x", "auth", "token"]
    assert name_words("openaiKey") == ["openai", "key"]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://TOKEN@host/x", "https://***@host/x"),
        ("https://user:pw@host:8080/x?y=1", "https://user:***@host:8080/x?y=***"),
        ("http://h/a?api_key=s1&v=2&flag&empty=", "http://h/a?api_key=***&v=***&***&empty="),
        ("http://h/a?sig=s#frag", "http://h/a?sig=***#frag"),
        ("http://127.0.0.1:8000/answer", "http://127.0.0.1:8000/answer"),
        ("s3://bucket/prefix", "s3://bucket/prefix"),
    ],
)
def test_urls_lose_user_info_and_query_values(url: str, expected: str) -> None:
    assert redact_url(url) == expected


def test_urls_inside_text_are_redacted_and_the_rest_kept() -> None:
    assert redact_text("call https://t0k@host/a?k=v then 'http://h/?q=1' done") == (
        "call https://***@host/a?k=*** then 'http://h/?q=***' done"
    )


def test_redaction_walks_lists_and_tables_and_keeps_the_input() -> None:
    config = {
        "adapter": {
            "options": {
                "url": "http://tok@h/a?api_key=q",
                "headers": {"Ocp-Apim-Subscription-Key": "s1", "Accept": "application/json"},
                "creds": ["a", {"x": 1}],
                "nested": [{"deep": {"Cookie": "c"}}, ("https://u:p@h",)],
                "client_secret": None,
                "max_tokens": 512,
            }
        }
    }
    original = repr(config)
    assert redact(config) == {
        "adapter": {
            "options": {
                "url": "http://***@h/a?api_key=***",
                "headers": {"Ocp-Apim-Subscription-Key": REDACTED, "Accept": "application/json"},
                "creds": REDACTED,
                "nested": [{"deep": {"Cookie": REDACTED}}, ["https://u:***@h"]],
                "client_secret": None,
                "max_tokens": 512,
            }
        }
    }
    assert repr(config) == original


def test_the_config_hash_tells_apart_configs_that_differ_only_in_a_secret() -> None:
    a = {"adapter": {"options": {"headers": {"Authorization": "Bearer one"}}}, "k": 5}
    b = {"adapter": {"options": {"headers": {"Authorization": "Bearer two"}}}, "k": 5}
    assert redact(a) == redact(b)
    assert config_sha256(a) != config_sha256(b)
    assert config_sha256(a) == config_sha256({"k": 5, **a})


# --- linear time (issue 39, item 4) --------------------------------------------------------

# The pattern before issue 39, quadratic on a long run of letters: the reference for what
# a URL is, on texts small enough for it.
_QUADRATIC_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s\"'<>]+")


@given(st.text(alphabet="ab9+.-:/ ?=&@#\"'<>_Hé", max_size=40))
@settings(max_examples=500, deadline=None)
def test_the_linear_pattern_finds_the_urls_the_plain_one_finds(text: str) -> None:
    text = text.replace(":", "://", 1)
    expected = _QUADRATIC_URL.sub(lambda match: redact_url(match.group()), text)
    assert redact_text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "a" * 1_000_000,  # a status message of letters: hours before
        "see http://h/ " + "a" * 1_000_000,  # the pattern searches the whole run
        "a" * 1_000_000 + "://x?token=abc",  # one URL whose scheme is the whole run
        "9" * 500_000 + "a" * 500_000 + "://x",
    ],
    ids=["letters", "after-a-url", "one-long-scheme", "digits-then-letters"],
)
def test_redacting_a_megabyte_takes_seconds_not_hours(text: str) -> None:
    # A generous bound on CPU seconds (about 0.1 s here; hours before): no timing of a run.
    start = time.process_time()
    redacted = redact_text(text)
    assert time.process_time() - start < 20
    assert len(redacted) <= len(text)
    assert ("token=abc" in text) == ("token=***" in redacted)
