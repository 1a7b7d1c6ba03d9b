"""``ragproof run --dry-run``'s estimate on conversations (CONTRACT section 16, issue 21):
every turn's questions, and ``conversation.knowledge_retention``'s one per conversation of
two or more turns, counted whether the adapter is replayed or not called.

The fixture (tests/fixtures/dry_run_conversations) holds a single case s1 and
conversations c1 (2 turns), c2 (3 turns) and c3 (1 turn), with answer_relevance and
knowledge_retention selected: 1 + 2 + 3 + 1 = 7 answer_relevance questions and 2
knowledge_retention ones (c1, c2; a one-turn conversation makes no request). A pipeline
without ``history`` fails every turn, so only s1 asks.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from ragproof_core.config.settings import load_config
from ragproof_core.judge.environment import judge_environment
from ragproof_core.run.dry_run import estimate_run
from ragproof_core.run.preflight import preflight

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "dry_run_conversations"


@pytest.fixture
def judge_env(monkeypatch):
    monkeypatch.setenv("RAGPROOF_JUDGE_MODEL", "openai/gpt-4o-mini")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dry-run")
    return judge_environment()


def _estimate(config: str, cache: Path, metrics: list[str] | None = None):
    loaded = load_config(FIXTURE / config)
    if metrics is not None:
        loaded = replace(loaded, run=replace(loaded.run, metrics=tuple(metrics)))
    checked = preflight(loaded, FIXTURE / "cases.jsonl")
    return asyncio.run(estimate_run(checked.cases, loaded, checked.judge_env, cache))


@pytest.mark.parametrize(
    ("config", "questions"),
    [("recorded.toml", 7 + 2), ("live.toml", 7 + 2), ("no_history.toml", 1)],
)
def test_the_estimate_counts_every_turn_and_one_retention_request_per_conversation(
    config, questions, judge_env, tmp_path
):
    estimate = _estimate(config, tmp_path / "cache.duckdb")
    assert (estimate.requests, estimate.cached_requests, estimate.requests_to_send) == (
        questions,
        0,
        questions,
    )


@pytest.mark.parametrize("config", ["recorded.toml", "live.toml"])
def test_the_retention_requests_are_priced_into_the_estimate(config, judge_env, tmp_path):
    cache = tmp_path / "cache.duckdb"
    both = _estimate(config, cache)
    turns = _estimate(config, cache, ["generation.answer_relevance"])
    retention = _estimate(config, cache, ["conversation.knowledge_retention"])
    assert (turns.requests, retention.requests) == (7, 2)
    assert retention.estimated_cost_usd > 0
    assert both.estimated_cost_usd == pytest.approx(
        turns.estimated_cost_usd + retention.estimated_cost_usd, rel=1e-12
    )
