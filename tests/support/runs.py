"""A store of its own for a test module or session, filled by the real `ragproof run`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import cli_env, ragproof


class Runs:
    """A store of its own, runs made by `ragproof run` and reports by `ragproof report`."""

    def __init__(self, root: Path) -> None:
        self.env = cli_env(
            RAGPROOF_STORE=str(root / "store"), DAGSTER_HOME=str(root / "dagster_home")
        )
        for name in ("RAGPROOF_JUDGE_MODEL", "RAGPROOF_JUDGE_API_BASE"):
            self.env.pop(name, None)

    def run(self, folder: Path, config: str, **extra: str) -> str:
        return self.run_json(folder, config, **extra)["run_id"]

    def run_judged(self, folder: Path, config: str, judge_url: str) -> str:
        """A run judged by the local test judge server at ``judge_url`` (free, declared)."""
        return self.run(
            folder,
            config,
            RAGPROOF_JUDGE_MODEL="openai/judge-test",
            RAGPROOF_JUDGE_API_BASE=judge_url,
            OPENAI_API_KEY="sk-test-dummy",
            RAGPROOF_JUDGE_INPUT_COST_PER_MTOK="0",
        )

    def run_json(self, folder: Path, config: str, **extra: str) -> dict:
        """What `ragproof run --json` printed."""
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
        return json.loads(done.stdout)

    def report(self, *args: str) -> Path:
        done = ragproof("report", *args, env=self.env)
        assert done.returncode == 0, done.stderr
        return Path(done.stdout.strip())

    @property
    def store(self) -> Path:
        return Path(self.env["RAGPROOF_STORE"])
