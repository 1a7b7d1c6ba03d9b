"""Launch an evaluation from the Dagster UI exactly as README's clicks say, and see it finish.

`dagster dev` runs as a subprocess on a free loopback port, with its own
DAGSTER_HOME and RAGPROOF_STORE and the repository as working folder; its
whole process group is torn down afterwards.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tests.support.cli import REPO, cli_env

DAGSTER = Path(sys.executable).parent / "dagster"
CONFIG = """ops:
  request_evaluation:
    config:
      dataset: tests/fixtures/recorded/cases.jsonl
      config_file: tests/fixtures/recorded/ragproof.toml
"""
STARTUP_S = 240
RUN_S = 600
FINISHED = {"SUCCESS", "FAILURE", "CANCELED"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_until_serving(url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(
                f"dagster dev exited {proc.returncode}:\n{log.read_text()[-3000:]}"
            )
        try:
            with urllib.request.urlopen(f"{url}/server_info", timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1)
    raise AssertionError(f"dagster dev not serving after {STARTUP_S}s:\n{log.read_text()[-3000:]}")


@pytest.fixture
def dagster_dev(tmp_path):
    home, store = tmp_path / "dagster_home", tmp_path / "store"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    port = _free_port()
    env = cli_env(DAGSTER_HOME=str(home), RAGPROOF_STORE=str(store))
    env.pop("RAGPROOF_JUDGE_MODEL", None)
    log = tmp_path / "dagster_dev.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [str(DAGSTER), "dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_serving(url, proc, log)
        yield url, store, log
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _graphql(url: str, query: str, **variables) -> dict:
    body = json.dumps({"query": query, "variables": variables}).encode()
    request = urllib.request.Request(
        f"{url}/graphql", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as reply:
        return json.load(reply)["data"]


def _runs(url: str) -> dict[str, dict]:
    """Every run the instance has, by job name: {job: {"runId": ..., "status": ...}}."""
    data = _graphql(url, "{ runsOrError { ... on Runs { results { runId jobName status } } } }")
    return {run["jobName"]: run for run in data["runsOrError"]["results"]}


def _messages(url: str, run_id: str) -> str:
    """The run's event log messages, for a failure's explanation."""
    data = _graphql(
        url,
        "query($runId: ID!) { logsForRun(runId: $runId) { ... on EventConnection "
        "{ events { ... on MessageEvent { message } } } } }",
        runId=run_id,
    )
    events = data["logsForRun"].get("events", [])
    return "\n".join(e.get("message") or "" for e in events[-40:])


def _wait_for_evaluate(url: str, log: Path) -> dict:
    """The evaluate run once it has finished; a clear account of where it stood if not."""
    deadline = time.monotonic() + RUN_S
    runs: dict[str, dict] = {}
    while time.monotonic() < deadline:
        runs = _runs(url)
        evaluate = runs.get("evaluate")
        if evaluate and evaluate["status"] in FINISHED:
            return evaluate
        time.sleep(2)
    where = "\n".join(
        f"{job}: {run['status']}\n{_messages(url, run['runId'])}" for job, run in runs.items()
    )
    raise AssertionError(
        f"no finished evaluate run after {RUN_S}s:\n{where}\n{log.read_text()[-3000:]}"
    )


def _click_until(target, shown, *, first_timeout_s: float = 60, attempts: int = 3) -> None:
    """Click ``target`` until ``shown`` appears. Dagster's newsletter dialog may pop
    up over the page at any moment; the Skip handler closes it, but a click it
    swallowed must be made again."""
    for attempt in range(1, attempts + 1):
        if attempt == 1 or target.is_visible():
            target.click(timeout=first_timeout_s * 1000)
        try:
            shown.wait_for(timeout=30_000)
            return
        except PlaywrightTimeoutError:
            if attempt == attempts:
                raise


# The longest test of all: scheduled before every other (tests/conftest.py).
@pytest.mark.slow(weight=3)
def test_launch_an_evaluation_from_the_ui_and_see_it_finish(browser, dagster_dev):
    url, store, log = dagster_dev
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(60_000)
    # A fresh Dagster home greets with a newsletter dialog, whenever it likes: Skip it.
    skip = page.get_by_role("button", name="Skip")
    page.add_locator_handler(skip, lambda button: button.click())
    page.goto(url)
    # README: Jobs -> launch_evaluation -> Launchpad -> (edit the form) -> Launch Run.
    # Not the launch_evaluation_sensor, which the Jobs page links too.
    job = page.get_by_role("link", name=re.compile(r"launch_evaluation(?!_sensor)")).first
    launchpad = page.get_by_role("tab", name="Launchpad")
    editor = page.locator(".CodeMirror").first
    _click_until(page.get_by_role("link", name="Jobs").first, job, first_timeout_s=STARTUP_S)
    _click_until(job, launchpad)
    _click_until(launchpad, editor)
    assert "dataset: data/demo/cases.jsonl" in editor.inner_text()  # the default form
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(CONFIG)
    page.get_by_role("button", name="Launch Run").click()
    page.wait_for_url("**/runs/*")

    # The sensor starts the partitioned `evaluate` run. Its progress is read from
    # the webserver's GraphQL API (what the UI itself reads), so a slow machine
    # waits longer instead of failing on a page that has not refreshed yet.
    evaluate = _wait_for_evaluate(url, log)
    assert evaluate["status"] == "SUCCESS", _messages(url, evaluate["runId"])
    assert _runs(url)["launch_evaluation"]["status"] == "SUCCESS"

    # What a person sees: the Runs page lists both runs, marked Success (its rows
    # are not table rows: wait for the target links and a second status badge).
    page.get_by_role("link", name="Runs").first.click()
    page.get_by_role("link", name="evaluate", exact=True).first.wait_for()
    page.get_by_role("link", name="launch_evaluation", exact=True).first.wait_for()
    page.get_by_text("Success", exact=True).nth(1).wait_for()
    assert page.get_by_text("Failure", exact=True).count() == 0

    finished = [p.parent.name for p in (store / "runs").glob("*/run.parquet")]
    finished.remove("_schema")  # the zero-row schema files, not a run
    assert len(finished) == 1
    assert (store / "runs" / finished[0] / "report.html").is_file()
    page.close()
