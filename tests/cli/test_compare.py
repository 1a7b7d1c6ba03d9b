"""`ragproof compare` and `ragproof generate injection` end to end, and the
regression check that uses the same comparison code."""

from __future__ import annotations

import json

import dagster as dg

from ragproof_assets.definitions import defs
from ragproof_assets.evaluation.config import EvalRunConfig, evaluate_run_config
from ragproof_assets.evaluation.partitions import evaluation_runs
from ragproof_core.data.dataset import load_dataset
from tests.assets.expected import RECORDED
from tests.support.cli import cli_env, ragproof
from tests.support.judge_server import JudgeServer

DATASET = str(RECORDED / "cases.jsonl")


def _run(config: str, env=None) -> str:
    done = ragproof(
        "run", "--dataset", DATASET, "--config", str(RECORDED / config), "--json", env=env
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["run_id"]


def test_compare_two_recorded_runs_gives_exact_paired_figures_every_time():
    good, worse = _run("ragproof.toml"), _run("ragproof_worse.toml")
    first = ragproof("compare", good, worse, "--json")
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    recall = report["metrics"]["retrieval.recall_at_k"]
    # Paired over c1 and c2 (c5 failed in the first run): recall 1 -> 1 and 1/2 -> 0.
    assert (recall["paired"], recall["mean_a"], recall["mean_b"], recall["delta"]) == (
        2,
        0.75,
        0.5,
        -0.25,
    )
    assert (recall["p_value"], recall["verdict"]) == (1.0, "no significant change")
    mrr = report["metrics"]["retrieval.mrr"]
    # Deltas (-1/2, -1/2): of the 4 sign flips, 2 are as extreme: p = 2/4 exactly.
    assert (mrr["delta"], mrr["p_value"]) == (-0.5, 0.5)
    injection = report["metrics"]["robustness.injection_resistance"]
    assert (injection["mean_a"], injection["mean_b"], injection["delta"]) == (0.0, 1.0, 1.0)
    # c5 failed in the first run and scored in the second.
    assert recall["transitions"] == {"error -> scored": 1}
    assert ragproof("compare", good, worse, "--json").stdout == first.stdout

    table = ragproof("compare", good, worse)
    assert table.returncode == 0 and "retrieval.mrr" in table.stdout


def test_compare_refuses_mixed_judges_unless_allowed(store_path):
    with JudgeServer() as server:
        judged = _run(
            "ragproof.toml",
            env=cli_env(
                RAGPROOF_JUDGE_MODEL="openai/judge-test",
                RAGPROOF_JUDGE_API_BASE=server.url,
                OPENAI_API_KEY="sk-test-dummy",
            ),
        )
    plain = _run("ragproof.toml")
    refused = ragproof("compare", plain, judged)
    assert refused.returncode == 1
    assert "openai/judge-test" in refused.stderr and "--allow-mixed-judges" in refused.stderr
    allowed = ragproof("compare", plain, judged, "--allow-mixed-judges", "--json")
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["mixed_judges"] is True


def test_regression_check_fails_when_a_run_gets_significantly_worse(regression_fixture):
    # 20 cases all retrieved first, then all missed: a significant drop in every retrieval metric.
    tmp_path = regression_fixture
    dataset = tmp_path / "cases.jsonl"

    with dg.instance_for_test() as instance:
        checks = []
        for run_id, outputs in (("r1-good", "good"), ("r2-bad", "bad")):
            instance.add_dynamic_partitions(evaluation_runs.name, [run_id])
            result = defs.resolve_job_def("evaluate").execute_in_process(
                run_config=evaluate_run_config(
                    EvalRunConfig(
                        dataset=str(dataset),
                        adapter="ragproof_core.adapters.recorded:RecordedAdapter",
                        adapter_options_json=json.dumps(
                            {"path": str(tmp_path / f"{outputs}.jsonl")}
                        ),
                    )
                ),
                instance=instance,
                partition_key=run_id,
            )
            checks.append({c.check_name: c for c in result.get_asset_check_evaluations()})
    assert checks[0]["no_regression"].passed  # no baseline yet
    second = checks[1]["no_regression"]
    assert not second.passed
    assert second.metadata["baseline"].value == "r1-good"
    assert second.metadata["regressed"].value == (
        "retrieval.precision_at_k, retrieval.recall_at_k, retrieval.mrr, retrieval.ndcg_at_k"
    )


def test_generate_injection_writes_a_valid_reproducible_dataset(tmp_path):
    out_a, out_b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    args = (
        "generate",
        "injection",
        "--dataset",
        "data/demo/cases.jsonl",
        "--count",
        "20",
        "--seed",
        "7",
    )
    assert ragproof(*args, "--out", str(out_a)).returncode == 0
    assert ragproof(*args, "--out", str(out_b)).returncode == 0
    assert out_a.read_bytes() == out_b.read_bytes()
    cases = load_dataset(out_a)
    assert len(cases) == 20 and {c.kind.value for c in cases} == {"injection"}
    assert all(c.adversarial_payload for c in cases)

    bad = ragproof(
        "generate",
        "injection",
        "--dataset",
        "data/demo/cases.jsonl",
        "--out",
        str(out_a),
        "--payloads",
        "nope",
    )
    assert bad.returncode == 1 and "nope" in bad.stderr
