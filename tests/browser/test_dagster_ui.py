"""Launch an evaluation from the Dagster UI exactly as README's clicks say, and see it finish;
then check, through the webserver's GraphQL API (what the UI's pages query), what a
person sees of UI and command-line runs.

`dagster dev` runs as a subprocess on a free loopback port, with its own
DAGSTER_HOME and RAGPROOF_STORE and the repository as working folder; its
whole process group is torn down afterwards. One webserver serves every check.
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

from ragproof_assets.evaluation.dataset_scores import dataset_scores_key
from ragproof_assets.evaluation.run_tags import EVALUATE_RUN_TAG, LAUNCHED_BY_TAG, RUN_ID_TAG
from ragproof_cli.execution import CODE_LOCATION
from ragproof_cli.instance import dagster_yaml
from ragproof_core.config.settings import RUN_KEYS
from tests.support.cli import REPO, cli_env
from tests.support.judge_server import JudgeServer
from tests.support.runs import Runs

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
RECORDED = REPO / "tests" / "fixtures" / "recorded"
REGRESSION = REPO / "tests" / "fixtures" / "regression"
SERVE_URL = "http://127.0.0.1:8765"
REPOSITORY = "__repository__"  # the one repository of a Definitions code location
# What the Launchpad's form offers for launch_evaluation: the keys the README names, no internals.
FORM_KEYS = {
    *("dataset", "config_file", "adapter", "adapter_options_json", "no_cache", "judge_repeats"),
    *RUN_KEYS,
}
# Judge prices whose per-call costs do not add up exactly in binary floating point.
INPUT_PRICE, OUTPUT_PRICE = 1.1, 2.3
CALL_COST = (100 * INPUT_PRICE + 20 * OUTPUT_PRICE) / 1e6  # the judge server's usage: 100, 20
COUNTS = ("cases", "case_failures", "judge_requests", "judge_repairs", "judge_cache_hits")


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
    # The home `ragproof run` would create: its step logs are kept by ragproof's manager.
    (home / "dagster.yaml").write_text(dagster_yaml(home))
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
        body = json.load(reply)
    assert not body.get("errors"), body["errors"]
    return body["data"]


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


def _step_logs(url: str, run_id: str, step: str) -> dict[str, str]:
    """A step's captured stdout and stderr as the UI's log viewer reads them."""
    data = _graphql(
        url,
        "query($runId: ID!) { logsForRun(runId: $runId) { ... on EventConnection "
        "{ events { ... on LogsCapturedEvent { fileKey stepKeys } } } } }",
        runId=run_id,
    )
    (file_key,) = {
        e["fileKey"] for e in data["logsForRun"]["events"] if step in (e.get("stepKeys") or [])
    }
    logs = _graphql(
        url,
        "query($key: [String!]!) { capturedLogs(logKey: $key) { stdout stderr } }",
        key=[run_id, "compute_logs", file_key],
    )
    return logs["capturedLogs"]


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
def _launchpad_form(url: str) -> dict[str, dict]:
    """The fields of launch_evaluation's form as the Launchpad reads them (its config schema)."""
    data = _graphql(
        url,
        "query($s: PipelineSelector!) { runConfigSchemaOrError(selector: $s) { "
        "... on RunConfigSchema { allConfigTypes { key ... on CompositeConfigType "
        "{ fields { name description isRequired defaultValueAsJson } } } } } }",
        s={
            "pipelineName": "launch_evaluation",
            "repositoryName": REPOSITORY,
            "repositoryLocationName": CODE_LOCATION,
        },
    )
    types = data["runConfigSchemaOrError"]["allConfigTypes"]
    (form,) = [
        t["fields"] for t in types if {"dataset", "k"} <= {f["name"] for f in t.get("fields", [])}
    ]
    return {field["name"]: field for field in form}


def test_launch_an_evaluation_from_the_ui_and_see_it_finish(browser, dagster_dev):
    url, store, log = dagster_dev
    # The Launchpad's form: the user's keys, each with a description giving its default,
    # none required, and no internals (issue 26: prechecked and progress were shown).
    form = _launchpad_form(url)
    assert set(form) == FORM_KEYS
    assert not {"prechecked", "progress"} & set(form)
    assert all(f["description"] and not f["isRequired"] for f in form.values())
    assert "default 5" in form["k"]["description"]
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
    # The step's own log, kept by ragproof's compute log manager, is what the UI shows.
    dataset_logs = _step_logs(url, evaluate["runId"], "eval_dataset")
    assert 'Started execution of step "eval_dataset"' in dataset_logs["stderr"]

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

    # The launch and the evaluation it started lead to each other.
    launcher = _runs(url)["launch_evaluation"]["runId"]
    evaluate_tags, launcher_tags = _tags(url, evaluate["runId"]), _tags(url, launcher)
    assert evaluate_tags[LAUNCHED_BY_TAG] == launcher
    assert launcher_tags[EVALUATE_RUN_TAG] == evaluate["runId"]
    assert evaluate_tags[RUN_ID_TAG] == launcher_tags[RUN_ID_TAG] == finished[0]
    # Without RAGPROOF_SERVE_URL the report is a path to copy, not a file:// link.
    ui_summary = _materialization(url, "run_summary", finished[0])
    assert ui_summary["report"] == (
        "PathMetadataEntry",
        str(store / "runs" / finished[0] / "report.html"),
    )
    assert "report_url" not in ui_summary

    _check_command_line_runs(url, store, ui_run=(finished[0], evaluate["runId"]))


def _tags(url: str, run_id: str) -> dict[str, str]:
    data = _graphql(
        url,
        "query($runId: ID!) { runOrError(runId: $runId) { ... on Run { tags { key value } } } }",
        runId=run_id,
    )
    return {t["key"]: t["value"] for t in data["runOrError"]["tags"]}


_METADATA = """metadataEntries { __typename label
  ... on PathMetadataEntry { path } ... on UrlMetadataEntry { url }
  ... on TextMetadataEntry { text } ... on IntMetadataEntry { intValue }
  ... on FloatMetadataEntry { floatValue } }"""


def _entries(event: dict) -> dict[str, tuple[str, object]]:
    """An event's metadata: {label: (entry type, value)}."""
    out = {}
    for entry in event["metadataEntries"]:
        kind = entry["__typename"]
        value = next(
            (entry[f] for f in ("path", "url", "text", "intValue", "floatValue") if f in entry),
            None,
        )
        out[entry["label"]] = (kind, value)
    return out


def _materialization(url: str, asset: str, partition: str) -> dict[str, tuple[str, object]]:
    data = _graphql(
        url,
        "query($key: AssetKeyInput!, $p: [String!]) { assetOrError(assetKey: $key) { ... on Asset "
        f"{{ assetMaterializations(partitions: $p) {{ {_METADATA} }} }} }} }}",
        key={"path": [asset]},
        p=[partition],
    )
    (event,) = data["assetOrError"]["assetMaterializations"]
    return _entries(event)


def _check_command_line_runs(url: str, store: Path, ui_run: tuple[str, str]) -> None:
    """`ragproof run` into the UI's Dagster home: the runs show on the Overview timeline
    and in the evaluate job's run history as UI runs do, with clean numbers, links to the
    results browser, and one plot series per dataset."""
    runs = Runs(store.parent)  # the same Dagster home and store as `dagster dev`
    with JudgeServer(usage=(100, 20)) as judge:
        judged = runs.run_json(
            RECORDED,
            "ragproof.toml",
            RAGPROOF_SERVE_URL=SERVE_URL,
            RAGPROOF_JUDGE_MODEL="openai/judge-test",
            RAGPROOF_JUDGE_API_BASE=judge.url,
            OPENAI_API_KEY="sk-test",
            RAGPROOF_JUDGE_INPUT_COST_PER_MTOK=str(INPUT_PRICE),
            RAGPROOF_JUDGE_OUTPUT_COST_PER_MTOK=str(OUTPUT_PRICE),
        )
    other = runs.run_json(REGRESSION, "ragproof_good.toml", RAGPROOF_SERVE_URL=SERVE_URL)
    cli_runs = {r["run_id"]: _dagster_run(url, r["run_id"]) for r in (judged, other)}

    # The Overview timeline (CompletedRunTimelineQuery) drops runs without a
    # repository origin; CLI runs now carry the same one as the UI's run.
    data = _graphql(
        url,
        "query($f: RunsFilter!) { runsOrError(filter: $f) { ... on Runs { results { id "
        "pipelineName startTime endTime repositoryOrigin { repositoryName repositoryLocationName } "
        "} } } }",
        f={"statuses": sorted(FINISHED)},
    )
    results = {r["id"]: r for r in data["runsOrError"]["results"]}
    origins = {run_id: r["repositoryOrigin"] for run_id, r in results.items()}
    assert all(results[d]["startTime"] and results[d]["endTime"] for d in cli_runs.values())
    expected = {"repositoryName": REPOSITORY, "repositoryLocationName": CODE_LOCATION}
    assert origins[ui_run[1]] == expected
    assert all(origins[d] == expected for d in cli_runs.values())
    # The Jobs page's history bars (SingleJobQuery): the job's last five runs.
    data = _graphql(
        url,
        "query($s: PipelineSelector!) { pipelineOrError(params: $s) { ... on Pipeline "
        "{ runs(limit: 5) { id } } } }",
        s={
            "pipelineName": "evaluate",
            "repositoryName": REPOSITORY,
            "repositoryLocationName": CODE_LOCATION,
        },
    )
    history = {r["id"] for r in data["pipelineOrError"]["runs"]}
    assert history == {ui_run[1], *cli_runs.values()}

    # Numbers: money to a millionth of a dollar, counts as integers, here and in --json.
    summary = _materialization(url, "run_summary", judged["run_id"])
    kind, requests = summary["judge_requests"]
    assert kind == "IntMetadataEntry" and requests > 0
    assert summary["cost_usd"] == ("FloatMetadataEntry", round(requests * CALL_COST, 6))
    assert judged["judge"]["cost_usd"] == summary["cost_usd"][1]
    assert {summary[c][0] for c in COUNTS} == {"IntMetadataEntry"}
    verdicts = _materialization(url, "judge_verdicts", judged["run_id"])
    assert verdicts["cost_usd"] == summary["cost_usd"]
    # The report and the run's page in the results browser (RAGPROOF_SERVE_URL).
    run_page = f"{SERVE_URL}/runs/{judged['run_id']}"
    assert summary["run_page"] == ("UrlMetadataEntry", run_page)
    assert summary["report_url"] == ("UrlMetadataEntry", f"{run_page}/report")
    assert summary["report"] == (
        "PathMetadataEntry",
        str(store / "runs" / judged["run_id"] / "report.html"),
    )

    # Plots: one asset per dataset; the UI's and the CLI's runs of the recorded
    # fixture on one, the 20-case regression fixture's run alone on another.
    series = {
        folder: _observed_runs(
            url, dataset_scores_key(str((folder / "cases.jsonl").relative_to(REPO))).path
        )
        for folder in (RECORDED, REGRESSION)
    }
    assert series == {RECORDED: {ui_run[0], judged["run_id"]}, REGRESSION: {other["run_id"]}}


def _dagster_run(url: str, run_id: str) -> str:
    """The Dagster run id of the evaluation run ``run_id`` (its ragproof/run_id tag)."""
    data = _graphql(
        url,
        "query($f: RunsFilter!) { runsOrError(filter: $f) { ... on Runs { results { id } } } }",
        f={"tags": [{"key": RUN_ID_TAG, "value": run_id}]},
    )
    (run,) = data["runsOrError"]["results"]
    return run["id"]


def _observed_runs(url: str, key: list[str]) -> set[str]:
    """The evaluation runs plotted on an asset: its observations' run ids."""
    data = _graphql(
        url,
        "query($key: AssetKeyInput!) { assetOrError(assetKey: $key) { ... on Asset "
        f"{{ assetObservations {{ {_METADATA} }} }} }} }}",
        key={"path": key},
    )
    return {_entries(e)["run_id"][1] for e in data["assetOrError"]["assetObservations"]}
