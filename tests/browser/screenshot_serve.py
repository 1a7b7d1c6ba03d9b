"""Make the README's pictures of the results browser (docs/img/serve-*.png, label-*.png):
`ragproof serve` and `ragproof label` over three demo runs, as the browser tests' Chromium
draws them.

    .venv/bin/python -m tests.browser.screenshot_serve [--out docs/img]

The demo pipeline over the demo dataset (data/demo), default then strict
(data/demo/strict.toml) then default again, every judge metric scored by
tests/support/judge_server.py, in a temporary store; then `ragproof label` on the
first run's groundedness and screenshots of the runs list, the trend, the
comparison, and one case before and after the person's score.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from tests.support.browser import chromium
from tests.support.cli import REPO, cli_env, ragproof
from tests.support.judge_server import JudgeServer
from tests.support.served import ServedApp

DATASET = "data/demo/cases.jsonl"


def _run(env: dict[str, str], *config: str) -> str:
    done = ragproof("run", "--dataset", DATASET, *config, "--json", env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["run_id"]


def make(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    shots = []
    with tempfile.TemporaryDirectory() as tmp:
        env = cli_env(RAGPROOF_STORE=f"{tmp}/store", DAGSTER_HOME=f"{tmp}/dagster")
        with JudgeServer() as server:
            judged = {
                **env,
                "RAGPROOF_JUDGE_MODEL": "openai/judge-test",
                "RAGPROOF_JUDGE_API_BASE": server.url,
                "OPENAI_API_KEY": "sk-test-dummy",
                "RAGPROOF_JUDGE_INPUT_COST_PER_MTOK": "0",
            }
            first = _run(judged)
            strict = _run(judged, "--config", "data/demo/strict.toml")
            _run(judged)
        args = ("label", first, "--metric", "generation.groundedness", "--sample", "10")
        with ServedApp(*args, "--annotator", "ana", env=env) as app, chromium() as browser:
            page = browser.new_page(viewport={"width": 1280, "height": 820})

            def shot(name: str, path: str, full: bool = False) -> None:
                page.goto(app.url + path)
                page.wait_for_selector("body[data-ready='1']")
                shots.append(out / name)
                page.screenshot(path=str(out / name), full_page=full)

            shot("serve-runs.png", "/runs")
            shot("serve-trend.png", "/trends?dataset=" + DATASET)
            shot("serve-compare.png", f"/compare?a={first}&b={strict}")
            shot("label-case.png", "/")
            page.keyboard.press("3")
            page.wait_for_selector("body[data-label-state='scored']")
            page.locator("#verdict").scroll_into_view_if_needed()
            shots.append(out / "label-verdict.png")
            page.screenshot(path=str(out / "label-verdict.png"))
    return shots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "img")
    for path in make(parser.parse_args().out):
        print(path)


if __name__ == "__main__":
    main()
