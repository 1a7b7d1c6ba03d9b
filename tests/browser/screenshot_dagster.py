"""Make docs/dagster.md's picture (docs/img/dagster-plots.png): the Plots tab of a suite's
``run_summary`` in a team's own project, as the browser tests' Chromium draws it.

    .venv/bin/python -m tests.browser.screenshot_dagster [--out docs/img]

A hand-written project (tests/support/dagster_project.py) with one suite over the
recorded fixture; three evaluations of it (its config, the worse recording, its config
again) materialized into a fresh Dagster home; then ``dagster-webserver`` serving the
project, and the asset's Plots tab in Chromium.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import yaml

from ragproof_assets import EvaluationSuite
from ragproof_assets.component.suite import suite_definitions
from ragproof_core.store import new_run_id
from tests.support.browser import chromium
from tests.support.dagster_project import (
    PACKAGE,
    defs_folder,
    new_home,
    project_env,
    webserver,
    write_project,
    write_workspace,
)

SUITE = """\
    type: ragproof_assets.EvaluationSuite
    attributes:
      name: support_bot
      dataset: cases.jsonl
      config_file: ragproof.toml
      deps: [vector_index]
      store: ../../../../store
      max_failure_share: 0.5
    """
SUMMARY = ("ragproof", "support_bot", "run_summary")
PLOTTED = "mean/retrieval.recall_at_k"
PICTURE = "dagster-plots.png"


@contextmanager
def _home(home: Path):
    saved = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = str(home)
    try:
        with dg.DagsterInstance.get() as instance:
            yield instance
    finally:
        if saved is None:
            os.environ.pop("DAGSTER_HOME")
        else:
            os.environ["DAGSTER_HOME"] = saved


def evaluate_three_times(root: Path, home: Path) -> list[str]:
    """The suite's job, in this process, over its config, the worse one, its config."""
    folder = defs_folder(root) / "support"
    attributes = yaml.safe_load((folder / "defs.yaml").read_text())["attributes"]
    defs = suite_definitions(EvaluationSuite(**attributes).plan(folder))
    job = defs.resolve_job_def("ragproof_support_bot_evaluate")
    launch = job.partitioned_config.get_run_config_for_partition_key("any")
    run_ids = []
    with _home(home) as instance:
        for config in ("ragproof.toml", "ragproof_worse.toml", "ragproof.toml"):
            run_id = new_run_id()
            instance.add_dynamic_partitions("ragproof_support_bot_runs", [run_id])
            run_config = {
                "ops": {
                    op: {"config": {**fields["config"], "config_file": str(folder / config)}}
                    for op, fields in launch["ops"].items()
                }
            }
            job.execute_in_process(
                run_config=run_config, instance=instance, partition_key=run_id, raise_on_error=False
            )
            run_ids.append(run_id)
    return run_ids


@dataclass(frozen=True)
class Plots:
    picture: Path
    # The series the tab draws a chart for, as it titles them.
    titles: list[str]


def make(out: Path, work: Path) -> Plots:
    """The picture at ``out``/dagster-plots.png; ``work`` holds the project and its home."""
    root = write_project(work / PACKAGE, {"support": SUITE})
    home = new_home(work / "dagster_home")
    evaluate_three_times(root, home)
    out.mkdir(parents=True, exist_ok=True)
    env = project_env(root, DAGSTER_HOME=str(home))
    workspace = write_workspace(root, with_ragproof=False)
    with webserver(workspace, env, work / "webserver.log") as url, chromium() as browser:
        # What the UI's "Skip" on a fresh instance's newsletter form sends: no form.
        _graphql(url, "mutation { setNuxSeen }")
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        # The asset's overview; its metadata section draws each numeric entry by
        # partition (one evaluation run each) under "Plots".
        page.goto(f"{url}/assets/{'/'.join(SUMMARY)}")
        plots = page.get_by_role("button", name="Plots")
        plots.click(timeout=120_000)
        chart = page.get_by_text(PLOTTED, exact=True)
        chart.wait_for(timeout=120_000)
        # The metrics' means at the top of the picture.
        page.get_by_text("mean/echo.exact_match", exact=True).evaluate(
            "title => title.scrollIntoView({block: 'start'})"
        )
        page.screenshot(path=str(out / PICTURE))
        titles = page.get_by_text(re.compile(r"^(mean/\S+|cases|case_failures)$")).all_inner_texts()
    return Plots(out / PICTURE, titles)


def _graphql(url: str, query: str) -> dict:
    request = urllib.request.Request(
        f"{url}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as reply:
        body = json.load(reply)
    assert not body.get("errors"), body["errors"]
    return body["data"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parents[2] / "docs" / "img")
    with tempfile.TemporaryDirectory() as work:
        print(make(parser.parse_args().out, Path(work)).picture)


if __name__ == "__main__":
    main()
