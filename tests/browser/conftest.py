"""Runs and reports shared by the browser tests: made once per module with the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.browser import chromium
from tests.support.cli import cli_env, ragproof
from tests.support.judge_server import JudgeServer

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "tests" / "fixtures" / "recorded"
HOSTILE = REPO / "tests" / "fixtures" / "report"


@pytest.fixture(scope="session")
def browser():
    with chromium() as b:
        yield b


class Runs:
    """A store of its own, runs made by `ragproof run` and reports by `ragproof report`."""

    def __init__(self, root: Path) -> None:
        self.env = cli_env(
            RAGPROOF_STORE=str(root / "store"), DAGSTER_HOME=str(root / "dagster_home")
        )
        for name in ("RAGPROOF_JUDGE_MODEL", "RAGPROOF_JUDGE_API_BASE"):
            self.env.pop(name, None)

    def run(self, folder: Path, config: str, **extra: str) -> str:
        env = {**self.env, **extra}
        done = ragproof(
            "run",
            "--dataset",
            str(folder / "cases.jsonl"),
            "--config",
            str(folder / config),
            "--json",
            env=env,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["run_id"]

    def report(self, *args: str) -> Path:
        done = ragproof("report", *args, env=self.env)
        assert done.returncode == 0, done.stderr
        return Path(done.stdout.strip())


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
        )


@pytest.fixture(scope="session")
def compared(runs: Runs) -> tuple[str, str, Path]:
    """The recorded fixture, good then worse; B's report against A."""
    good = runs.run(RECORDED, "ragproof.toml")
    worse = runs.run(RECORDED, "ragproof_worse.toml")
    return good, worse, runs.report(worse, "--against", good)
