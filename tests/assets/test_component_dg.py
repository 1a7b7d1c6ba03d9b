"""ragproof in a team's own Dagster project, as the team meets it (CONTRACT section 30):
the real ``dg`` lists and scaffolds the component, and the real ``dagster-daemon``,
serving the project beside ragproof's own code location in one workspace, starts
exactly one evaluation after ``dagster asset materialize`` of the project's
``vector_index``; that run's numbers are ``ragproof run``'s."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import dagster as dg
import pytest

from ragproof_assets.component.scaffold import STARTER_CASES
from ragproof_core.present.summary import summary_dict
from ragproof_core.store.run_store import RunStore
from tests.conftest import REPO
from tests.support.cli import ragproof
from tests.support.dagster_project import (
    DAEMON,
    DAGSTER,
    PACKAGE,
    defs_folder,
    dg_command,
    new_home,
    project_env,
    write_project,
    write_workspace,
)

pytestmark = pytest.mark.slow

ON_DEPS = """\
    type: ragproof_assets.EvaluationSuite
    attributes:
      name: support_bot
      dataset: cases.jsonl
      config_file: ragproof.toml
      deps: [vector_index]
      automation: on_deps
      store: ../../../../store
      # 2 of the fixture's 6 cases fail: the blocking failure_rate check lets them by.
      max_failure_share: 0.5
    """
CRON = """\
    type: ragproof_assets.EvaluationSuite
    attributes:
      name: weekly
      dataset: cases.jsonl
      config_file: ragproof.toml
      automation: "0 3 * * MON"
      timezone: Europe/Paris
      store: ../../../../store
    """
# ragproof's own location beside the project: two suites of its own, one on a cron.
SUITES_TOML = """\
[[suite]]
name = "demo"
dataset = "data/demo/cases.jsonl"
cron = "0 4 * * *"

[[suite]]
name = "recorded"
dataset = "tests/fixtures/recorded/cases.jsonl"
config_file = "tests/fixtures/recorded/ragproof.toml"
"""
SUITE_ASSETS = ("eval_dataset", "adapter_outputs", "judge_verdicts", "case_scores", "run_summary")
# The daemon's evaluation run must be over well within this; the test's own budget is
# a minute on a quiet machine, this leaves a loaded one room.
RUN_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The project with two suites written by hand and a third scaffolded by ``dg``."""
    root = write_project(
        tmp_path_factory.mktemp("team") / PACKAGE, {"support": ON_DEPS, "weekly": CRON}
    )
    scaffold = dg_command(root, "scaffold", "defs", "ragproof_assets.EvaluationSuite", "starter")
    return root, scaffold


def test_dg_lists_the_component(project):
    root, _ = project
    done = dg_command(root, "list", "components", "--json")
    assert done.returncode == 0, done.stderr
    listed = {item["key"]: item["summary"] for item in json.loads(done.stdout)["items"]}
    assert listed["ragproof_assets.EvaluationSuite"] == (
        "Evaluate a RAG pipeline with ragproof beside the assets that build it."
    )
    # Documented by its docstring and its attributes' descriptions.
    inspected = dg_command(
        root,
        "utils",
        "inspect-component",
        "ragproof_assets.EvaluationSuite",
        "--defs-yaml-json-schema",
    )
    assert inspected.returncode == 0, inspected.stderr
    attributes = json.loads(inspected.stdout)["properties"]["attributes"]["properties"]
    assert set(attributes) >= {"name", "dataset", "config_file", "metrics", "deps", "automation"}
    assert attributes["automation"]["description"].startswith("on_deps: one evaluation after")
    assert all(field.get("description") for field in attributes.values())


def test_dg_scaffolds_a_defs_yaml_that_loads_as_written(project):
    root, scaffold = project
    assert scaffold.returncode == 0, scaffold.stderr
    starter = defs_folder(root) / "starter"
    defs_yaml = (starter / "defs.yaml").read_text()
    assert defs_yaml.startswith("type: ragproof_assets.EvaluationSuite\n")
    assert "  name: starter\n  # The cases to evaluate" in defs_yaml
    cases = [json.loads(line) for line in (starter / "cases.jsonl").read_text().splitlines()]
    assert [c["kind"] for c in cases] == ["qa", "unanswerable", "injection"]
    packaged = REPO / "ragproof_assets" / "component" / STARTER_CASES
    assert (starter / "cases.jsonl").read_text() == packaged.read_text()
    # The project loads with the scaffolded suite as written, beside the two others.
    listed = dg_command(root, "list", "defs", "--json")
    assert listed.returncode == 0, listed.stderr
    found = json.loads(listed.stdout)
    keys = {asset["asset_key"] for asset in found["assets"]}
    assert keys == {"vector_index"} | {
        f"ragproof/{suite}/{asset}"
        for suite in ("support_bot", "weekly", "starter")
        for asset in SUITE_ASSETS
    }
    assert {job["name"] for job in found["jobs"]} >= {
        "ragproof_starter_evaluate",
        "ragproof_support_bot_evaluate",
        "ragproof_weekly_evaluate",
    }
    assert [s["name"] for s in found["schedules"]] == ["ragproof_weekly"]
    assert [s["name"] for s in found["sensors"]] == ["ragproof_support_bot_on_deps"]


def _stop(process: subprocess.Popen) -> None:
    # SIGTERM: the daemon stops its code servers before it exits.
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _suite_runs(instance: dg.DagsterInstance) -> list[dg.DagsterRun]:
    return list(instance.get_runs(filters=dg.RunsFilter(tags={"ragproof/suite": "support_bot"})))


def test_the_daemon_evaluates_once_after_the_index_is_materialized(project, tmp_path, monkeypatch):
    root, _ = project
    home = new_home(tmp_path / "dagster_home")
    suites = tmp_path / "suites.toml"
    suites.write_text(SUITES_TOML)
    env = project_env(root, DAGSTER_HOME=str(home), RAGPROOF_SUITES=str(suites))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    log = (tmp_path / "daemon.log").open("w")
    daemon = subprocess.Popen(
        [str(DAEMON), "run", "-w", str(write_workspace(root))],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        materialized = subprocess.run(
            [str(DAGSTER), "asset", "materialize", "--select", "vector_index"]
            + ["-m", f"{PACKAGE}.definitions", "-d", str(root / "src")],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
        )
        assert materialized.returncode == 0, materialized.stderr
        with dg.DagsterInstance.get() as instance:
            deadline = time.monotonic() + RUN_TIMEOUT_S
            while time.monotonic() < deadline:
                runs = _suite_runs(instance)
                if runs and all(run.is_finished for run in runs):
                    break
                assert daemon.poll() is None, (tmp_path / "daemon.log").read_text()
                time.sleep(1)
            (run,) = _suite_runs(instance)
            assert run.status == dg.DagsterRunStatus.SUCCESS, (tmp_path / "daemon.log").read_text()
            assert run.job_name == "ragproof_support_bot_evaluate"
            assert run.tags["ragproof/source"] == "deps"
            # The sensor's next tick finds nothing new: still one run.
            _wait_for_line(tmp_path / "daemon.log", "since the last evaluation it launched")
            assert len(_suite_runs(instance)) == 1
            summary = (
                instance.fetch_materializations(
                    dg.AssetKey(["ragproof", "support_bot", "run_summary"]), limit=1
                )
                .records[0]
                .asset_materialization
            )
            running = {
                state.instigator_name
                for state in instance.all_instigator_state()
                if state.status.value in ("RUNNING", "DECLARED_IN_CODE")
                and state.instigator_type.value == "SCHEDULE"
            }
        log_text = (tmp_path / "daemon.log").read_text()
    finally:
        _stop(daemon)
        log.close()

    # Both code locations loaded in the one workspace: each one's automation ticked,
    # the suites' schedules running by default where they set a cron.
    assert "Checking for new runs for sensor: launch_evaluation_sensor" in log_text
    assert "Checking for new runs for sensor: ragproof_support_bot_on_deps" in log_text
    # Each suite's schedule, in both locations: running by default where the suite sets
    # a cron (the daemon keeps their state), stopped until turned on where it does not.
    assert {"ragproof_demo", "ragproof_weekly"} <= set(running), running
    assert "ragproof_recorded" not in running

    # The run is a ragproof run with the numbers `ragproof run` gives the same input.
    run_id = run.tags["dagster/partition"]
    store = RunStore(root / "store")
    suite = defs_folder(root) / "support"
    cli = ragproof(
        "run",
        "--dataset",
        str(suite / "cases.jsonl"),
        "--config",
        str(suite / "ragproof.toml"),
        "--json",
        env=project_env(root, RAGPROOF_STORE=str(root / "store")),
    )
    assert cli.returncode == 0, cli.stderr
    cli_run = json.loads(cli.stdout)["run_id"]

    def numbers(run):
        return {s["metric"]: summary_dict(s) for s in store.summaries(run)}

    assert numbers(run_id) == numbers(cli_run)
    # Listed with the store's other runs: named after the suite, tagged with it.
    listed = ragproof(
        "runs",
        "--tag",
        "suite=support_bot",
        "--json",
        env=project_env(root, RAGPROOF_STORE=str(root / "store")),
    )
    assert [(r["run_id"], r["name"]) for r in json.loads(listed.stdout)] == [
        (run_id, "support_bot")
    ]
    assert store.get_run(run_id).cases == store.get_run(cli_run).cases == 6

    # What the asset's Plots tab charts, run after run.
    metadata = summary.metadata
    assert metadata["ragproof_run_id"].value == run_id
    scored = {m: s["mean"] for m, s in numbers(run_id).items() if s["mean"] is not None}
    assert {
        k.removeprefix("mean/"): v.value for k, v in metadata.items() if k.startswith("mean/")
    } == scored
    assert (metadata["cases"].value, metadata["case_failures"].value) == (6, 2)
    assert metadata["report"].value.endswith(f"{run_id}/report.html")


def _wait_for_line(path, text: str, timeout: float = RUN_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while text not in path.read_text():
        assert time.monotonic() < deadline, f"no {text!r} in the daemon's log"
        time.sleep(1)
