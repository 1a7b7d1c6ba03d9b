"""``ragproof_assets.EvaluationSuite`` loaded in a project's own definitions (CONTRACT
section 30): what a defs.yaml builds, each mistake in one line, a sensor that launches
one evaluation after the deps are materialized, a cron suite's schedule."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import dagster as dg
import pytest

import ragproof_assets
from ragproof_assets import EvaluationSuite
from ragproof_assets.component.scaffold import suite_name
from ragproof_core.config import ConfigError
from tests.support.dagster_project import PACKAGE, defs_folder, write_project

SUITES = {
    "support": """\
        type: ragproof_assets.EvaluationSuite
        attributes:
          name: support_bot
          dataset: cases.jsonl
          config_file: ragproof.toml
          metrics: [retrieval.recall_at_k, generation.citation_validity]
          deps: [vector_index]
          automation: on_deps
          store: ../../../../store
          max_failure_share: 0.5
        """,
    "nightly": """\
        type: ragproof_assets.EvaluationSuite
        attributes:
          name: nightly
          dataset: cases.jsonl
          config_file: ragproof.toml
          automation: "30 6 * * MON-FRI"
          timezone: Europe/Paris
        """,
}
SUITE_ASSETS = ("eval_dataset", "adapter_outputs", "judge_verdicts", "case_scores", "run_summary")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = write_project(tmp_path_factory.mktemp("project") / PACKAGE, SUITES)
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(root / "src"))
        defs = dg.load_from_defs_folder(path_within_project=root / "src" / PACKAGE)
        yield root, defs
        # Another module's project of the same name must import its own.
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            patch.delitem(sys.modules, name)


def test_a_defs_yaml_builds_the_suite_beside_the_projects_own_assets(project):
    root, defs = project
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert keys == {"vector_index"} | {
        f"ragproof/{suite}/{asset}"
        for suite in ("support_bot", "nightly")
        for asset in SUITE_ASSETS
    }
    graph = defs.resolve_asset_graph()
    assert graph.get(dg.AssetKey(["ragproof", "support_bot", "eval_dataset"])).parent_keys == {
        dg.AssetKey("vector_index")
    }
    job = defs.resolve_job_def("ragproof_support_bot_evaluate")
    assert job.tags["ragproof/suite"] == "support_bot"
    # Paths from the defs.yaml's folder; the metrics over the config's.
    folder = defs_folder(root) / "support"
    launchpad = job.partitioned_config.get_run_config_for_partition_key("any")
    config = launchpad["ops"]["ragproof__support_bot__eval_dataset"]["config"]
    assert config == {
        "dataset": str(folder / "cases.jsonl"),
        "config_file": str(folder / "ragproof.toml"),
        "metrics": ["retrieval.recall_at_k", "generation.citation_validity"],
        # Its runs tagged suite=<name>, named after it (the config names none).
        "tags": {"suite": "support_bot"},
        "name": "support_bot",
    }
    resources = defs.resources
    assert resources["ragproof_support_bot_store"].root == str(root / "store")
    assert resources["ragproof_nightly_store"].root == ""  # $RAGPROOF_STORE when it runs
    assert resources["ragproof_support_bot_checks"].max_failure_share == 0.5
    checks = {
        (key.asset_key.to_user_string(), key.name, spec.blocking)
        for key, spec in (
            (spec.key, spec) for asset in defs.assets for spec in getattr(asset, "check_specs", [])
        )
    }
    assert ("ragproof/nightly/run_summary", "failure_rate", True) in checks
    assert ("ragproof/support_bot/run_summary", "no_regression", True) in checks
    assert ("ragproof/support_bot/run_summary", "floors", True) in checks
    dg.Definitions.validate_loadable(defs)


def test_a_cron_suite_has_a_running_schedule_and_on_deps_a_running_sensor(project):
    _, defs = project
    (schedule,) = defs.schedules
    assert (schedule.name, schedule.cron_schedule, schedule.execution_timezone) == (
        "ragproof_nightly",
        "30 6 * * MON-FRI",
        "Europe/Paris",
    )
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING
    (sensor,) = defs.sensors
    assert sensor.name == "ragproof_support_bot_on_deps"
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    with dg.instance_for_test() as instance:
        context = dg.build_schedule_context(
            instance=instance, repository_def=defs.get_repository_def()
        )
        (request,) = schedule.evaluate_tick(context).run_requests
        assert instance.get_dynamic_partitions("ragproof_nightly_runs") == [request.partition_key]
        assert request.tags["ragproof/suite"] == "nightly"


def test_deps_materialized_launch_one_evaluation_a_tick(project):
    _, defs = project
    (sensor,) = defs.sensors
    index = defs.get_assets_def("vector_index")
    with dg.instance_for_test() as instance:

        def tick(cursor=None):
            # The sensor's own function, as the daemon calls it: its result unresolved.
            return sensor(dg.build_sensor_context(instance=instance, cursor=cursor))

        first = tick()
        assert first.skip_message == "vector_index: not materialized yet"
        # Two materializations before the tick: one evaluation.
        dg.materialize([index], instance=instance)
        dg.materialize([index], instance=instance)
        second = tick()
        (request,) = second.run_requests
        (added,) = second.dynamic_partitions_requests
        assert added.partitions_def_name == "ragproof_support_bot_runs"
        assert list(added.partition_keys) == [request.partition_key]
        assert request.tags["ragproof/suite"] == "support_bot"
        assert request.tags["ragproof/source"] == "deps"
        assert request.run_config["ops"]["ragproof__support_bot__eval_dataset"]["config"][
            "metrics"
        ] == ["retrieval.recall_at_k", "generation.citation_validity"]
        newest = json.loads(second.cursor)["storage_id"]
        assert request.run_key == f"deps-{newest}"
        # Nothing new: no run.
        third = tick(second.cursor)
        assert third.skip_message == (
            "no materialization of vector_index since the last evaluation it launched"
        )
        dg.materialize([index], instance=instance)
        (again,) = tick(second.cursor).run_requests
        assert again.partition_key != request.partition_key


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        (
            {"name": "support-bot"},
            "name: expected letters, digits and underscores only "
            '([A-Za-z0-9_]+), got "support-bot"',
        ),
        (
            {"automation": "hourly"},
            "automation: expected on_deps, none or a cron schedule such "
            'as "0 2 * * *", got "hourly"',
        ),
        ({"automation": "on_deps"}, "automation: on_deps needs deps (your own asset keys)"),
        (
            {"automation": "0 2 * * *", "timezone": "Mars/Olympus"},
            'timezone: unknown time zone "Mars/Olympus"',
        ),
        ({"metrics": ["retrieval.nope"]}, "run.metrics: "),
        # Relative paths are from the defs.yaml's folder.
        ({"config_file": "missing.toml"}, "{folder}/missing.toml: no such config file"),
    ],
)
def test_a_mistake_is_one_line_naming_the_defs_yaml_and_the_attribute(
    tmp_path, attributes, message
):
    suite = EvaluationSuite(**{"name": "support_bot", "dataset": "cases.jsonl", **attributes})
    with pytest.raises(ConfigError) as err:
        suite.plan(tmp_path)
    text = str(err.value)
    expected = message.format(folder=tmp_path)
    assert text.startswith(f"{tmp_path / 'defs.yaml'}: {expected}"), text
    assert "\n" not in text


def test_a_scaffolded_suite_is_named_after_its_folder():
    assert suite_name("support-bot") == "support_bot"
    assert suite_name("evals") == "evals"
    assert suite_name("---") == "suite"


def test_the_component_is_ragproof_assets_evaluationsuite():
    assert "EvaluationSuite" in dir(ragproof_assets)
    assert EvaluationSuite.__module__ == "ragproof_assets.component.suite"
    assert Path(ragproof_assets.__file__).parent.name == "ragproof_assets"
