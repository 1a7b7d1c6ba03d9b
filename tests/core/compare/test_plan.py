"""``ragproof plan``'s core: cases needed per metric from one run's per-case spread."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ragproof_core.compare.plan import plan_run


def results() -> pd.DataFrame:
    rows = [
        ("a", "generation.answer_relevance", "scored", 1.0),
        ("b", "generation.answer_relevance", "scored", 0.0),
        ("c", "generation.answer_relevance", "scored", 0.5),
        ("d", "generation.answer_relevance", "judge_error", None),
        ("a", "retrieval.mrr", "scored", 1.0),
        ("b", "retrieval.mrr", "skipped", None),
    ]
    return pd.DataFrame(rows, columns=["case_id", "metric", "status", "value"])


def test_cases_needed_per_metric_in_metric_order() -> None:
    plan = plan_run("r1", results(), 0.1)
    # relevance: values 1, 0, 0.5 -> sample variance 0.25, sd 0.5;
    # (2.8016 * 0.5 / 0.1)^2 = 196.224064 -> 197. MRR: one value, no sd.
    assert [m.to_dict() for m in plan.metrics] == [
        {"metric": "retrieval.mrr", "scored": 1, "sd": None, "cases_needed": None},
        {
            "metric": "generation.answer_relevance",
            "scored": 3,
            "sd": pytest.approx(0.5, abs=1e-15),
            "cases_needed": 197,
        },
    ]
    d = plan.to_dict()
    assert (d["run_id"], d["delta"], d["alpha"], d["power"]) == ("r1", 0.1, 0.05, 0.8)
    lines = plan.render_table().splitlines()
    assert lines[0] == (
        "Cases needed to detect a change of 0.1 in run r1 (two-sided alpha 0.05, power 80%):"
    )
    assert lines[2].split() == ["metric", "scored", "sd", "cases", "needed"]
    assert lines[4].split() == ["retrieval.mrr", "1", "-", "-"]
    assert lines[5].split() == ["generation.answer_relevance", "3", "0.5000", "197"]
    assert "unpaired-difference bound" in lines[-1]


def test_delta_must_be_positive() -> None:
    with pytest.raises(ValueError, match="--delta must be positive"):
        plan_run("r1", results(), -0.1)


def test_a_metric_without_variation_says_any_difference_is_detectable() -> None:
    rows = [(case, "retrieval.mrr", "scored", 1.0) for case in "abc"]
    plan = plan_run("r1", pd.DataFrame(rows, columns=["case_id", "metric", "status", "value"]), 0.1)
    assert plan.metrics[0].to_dict()["cases_needed"] == 0
    assert plan.render_table().splitlines()[4].split(maxsplit=3) == [
        "retrieval.mrr",
        "3",
        "0.0000",
        "no variation: any difference is detectable",
    ]


def test_a_run_with_repeats_plans_cases_and_trials_from_its_measured_spreads() -> None:
    # CONTRACT section 27: three cases, three trials each.
    matrix = {"a": [0.2, 0.6, 0.4], "b": [0.9, 1.0, 0.8], "c": [0.5, 0.1, 0.3]}
    rows = [
        (case, "retrieval.mrr", "scored", value, trial)
        for case, values in matrix.items()
        for trial, value in enumerate(values, 1)
    ]
    frame = pd.DataFrame(rows, columns=["case_id", "metric", "status", "value", "trial"])
    plan = plan_run("r1", frame, 0.1)
    (metric,) = plan.metrics
    x = np.array(list(matrix.values()))
    within = np.sqrt(x.var(axis=1, ddof=1).mean())
    means_sd = x.mean(axis=1).std(ddof=1)
    own = max(0.0, means_sd**2 - within**2 / 3)
    d = metric.to_dict()
    assert d["sd"] == pytest.approx(means_sd)
    assert d["within_case_sd"] == pytest.approx(within)
    assert d["between_case_sd"] == pytest.approx(np.sqrt(own))
    expected = {
        str(r): math.ceil((2.8016 * np.sqrt(own + within**2 / r) / 0.1) ** 2)
        for r in (1, 2, 3, 5, 10)
    }
    assert d["cases_needed_by_trials"] == expected
    assert d["cases_needed"] == expected["3"]  # the run's own trials
    table = plan.render_table()
    assert "by trials a case" in table.splitlines()[0]
    # Three cases are too few at any trials: the advice names the cases needed.
    floor = math.ceil((2.8016 * np.sqrt(own) / 0.1) ** 2)
    assert (d["cases_with_a_scored_trial"], d["trials_needed_with_these_cases"]) == (3, None)
    assert d["cases_needed_at_any_trials"] == floor
    assert table.splitlines()[-1] == (
        "retrieval.mrr: 3 cases cannot detect 0.1 at up to 100 trials a case: it needs more "
        f"cases, {expected['1']} at 1 trial a case, no fewer than {floor} however many trials "
        f"(cases' own sd {np.sqrt(own):.4f})"
    )


def _trials_frame(matrix: dict[str, list[float]]) -> pd.DataFrame:
    rows = [
        (case, "retrieval.mrr", "scored", value, trial)
        for case, values in matrix.items()
        for trial, value in enumerate(values, 1)
    ]
    return pd.DataFrame(rows, columns=["case_id", "metric", "status", "value", "trial"])


def test_a_plan_with_repeats_says_how_many_trials_the_runs_own_cases_need() -> None:
    # Three cases alike on average, each flipping between trials: only the trials' noise
    # varies, so more trials of the same three cases detect 0.5.
    matrix = {"a": [0, 1, 0, 1], "b": [1, 0, 1, 0], "c": [0, 1, 1, 0]}
    plan = plan_run("r1", _trials_frame(matrix), 0.5)
    d = plan.metrics[0].to_dict()
    x = np.array(list(matrix.values()), dtype=float)
    within = np.sqrt(x.var(axis=1, ddof=1).mean())
    assert x.mean(axis=1).std(ddof=1) == 0  # s_b = 0
    needed = [math.ceil((2.8016 * within / np.sqrt(r) / 0.5) ** 2) for r in range(1, 101)]
    fewest = 1 + next(i for i, n in enumerate(needed) if n <= 3)
    assert fewest == 4  # 11, 6, 4, 3, ... cases at 1, 2, 3, 4 trials
    assert d["trials_needed_with_these_cases"] == fewest
    assert d["cases_needed_at_any_trials"] is None
    assert plan.render_table().splitlines()[-1] == (
        "retrieval.mrr: the run's 3 cases detect 0.5 with 4 trials a case (12 trials in all)"
    )


def test_a_plan_with_repeats_says_any_difference_is_detectable_where_nothing_varies() -> None:
    plan = plan_run("r1", _trials_frame({"a": [1, 1], "b": [1, 1]}), 0.1)
    lines = plan.render_table().splitlines()
    assert plan.metrics[0].to_dict()["cases_needed_by_trials"]["1"] == 0
    # The table's counts say nothing (0 cases would read as "none needed"); a line says why.
    assert lines[2].split()[:6] == ["metric", "scored", "within", "sd", "cases'", "own"]
    assert lines[4].split() == ["retrieval.mrr", "4", "0.0000", "0.0000"] + ["-"] * 5
    assert (
        lines[-1] == "retrieval.mrr: no variation in cases or trials: any difference is detectable"
    )


def test_a_plan_with_repeats_of_cases_alike_names_the_cases_needed_at_the_most_trials() -> None:
    # s_b = 0 and s_w^2 = 1/2: two cases are too few even at 100 trials a case.
    plan = plan_run("r1", _trials_frame({"a": [0, 1], "b": [1, 0]}), 0.1)
    at_one = math.ceil((2.8016 * np.sqrt(0.5) / 0.1) ** 2)
    at_most = math.ceil((2.8016 * np.sqrt(0.5 / 100) / 0.1) ** 2)
    assert (at_one, at_most) == (393, 4)
    assert plan.metrics[0].to_dict()["trials_needed_with_these_cases"] is None
    assert plan.render_table().splitlines()[-1] == (
        "retrieval.mrr: 2 cases cannot detect 0.1 at up to 100 trials a case: it needs more "
        "cases, 393 at 1 trial a case, 4 at 100 trials"
    )
