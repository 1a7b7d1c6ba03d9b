"""The asset factory: ragproof's own code location is it at its defaults, and two
prefixed suites beside a project's own asset and resources load and run without a
clash, with the numbers of ragproof's own assets."""

from __future__ import annotations

import dagster as dg
import pytest

from ragproof_assets.definitions import defs
from ragproof_assets.evaluation.config import EvalRunConfig
from ragproof_assets.evaluation.factory import build_evaluation, evaluation_resources
from ragproof_assets.evaluation.jobs import own_evaluation
from ragproof_assets.evaluation.resources import StoreResource
from ragproof_assets.evaluation.shape import EvaluationShape, ResourceKeys
from ragproof_core.present.summary import summary_dict
from ragproof_core.store.run_store import RunStore
from tests.assets.expected import RECORDED, assert_summary

ASSETS = ("eval_dataset", "adapter_outputs", "judge_verdicts", "case_scores", "run_summary")


def suite_shape(name: str, deps=()) -> EvaluationShape:
    prefix = ("ragproof", name)
    return EvaluationShape(
        key_prefix=prefix,
        deps=tuple(dg.AssetKey(d) for d in deps),
        partitions=dg.DynamicPartitionsDefinition(name=f"ragproof__{name}__runs"),
        resource_keys=ResourceKeys.prefixed(f"ragproof_{name}"),
        blocking_checks=True,
        group="ragproof",
        job_name=f"ragproof_{name}",
        job_tags={"ragproof/suite": name},
        by_dataset=False,
    )


class Store(dg.ConfigurableResource):
    """The project's own resource named ``store``, as ragproof's own location names one."""

    root: str = "the project's"


@dg.asset
def vector_index(store: Store) -> str:
    return store.root


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A project: its own vector_index and `store` resource, and two suites, one
    depending on the index, each with a store of its own."""
    stores = {name: tmp_path_factory.mktemp(name) for name in ("a", "b")}
    built = {
        "a": build_evaluation(suite_shape("a", deps=["vector_index"])),
        "b": build_evaluation(suite_shape("b")),
    }
    resources = {"store": Store()}
    for name, evaluation in built.items():
        resources |= evaluation_resources(evaluation.shape, StoreResource(root=str(stores[name])))
    project_defs = dg.Definitions(
        assets=[vector_index, *built["a"].assets, *built["b"].assets],
        jobs=[built["a"].job, built["b"].job],
        resources=resources,
    )
    return project_defs, built, stores


def test_own_location_is_the_factory_at_its_defaults():
    assert own_evaluation.shape == EvaluationShape()
    assert sorted(k.to_user_string() for k in own_evaluation.asset_keys()) == sorted(ASSETS)
    graph = defs.resolve_job_def("evaluate").graph
    assert sorted(graph.node_names()) == ["eval_dataset", "evaluate_cases"]
    assert set(defs.resolve_job_def("evaluate").resource_defs) >= {
        "store",
        "judge_resource",
        "checks",
        "table_io_manager",
        "judge_ledger_io_manager",
    }
    specs = list(own_evaluation.assets[1].check_specs)
    assert {s.name for s in specs} == {"no_regression", "failure_rate", "floors"}
    assert not any(s.blocking for s in specs)


def test_two_suites_and_the_project_load_without_a_clash(project):
    project_defs, built, _ = project
    dg.Definitions.validate_loadable(project_defs)
    keys = {k.to_user_string() for k in project_defs.resolve_asset_graph().get_all_asset_keys()}
    assert keys == {"vector_index"} | {
        f"ragproof/{suite}/{asset}" for suite in ("a", "b") for asset in ASSETS
    }
    graph = project_defs.resolve_asset_graph()
    assert graph.get(dg.AssetKey(["ragproof", "a", "eval_dataset"])).parent_keys == {
        dg.AssetKey("vector_index")
    }
    assert graph.get(dg.AssetKey(["ragproof", "b", "eval_dataset"])).parent_keys == set()
    job = project_defs.resolve_job_def("ragproof_a")
    assert sorted(job.graph.node_names()) == [
        "ragproof__a__eval_dataset",
        "ragproof__a__evaluate_cases",
    ]
    assert job.tags["ragproof/suite"] == "a"
    specs = list(built["a"].assets[1].check_specs)
    assert {(s.asset_key.to_user_string(), s.name, s.blocking) for s in specs} == {
        ("ragproof/a/run_summary", "no_regression", True),
        ("ragproof/a/run_summary", "failure_rate", True),
        ("ragproof/a/run_summary", "floors", True),
    }


def test_a_suite_run_has_the_numbers_of_ragproofs_own_assets(project):
    project_defs, built, stores = project
    shape = built["b"].shape
    form = EvalRunConfig(
        dataset=str(RECORDED / "cases.jsonl"), config_file=str(RECORDED / "ragproof.toml")
    )
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(shape.partitions.name, ["suite-run"])
        result = project_defs.resolve_job_def("ragproof_b").execute_in_process(
            run_config=shape.run_config(form),
            instance=instance,
            partition_key="suite-run",
            raise_on_error=False,
        )
        summary = next(
            e.materialization
            for e in result.get_asset_materialization_events()
            if e.asset_key == dg.AssetKey(["ragproof", "b", "run_summary"])
        )
        checks = {
            c.check_name: (c.passed, c.blocking) for c in result.get_asset_check_evaluations()
        }
    store = RunStore(stores["b"])
    assert store.get_run("suite-run").cases == 6
    # The recorded fixture's hand-worked numbers, as ragproof's own assets give them.
    assert_summary({s["metric"]: summary_dict(s) for s in store.summaries("suite-run")})
    metadata = summary.metadata
    assert metadata["ragproof_run_id"].value == "suite-run"
    assert metadata["mean/retrieval.recall_at_k"].value == 0.75
    assert (metadata["cases"].value, metadata["case_failures"].value) == (6, 2)
    assert metadata["report"].value.endswith("report.html")
    # 2 of 6 cases failed: the blocking failure_rate check fails the run after the
    # summary is on record.
    assert checks == {
        "failure_rate": (False, True),
        "no_regression": (True, True),
        "floors": (True, True),  # the config has no [gate]
    }
    assert not result.success
    # Nothing under the other suite's store, and no observation outside the suite's keys.
    assert not (stores["a"] / "runs").exists()
    assert not [e for e in result.all_events if e.event_type_value == "ASSET_OBSERVATION"]
