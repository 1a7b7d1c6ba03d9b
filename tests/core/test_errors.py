"""One-line messages for validation errors: keys as written, values as written, one line."""

from __future__ import annotations

from ragproof_core.adapters.loading import AdapterLoadError
from ragproof_core.data.dataset import DatasetError
from ragproof_core.errors import (
    ConfigError,
    UserError,
    dotted,
    show_key,
    show_value,
    unknown_key_reason,
)
from ragproof_core.generate.attacks import GenerationError
from ragproof_core.store import InvalidRunId, RunNotFound, UnknownStatus


def test_values_are_shown_as_toml_and_json_write_them():
    assert [show_value(v) for v in (2.5, True, "5", None, [1, "a"], {"x": 1})] == [
        "2.5",
        "true",
        '"5"',
        "null",
        '[1, "a"]',
        '{"x": 1}',
    ]


def test_values_stay_on_one_short_line():
    assert show_value("a\nb\u2028c\x7f") == '"a\\nb\\u2028c\\x7f"'
    assert show_value("x" * 100) == '"' + "x" * 56 + "..."


def test_keys_are_bare_or_quoted():
    assert [show_key(k) for k in ("timeout_s", "source-match", "a b", "\n")] == [
        "timeout_s",
        "source-match",
        '"a b"',
        '"\\n"',
    ]
    assert dotted(("options", "path"), "adapter") == "adapter.options.path"
    assert dotted(("metrics", 0), "run") == "run.metrics[0]"


def test_unknown_keys_suggest_the_closest_name_or_list_them():
    known = ["k", "source_match", "concurrency"]
    assert unknown_key_reason("concurency", known) == "unknown key (did you mean 'concurrency'?)"
    assert unknown_key_reason("zzz", known, noun="field") == (
        "unknown field (known: concurrency, k, source_match)"
    )


def test_every_error_the_command_line_shows_as_one_line_is_a_user_error():
    # The command line tells these from bugs by this base alone (ragproof_cli/errors.py).
    shown = (
        ConfigError,
        DatasetError,
        AdapterLoadError,
        GenerationError,
        RunNotFound,
        InvalidRunId,
        UnknownStatus,
    )
    assert [issubclass(error, UserError) for error in shown] == [True] * len(shown)
    # Still what callers catch them as.
    assert issubclass(RunNotFound, KeyError) and issubclass(DatasetError, ValueError)
