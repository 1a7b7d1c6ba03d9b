import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest

from ragproof_core.compare.comparison import (
    MixedJudgesError,
    MixedSettingsError,
    Regression,
    RunSide,
    compare_runs,
    render_table,
)
from ragproof_core.model import MetricResult, Status
from ragproof_core.store.run_store import RunRecord, RunStore

FIXTURES = Path(__file__).parents[2] / "fixtures" / "compare"
STARTED = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)


def record(run_id: str) -> RunRecord:
    fields = json.loads((FIXTURES / "runs.json").read_text())[run_id]
    return RunRecord(
        **fields,
        started_at=STARTED,
        finished_at=STARTED,
        config_json="{}",
        cost_usd=0.0,
        cases=10,
        case_failures=0,
        judge_requests=0,
        cache_hits=0,
    )


def results(run_id: str, results_file: str) -> pd.DataFrame:
    frame = pd.read_csv(FIXTURES / results_file, comment="#", dtype={"case_id": str})
    frame.insert(0, "run_id", run_id)
    return frame


def side(run_id: str, results_file: str) -> RunSide:
    return RunSide(record(run_id), results(run_id, results_file))


@pytest.fixture(scope="module")
def comparison():
    return compare_runs(side("run-a", "results_a.csv"), side("run-b", "results_b.csv"))


def metric(comparison, name):
    return {m.metric: m for m in comparison.metrics}[name]


def test_metrics_are_listed_in_contract_order(comparison):
    assert [m.metric for m in comparison.metrics] == [
        "retrieval.recall_at_k",
        "retrieval.mrr",
        "generation.groundedness",
        "generation.completeness",
        "echo.exact_match",
        "robustness.abstention",
        "robustness.overrefusal",
    ]


def test_improvement_on_every_case_is_better(comparison):
    m = metric(comparison, "retrieval.recall_at_k")
    assert (m.paired, m.mean_a, m.mean_b, m.delta) == (8, 0.25, 0.75, 0.5)
    assert (m.ci_low, m.ci_high) == (0.5, 0.5)
    assert m.p_value == 2 / 256  # exact enumeration: only the two same-sign labellings
    assert m.verdict == "better"


def test_mixed_moves_are_no_significant_change(comparison):
    m = metric(comparison, "retrieval.mrr")
    assert (m.paired, m.mean_a, m.mean_b, m.delta) == (4, 0.75, 0.875, 0.125)
    assert m.p_value == 1.0
    assert m.verdict == "no significant change"


def test_only_cases_scored_in_both_runs_are_paired(comparison):
    m = metric(comparison, "generation.groundedness")
    # c9 scored in A but judge_error in B: it is a transition, not a pair.
    assert (m.scored_a, m.scored_b, m.paired) == (9, 8, 8)
    assert (m.mean_a, m.mean_b, m.delta) == (1.0, 0.4375, -0.5625)
    assert m.p_value == 2 / 256
    assert m.verdict == "worse"
    assert m.transitions == {"scored -> judge_error": 1}


def test_metric_scored_in_one_run_only_has_no_delta(comparison):
    a_only = metric(comparison, "generation.completeness")
    b_only = metric(comparison, "robustness.abstention")
    nothing = metric(comparison, "echo.exact_match")
    assert a_only.verdict == "scored in A only"
    assert b_only.verdict == "scored in B only"
    assert nothing.verdict == "no cases scored in both"
    for m in (a_only, b_only, nothing):
        assert (m.paired, m.mean_a, m.mean_b, m.delta, m.ci_low, m.ci_high, m.p_value) == (
            0, None, None, None, None, None, None,
        )  # fmt: skip
    assert (a_only.scored_a, a_only.scored_b) == (2, 0)
    assert (b_only.scored_a, b_only.scored_b) == (0, 2)


def test_overrefusal_is_better_when_lower(comparison):
    m = metric(comparison, "robustness.overrefusal")
    assert m.higher_is_better is False
    assert (m.paired, m.mean_a, m.mean_b, m.delta) == (10, 0.8, 0.1, -0.7)
    # eight -1, one +1, one 0: |9 - 2k| >= 7 for k in {0, 1, 8, 9} -> 20, x2 for the zero.
    assert m.p_value == 40 / 1024
    assert m.verdict == "better"


def test_status_transition_counts(comparison):
    transitions = {m.metric: m.transitions for m in comparison.metrics if m.transitions}
    assert transitions == {
        "generation.groundedness": {"scored -> judge_error": 1},
        "generation.completeness": {"scored -> skipped": 2},
        "echo.exact_match": {"error -> scored": 1, "scored -> error": 1},
    }


def test_regressions_are_worst_first_in_each_metrics_direction(comparison):
    g = "generation.groundedness"
    assert comparison.regressions == (
        Regression(g, "c3", 1.0, 0.0, -1.0),
        # an overrefusal *rise* is a regression; ties go in metric order
        Regression("robustness.overrefusal", "c10", 0.0, 1.0, 1.0),
        Regression("retrieval.mrr", "c1", 1.0, 0.5, -0.5),
        *(Regression(g, c, 1.0, 0.5, -0.5) for c in ("c1", "c2", "c4", "c5", "c6", "c7", "c8")),
    )


def test_regression_list_is_cut_to_top_n():
    top = compare_runs(
        side("run-a", "results_a.csv"), side("run-b", "results_b.csv"), top_regressions=2
    )
    assert [(r.metric, r.case_id) for r in top.regressions] == [
        ("generation.groundedness", "c3"),
        ("robustness.overrefusal", "c10"),
    ]


def test_same_figures_on_every_call(comparison):
    again = compare_runs(side("run-a", "results_a.csv"), side("run-b", "results_b.csv"))
    assert again.to_dict() == comparison.to_dict()


def test_row_order_does_not_change_the_figures(comparison):
    b = side("run-b", "results_b.csv")
    shuffled = RunSide(b.record, b.results.sample(frac=1.0, random_state=5))
    assert compare_runs(side("run-a", "results_a.csv"), shuffled).to_dict() == (
        comparison.to_dict()
    )


def test_mixed_judges_are_refused_naming_model_and_prompts():
    with pytest.raises(MixedJudgesError) as err:
        compare_runs(side("run-a", "results_a.csv"), side("run-b-new-judge", "results_b.csv"))
    message = str(err.value)
    assert "judge model openai/judge-test vs anthropic/claude-judge" in message
    assert "prompt groundedness hash 9f0c2e1b7d6a vs 0d1e2f3a4b5c" in message
    assert "prompt refusal missing in B (A has 5e5e5e5e5e5e)" in message
    assert "answer_relevance" not in message  # same hash on both sides
    assert message.endswith("Their judge scores are not comparable.")


def test_mixed_judges_allowed_with_the_flag_and_flagged_in_the_report():
    c = compare_runs(
        side("run-a", "results_a.csv"),
        side("run-b-new-judge", "results_b.csv"),
        allow_mixed_judges=True,
    )
    assert c.mixed_judges is True
    assert c.to_dict()["judge_differences"] == [
        "judge model openai/judge-test vs anthropic/claude-judge",
        "prompt groundedness hash 9f0c2e1b7d6a vs 0d1e2f3a4b5c",
        "prompt refusal missing in B (A has 5e5e5e5e5e5e)",
    ]
    assert metric(c, "retrieval.recall_at_k").delta == 0.5
    assert "WARNING: mixed judges allowed" in render_table(c)
    assert c.render_table() == render_table(c)


def test_a_judge_mode_change_is_named_before_the_prompt_hashes():
    combined = replace(record("run-b"), judge_mode="combined")
    with pytest.raises(MixedJudgesError) as err:
        compare_runs(
            side("run-a", "results_a.csv"), RunSide(combined, results("run-b", "results_b.csv"))
        )
    assert err.value.differences[0] == "judge mode differs: per_metric vs combined"


def test_two_runs_without_a_judge_compare():
    c = compare_runs(side("no-judge-1", "results_a.csv"), side("no-judge-2", "results_b.csv"))
    assert c.mixed_judges is False
    assert metric(c, "retrieval.recall_at_k").verdict == "better"


def test_no_judge_against_a_judged_run_is_mixed():
    with pytest.raises(MixedJudgesError, match=r"judge model \(none\) vs openai/judge-test"):
        compare_runs(side("no-judge-1", "results_a.csv"), side("run-b", "results_b.csv"))


def test_to_dict_is_json_friendly_with_stable_keys(comparison):
    d = comparison.to_dict()
    assert list(d) == [
        "run_a", "run_b", "judge_model_a", "judge_model_b", "mixed_judges",
        "judge_differences", "alpha", "confidence", "seed", "metrics", "regressions",
        "metrics_only_in_a", "metrics_only_in_b",
    ]  # fmt: skip
    assert list(d["metrics"]["retrieval.mrr"]) == [
        "metric", "higher_is_better", "scored_a", "scored_b", "paired", "mean_a", "mean_b",
        "delta", "ci_low", "ci_high", "p_value", "p_adjusted", "verdict", "transitions", "mde",
    ]  # fmt: skip
    # Recall's 8 paired deltas are all +0.5: no spread, so any change is detectable.
    assert d["metrics"]["retrieval.recall_at_k"]["mde"] == 0.0
    assert d["metrics"]["generation.completeness"]["mde"] is None
    assert d["metrics"]["generation.completeness"]["delta"] is None
    assert type(d["metrics"]["retrieval.mrr"]["mean_a"]) is float
    assert json.loads(json.dumps(d)) == d


def test_render_table(comparison):
    text = render_table(comparison)
    lines = text.splitlines()
    assert lines[0] == "A: run-a  (judge openai/judge-test)"
    assert lines[1] == "B: run-b  (judge openai/judge-test)"
    header = next(line for line in lines if line.startswith("metric "))
    assert header.split() == [
        "metric", "paired", "mean", "A", "mean", "B", "delta", "95%", "CI", "p", "MDE", "verdict",
    ]  # fmt: skip
    recall = next(line for line in lines if line.startswith("retrieval.recall_at_k"))
    assert recall.split() == [
        "retrieval.recall_at_k", "8", "0.2500", "0.7500", "+0.5000",
        "[+0.5000,", "+0.5000]", "0.0078", "0.0000", "better",
    ]  # fmt: skip
    completeness = next(line for line in lines if line.startswith("generation.completeness"))
    assert completeness.split() == [
        "generation.completeness", "0", "-", "-", "-", "-", "-", "-", "scored", "in", "A",
        "only",
    ]  # fmt: skip
    assert "robustness.overrefusal (lower is better)" in text
    assert any(line.startswith("Read: delta = B - A") for line in lines)
    assert "Status changes (A -> B)" in text
    assert "Largest regressions (top 10):" in text


def test_duplicate_results_are_rejected():
    a = side("run-a", "results_a.csv")
    doubled = RunSide(a.record, pd.concat([a.results, a.results.head(1)]))
    with pytest.raises(ValueError, match="run-a has more than one result for case c1"):
        compare_runs(doubled, side("run-b", "results_b.csv"))


def test_compare_reads_runs_back_from_the_real_store(tmp_path, comparison):
    store = RunStore(tmp_path / "store")
    for run_id, results_file in (("run-a", "results_a.csv"), ("run-b", "results_b.csv")):
        frame = results(run_id, results_file)
        store.write_manifest(run_id, {"run_id": run_id})
        store.write_case_results(
            run_id,
            [
                MetricResult(
                    row.case_id,
                    row.metric,
                    Status(row.status),
                    None if pd.isna(row.value) else float(row.value),
                    None if pd.isna(row.reason) else row.reason,
                )
                for row in frame.itertuples()
            ],
        )
        store.write_run(record(run_id))
    a, b = (RunSide(store.get_run(r), store.case_results_frame(r)) for r in ("run-a", "run-b"))
    assert compare_runs(a, b).to_dict() == comparison.to_dict()


def test_a_metric_only_one_run_selected_is_named_not_compared():
    a = side("run-a", "results_a.csv")
    b = side("run-b", "results_b.csv")
    # Run B did not select groundedness or exact match: no rows at all for them.
    kept = ~b.results["metric"].isin(["generation.groundedness", "echo.exact_match"])
    b = RunSide(b.record, b.results[kept])
    comparison = compare_runs(a, b)
    assert [m.metric for m in comparison.metrics] == [
        "retrieval.recall_at_k",
        "retrieval.mrr",
        "generation.completeness",
        "robustness.abstention",
        "robustness.overrefusal",
    ]
    assert comparison.only_in_a == ("generation.groundedness", "echo.exact_match")
    assert comparison.only_in_b == ()
    assert comparison.to_dict()["metrics_only_in_a"] == [
        "generation.groundedness",
        "echo.exact_match",
    ]
    assert (
        "Not compared, computed in run A only: generation.groundedness, echo.exact_match"
        in comparison.render_table().splitlines()
    )


def _with_settings(run_side: RunSide, **run: object) -> RunSide:
    record = replace(run_side.record, config_json=json.dumps({"run": run}))
    return RunSide(record, run_side.results)


def test_runs_scored_at_another_k_or_source_match_are_refused_unless_allowed():
    a = _with_settings(side("run-a", "results_a.csv"), k=3, source_match="chunk")
    b = _with_settings(side("run-b", "results_b.csv"), k=5, source_match="document")
    with pytest.raises(MixedSettingsError) as err:
        compare_runs(a, b)
    assert str(err.value) == (
        "runs run-a and run-b were scored with different settings: run.k 3 vs 5; "
        "run.source_match chunk vs document. Their retrieval scores are different measures."
    )
    allowed = compare_runs(a, b, allow_mixed_settings=True)
    assert allowed.settings_differences == ("run.k 3 vs 5", "run.source_match chunk vs document")
    same = _with_settings(side("run-b", "results_b.csv"), k=3, source_match="chunk")
    assert compare_runs(a, same).settings_differences == ()
