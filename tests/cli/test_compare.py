"""`ragproof compare` and `ragproof generate injection` end to end, and the
regression check that uses the same comparison code."""

from __future__ import annotations

import json

import dagster as dg
import pytest

from ragproof_assets.definitions import defs
from ragproof_assets.evaluation.config import EvalRunConfig, evaluate_run_config
from ragproof_assets.evaluation.partitions import evaluation_runs
from ragproof_core.data.dataset import load_dataset
from tests.assets.expected import RECORDED
from tests.support.cli import cli_env, ragproof, run_json
from tests.support.judge_server import JudgeServer

DATASET = RECORDED / "cases.jsonl"
CONVERSATIONS = RECORDED.parent / "conversations"


def _run(config: str, env=None) -> str:
    return run_json(DATASET, RECORDED / config, env)["run_id"]


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


def test_compare_refuses_mixed_k_unless_allowed_and_adjusts_p_by_holm(tmp_path):
    """CONTRACT section 19: runs at k = 5 and k = 3 are refused (exit 1, naming the
    setting); allowed, --json gives each p-value Holm-adjusted, or as is with
    --correction none."""
    at_3 = tmp_path / "ragproof.toml"
    at_3.write_text(
        (RECORDED / "ragproof.toml")
        .read_text(encoding="utf-8")
        .replace("k = 5", "k = 3")
        .replace('"outputs.jsonl"', json.dumps(str(RECORDED / "outputs_worse.jsonl"))),
        encoding="utf-8",
    )
    good, worse = _run("ragproof.toml"), _run(str(at_3))
    refused = ragproof("compare", good, worse, "--json")
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == (
        f"ragproof: refusing to compare: runs {good} and {worse} were scored with different "
        "settings: run.k 5 vs 3. Their retrieval scores are different measures. "
        "Pass --allow-mixed-settings to compare anyway.\n"
    )
    allowed = ragproof("compare", good, worse, "--json", "--allow-mixed-settings")
    assert allowed.returncode == 0, allowed.stderr
    metrics = json.loads(allowed.stdout)["metrics"]
    tested = {name: m for name, m in metrics.items() if m["p_value"] is not None}
    assert len(tested) >= 4
    ranked = sorted(tested.values(), key=lambda m: m["p_value"])
    running = 0.0
    for i, m in enumerate(ranked):
        running = max(running, min(1.0, (len(ranked) - i) * m["p_value"]))
        assert m["p_adjusted"] == running, m["metric"]
    assert all(m["p_adjusted"] is None for m in metrics.values() if m["p_value"] is None)
    plain = ragproof(
        "compare", good, worse, "--json", "--allow-mixed-settings", "--correction", "none"
    )
    assert plain.returncode == 0, plain.stderr
    assert all(
        m["p_adjusted"] == m["p_value"] for m in json.loads(plain.stdout)["metrics"].values()
    )


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


def test_compare_pairs_a_conversations_turns_by_turn_id():
    """Two recorded runs over tests/fixtures/conversations/mixed.jsonl that differ in
    turn c1#2 only (the better run retrieves its gold policy-4 first): compare pairs
    the turns by their ids, and the one regression from better to worse is c1#2;
    plan works on the turns too."""
    runs = {
        name: run_json(CONVERSATIONS / "mixed.jsonl", CONVERSATIONS / name)["run_id"]
        for name in ("ragproof_better.toml", "ragproof.toml")
    }
    compared = ragproof("compare", runs["ragproof_better.toml"], runs["ragproof.toml"], "--json")
    assert compared.returncode == 0, compared.stderr
    report = json.loads(compared.stdout)
    recall = report["metrics"]["retrieval.recall_at_k"]
    # Paired over s1, c1#1, c1#2 and c2#1 (c1#3 has no gold ids): c1#2 goes 1 -> 0.
    assert (recall["paired"], recall["mean_a"], recall["mean_b"], recall["delta"]) == (
        4,
        1.0,
        0.75,
        -0.25,
    )
    assert {(r["metric"], r["case_id"]) for r in report["regressions"]} >= {
        ("retrieval.recall_at_k", "c1#2")
    }
    assert {r["case_id"] for r in report["regressions"]} == {"c1#2"}

    # plan counts turns as cases: recall 1, 1, 0, 1 over the four turns with gold ids,
    # sd 0.5; to see 0.5: ceil((2.8016 * 0.5 / 0.5)^2) = ceil(7.849) = 8.
    planned = ragproof("plan", "--run", runs["ragproof.toml"], "--delta", "0.5", "--json")
    assert planned.returncode == 0, planned.stderr
    metrics = {m["metric"]: m for m in json.loads(planned.stdout)["metrics"]}
    recall_plan = metrics["retrieval.recall_at_k"]
    assert (recall_plan["scored"], recall_plan["cases_needed"]) == (4, 8)
    assert recall_plan["sd"] == pytest.approx(0.5)


AGENT_COMPARE = RECORDED.parent / "agent_compare"


def test_compare_and_its_gate_read_each_agent_metric_in_its_own_direction():
    """CONTRACT section 17: two real runs of tests/fixtures/agent_compare (its README
    works the figures). agent.steps is lower is better, so A -> B's rise from 3 to 4
    steps is a regression beside the falls in tool precision and hop retrieval, and
    B -> A's fall is not; trajectory match, up from 0 to 1, is B's one improvement."""
    runs = {
        side: run_json(AGENT_COMPARE / "cases.jsonl", AGENT_COMPARE / f"ragproof_{side}.toml")[
            "run_id"
        ]
        for side in ("a", "b")
    }
    forward = ragproof("compare", runs["a"], runs["b"], "--json", "--fail-on-regression")
    assert forward.returncode == 4, forward.stderr
    metrics = json.loads(forward.stdout)["metrics"]
    p, holm = 2 / 2**10, 8 * 2 / 2**10
    worse, better, same = "worse", "better", "no significant change"
    # (higher is better, paired, mean A, mean B, delta, p, Holm-adjusted p, verdict)
    assert {
        name: (
            m["higher_is_better"],
            m["paired"],
            m["mean_a"],
            round(m["mean_b"], 12),
            round(m["delta"], 12),
            m["p_value"],
            m["p_adjusted"],
            m["verdict"],
        )
        for name, m in metrics.items()
        if m["p_value"] is not None
    } == {
        "agent.tool_precision": (
            True,
            10,
            1.0,
            round(2 / 3, 12),
            round(-1 / 3, 12),
            p,
            holm,
            worse,
        ),
        "agent.tool_recall": (True, 10, 1.0, 1.0, 0.0, 1.0, 1.0, same),
        "agent.trajectory_match": (True, 10, 0.0, 1.0, 1.0, p, holm, better),
        "agent.steps": (False, 10, 3.0, 4.0, 1.0, p, holm, worse),
        "retrieval.hop_recall_at_k": (True, 10, 1.0, 0.0, -1.0, p, holm, worse),
        "retrieval.hop_precision_at_k": (True, 10, 0.2, 0.0, -0.2, p, holm, worse),
        "robustness.overrefusal": (False, 10, 0.0, 0.0, 0.0, 1.0, 1.0, same),
        "robustness.exfiltration_resistance": (True, 10, 1.0, 1.0, 0.0, 1.0, 1.0, same),
    }
    assert forward.stderr.splitlines() == [
        "ragproof: regression: retrieval.hop_recall_at_k worse by 1.0000 "
        "(mean 1.0000 -> 0.0000, p = 0.0020, 10 paired cases)",
        "ragproof: regression: retrieval.hop_precision_at_k worse by 0.2000 "
        "(mean 0.2000 -> 0.0000, p = 0.0020, 10 paired cases)",
        "ragproof: regression: agent.tool_precision worse by 0.3333 "
        "(mean 1.0000 -> 0.6667, p = 0.0020, 10 paired cases)",
        "ragproof: regression: agent.steps worse by 1.0000 "
        "(mean 3.0000 -> 4.0000, p = 0.0020, 10 paired cases)",
    ]

    backward = ragproof("compare", runs["b"], runs["a"], "--fail-on-regression")
    assert backward.returncode == 4, backward.stderr
    table = backward.stdout.split("\nRead:")[0].splitlines()
    rows = {line.split("  ")[0]: line.split()[-1] for line in table if line.startswith("agent.")}
    assert rows["agent.steps (lower is better)"] == "better"
    assert rows["agent.tool_precision"] == "better"
    assert rows["agent.trajectory_match"] == "worse"
    assert backward.stderr == (
        "ragproof: regression: agent.trajectory_match worse by 1.0000 "
        "(mean 1.0000 -> 0.0000, p = 0.0020, 10 paired cases)\n"
    )
