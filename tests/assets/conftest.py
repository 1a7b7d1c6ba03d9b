"""Fixtures the CLI tests share: the local scripted judge and a judged run's environment,
and the 20-case dataset whose good and bad recorded outputs make a clear regression."""

from __future__ import annotations

import json

import pytest

from tests.support.cli import cli_env
from tests.support.judge_server import JudgeServer


@pytest.fixture(scope="module")
def server():
    """One judge server per test module, reporting usage (100 in, 20 out) per request."""
    with JudgeServer(usage=(100, 20)) as srv:
        yield srv


@pytest.fixture
def judge_env(server, store_path):
    """The command's environment for a run judged by ``server``, whose counts start at 0."""
    server.reset()
    return cli_env(
        RAGPROOF_JUDGE_MODEL="openai/judge-test",
        RAGPROOF_JUDGE_API_BASE=server.url,
        OPENAI_API_KEY="sk-test",
        # The local judge is free, and says so: an unpriced judge's cost is unknown, not $0.
        RAGPROOF_JUDGE_INPUT_COST_PER_MTOK="0",
    )


@pytest.fixture
def regression_fixture(tmp_path):
    """``tmp_path`` holding 20 cases (``cases.jsonl``); ``good.jsonl`` retrieves each
    expected source first, ``bad.jsonl`` never does."""
    cases, good, bad = [], [], []
    for i in range(20):
        cases.append(
            {"id": f"q{i}", "question": f"question {i}?", "expected_source_ids": [f"d{i}"]}
        )
        good.append(
            {
                "case_id": f"q{i}",
                "retrieve": [{"id": f"d{i}", "text": "t"}],
                "answer": {"text": "a"},
            }
        )
        bad.append(
            {
                "case_id": f"q{i}",
                "retrieve": [{"id": "other", "text": "t"}],
                "answer": {"text": "a"},
            }
        )
    for name, rows in (("cases", cases), ("good", good), ("bad", bad)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path
