"""Make docs/report.png: the report of the demo run, judged by the local test judge,
as the browser tests' Chromium draws it.

    .venv/bin/python -m tests.browser.screenshot [--out docs/report.png]

The demo pipeline over the demo dataset (data/demo), every judge metric scored by
tests/support/judge_server.py, in a temporary store; then `ragproof report` and a
screenshot of the page's top (header, metrics, the first worst case).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from tests.support.browser import chromium
from tests.support.cli import REPO, cli_env, ragproof
from tests.support.judge_server import JudgeServer


def make(out: Path) -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        env = cli_env(RAGPROOF_STORE=f"{tmp}/store", DAGSTER_HOME=f"{tmp}/dagster")
        with JudgeServer() as server:
            judged = {
                **env,
                "RAGPROOF_JUDGE_MODEL": "openai/judge-test",
                "RAGPROOF_JUDGE_API_BASE": server.url,
                "OPENAI_API_KEY": "sk-test-dummy",
            }
            done = ragproof("run", "--dataset", "data/demo/cases.jsonl", "--json", env=judged)
        assert done.returncode == 0, done.stderr
        run_id = json.loads(done.stdout)["run_id"]
        done = ragproof("report", run_id, env=env)
        assert done.returncode == 0, done.stderr
        with chromium() as browser:
            page = browser.new_page(viewport={"width": 1280, "height": 1500})
            page.goto(Path(done.stdout.strip()).as_uri())
            page.wait_for_selector("body[data-ready='1']")
            page.locator("tr[data-metric='retrieval.mrr']").click()
            page.evaluate("window.scrollTo(0, 0)")
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "report.png")
    print(make(parser.parse_args().out))


if __name__ == "__main__":
    main()
