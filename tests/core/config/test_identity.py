"""Run identity (CONTRACT section 25): names, tags and the config digest."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from ragproof_core.config.identity import config_digest, parse_tag, tags_text
from ragproof_core.config.settings import (
    AdapterSpec,
    Config,
    ConfigError,
    RunSettings,
    load_config,
    run_settings_dict,
)
from ragproof_core.store.schema import RunRecord

RECORDED = "ragproof_core.adapters.recorded:RecordedAdapter"
T0 = datetime(2026, 12, 1, tzinfo=UTC)


def _digest(config: Config) -> str:
    """The digest a run of ``config`` stores (``RunManifest.config_digest``, pinned equal
    to this in tests/core/config/test_manifest.py)."""
    run = run_settings_dict(config.run, config.custom_names)
    return config_digest(run, config.adapter.target, config.adapter.options)


BASE = Config(RunSettings(k=5), AdapterSpec(RECORDED, {"path": "/o.jsonl", "api_key": "sk-1"}))


def test_digest_is_equal_for_equal_settings_whatever_the_name_tags_and_secrets():
    digest = _digest(BASE)
    assert len(digest) == 64 and digest == _digest(BASE)
    labelled = BASE.with_overrides(name="nightly", tags={"branch": "main"})
    rotated = BASE.with_overrides(options={"path": "/o.jsonl", "api_key": "sk-2"})
    # A pattern is resolved to names first: the same selection, the same digest.
    spelled = BASE.with_overrides(metrics=("retrieval.*",))
    listed = BASE.with_overrides(
        metrics=(
            "retrieval.precision_at_k",
            "retrieval.recall_at_k",
            "retrieval.mrr",
            "retrieval.ndcg_at_k",
            "retrieval.context_relevance",
            "retrieval.judged_ndcg_at_k",
            "retrieval.hop_recall_at_k",
            "retrieval.hop_precision_at_k",
        )
    )
    assert _digest(labelled) == digest
    assert _digest(rotated) == digest
    assert _digest(spelled) == _digest(listed)


@pytest.mark.parametrize(
    "change",
    [
        {"k": 3},
        {"metrics": ("retrieval.*",)},
        {"options": {"path": "/other.jsonl", "api_key": "sk-1"}},
        {"adapter": "ragproof_core.adapters.demo:DemoRAG"},
        {"source_match": "document"},
    ],
)
def test_digest_changes_with_k_the_metrics_and_the_adapter(change):
    assert _digest(BASE.with_overrides(**change)) != _digest(BASE)


def test_digest_is_the_sha256_of_the_settings_as_stored():
    run = {"k": 5, "metrics": ["echo.exact_match"], "name": "x", "tags": {"a": "b"}}
    assert config_digest(run, "m:A", {"token": "t"}) == config_digest(
        {"k": 5, "metrics": ["echo.exact_match"]}, "m:A", {"token": "other"}
    )


def test_name_and_tags_from_the_config_file_and_overrides(tmp_path):
    path = tmp_path / "ragproof.toml"
    path.write_text('[run]\nname = "nightly"\n\n[run.tags]\nteam = "search"\nbranch = "main"\n')
    config = load_config(path)
    assert (config.run.name, config.run.tags) == ("nightly", {"team": "search", "branch": "main"})
    # Tags given beside the file join its tags; a key given both ways takes the override.
    merged = config.with_overrides(name="pr-12", tags={"branch": "pr-12", "commit": "abc"})
    assert merged.run.name == "pr-12"
    assert merged.run.tags == {"team": "search", "branch": "pr-12", "commit": "abc"}
    assert tags_text(merged.run.tags) == "branch=pr-12,commit=abc,team=search"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"name": ""}, "run.name: expected a non-empty name"),
        ({"name": "a\nb"}, "run.name: no control characters (a line break, a tab)"),
        ({"name": 5}, "run.name: expected a string, got 5"),
        ({"tags": {"": "x"}}, "run.tags: a tag needs a key"),
        ({"tags": {"a b": "x"}}, "run.tags: tag key 'a b': letters, digits"),
        ({"tags": {"dagster/x": "x"}}, "run.tags: tag key 'dagster/x': the prefixes"),
        ({"tags": {"team": 3}}, "run.tags.team: expected a string, got 3"),
        ({"tags": {"team": "x" * 201}}, "run.tags.team: at most 200 characters, got 201"),
    ],
)
def test_bad_names_and_tags_are_one_line_naming_the_key(settings, message):
    with pytest.raises(ConfigError) as err:
        RunSettings(**settings)
    assert str(err.value).startswith(message)


def test_a_flag_tag_is_key_equals_value():
    assert parse_tag("team=search") == ("team", "search")
    assert parse_tag("expr=a=b") == ("expr", "a=b")
    assert parse_tag("empty=") == ("empty", "")
    for bad, reason in (("team", "expected KEY=VALUE"), ("=x", "a tag needs a key")):
        with pytest.raises(ValueError, match=reason):
            parse_tag(bad)


def test_records_match_by_name_and_every_tag_given():
    record = RunRecord(
        "r",
        "d",
        "a",
        "completed",
        T0,
        T0,
        None,
        {},
        "{}",
        None,
        1,
        0,
        0,
        0,
        name="nightly",
        tags={"team": "search", "branch": "main"},
    )
    assert record.matches() and record.matches("nightly", {"team": "search"})
    assert not record.matches("weekly")
    assert not record.matches(None, {"team": "search", "branch": "pr"})
    assert dataclasses.replace(record, name=None).matches(None, {"branch": "main"})
