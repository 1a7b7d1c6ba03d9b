"""Runs and reports shared by the browser tests: made once per module with the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.browser import chromium, missing_reason
from tests.support.judge_server import JudgeServer
from tests.support.runs import Runs

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "tests" / "fixtures" / "recorded"
HOSTILE = REPO / "tests" / "fixtures" / "report"


def pytest_runtest_setup(item: pytest.Item) -> None:
    # Before any fixture: without a browser, neither the runs nor `dagster dev` are worth making.
    if "browser" in item.fixturenames:
        reason = missing_reason()
        if reason is not None:
            pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    # Module scope, not session: Playwright's sync API keeps an event loop running in
    # this thread while it is open, and in-process Dagster runs in later modules of the
    # same worker call asyncio.run(), which refuses to start inside a running loop.
    with chromium() as b:
        yield b


@pytest.fixture(scope="session")
def runs(tmp_path_factory) -> Runs:
    return Runs(tmp_path_factory.mktemp("browser-runs"))


@pytest.fixture(scope="session")
def hostile_run(runs: Runs) -> str:
    """The hostile fixture, judged by the local test judge (so claims are shown)."""
    with JudgeServer() as server:
        return runs.run(
            HOSTILE,
            "ragproof.toml",
            RAGPROOF_JUDGE_MODEL="openai/judge-test",
            RAGPROOF_JUDGE_API_BASE=server.url,
            OPENAI_API_KEY="sk-test-dummy",
            # A free judge, declared: an unpriced one's cost is shown as unknown.
            RAGPROOF_JUDGE_INPUT_COST_PER_MTOK="0",
        )


@pytest.fixture(scope="session")
def compared(runs: Runs) -> tuple[str, str, Path]:
    """The recorded fixture, good then worse; B's report against A."""
    good = runs.run(RECORDED, "ragproof.toml")
    worse = runs.run(RECORDED, "ragproof_worse.toml")
    return good, worse, runs.report(worse, "--against", good)
