"""Make the README's pictures of the results browser (docs/img/serve-*.png, label-*.png):
`ragproof serve` and `ragproof label` over three demo runs, as the browser tests' Chromium
draws them.

    .venv/bin/python -m tests.browser.screenshot_serve [--out docs/img]

The demo pipeline over the demo dataset (data/demo), with its floors
(data/demo/ragproof.toml, named "main") then strict (data/demo/strict.toml) then
with its floors again, every judge metric scored by tests/support/judge_server.py,
in a temporary store; then `ragproof label` on the first run's groundedness and
screenshots of the runs list, the trend, the comparison, the first run's failing
cases and an injection it obeyed, and one case to label before and after the
person's score.
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
            gate = ("--config", "data/demo/ragproof.toml", "--tag", "branch=main")
            first = _run(judged, *gate, "--name", "main")
            strict = _run(judged, "--config", "data/demo/strict.toml", "--name", "strict")
            _run(judged, *gate, "--name", "main")
        obeyed = ragproof(
            "sql",
            f"SELECT case_id FROM case_results WHERE run_id = '{first}' AND value = 0 "
            "AND metric = 'robustness.injection_resistance' ORDER BY case_id LIMIT 1",
            "--json",
            env=env,
        )
        injection = json.loads(obeyed.stdout)[0]["case_id"]
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
            shot("serve-cases.png", f"/runs/{first}/cases?failing=1")
            shot("serve-case.png", f"/runs/{first}/case?id={injection}")
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
