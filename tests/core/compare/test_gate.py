"""The --fail-on-regression gate on the hand-made comparison fixture (tests/fixtures/compare)."""

import pandas as pd
import pytest

from ragproof_core.compare.comparison import RunSide, compare_runs
from ragproof_core.compare.gate import describe, regressions, worse_by
from tests.core.compare.test_comparison import record, side


@pytest.fixture(scope="module")
def a_to_b():
    return compare_runs(side("run-a", "results_a.csv"), side("run-b", "results_b.csv"))


@pytest.fixture(scope="module")
def b_to_a():
    # Uncorrected, so that over-refusal's p = 0.0391 alone decides (Holm: 0.0781).
    return compare_runs(
        side("run-b", "results_b.csv"), side("run-a", "results_a.csv"), correction="none"
    )


def test_only_significantly_worse_metrics_regress(a_to_b):
    # groundedness drops 1.0 -> 0.4375 on 8 pairs (p = 2/256); mrr drops on one case
    # but is not significant; recall and over-refusal improve.
    assert [m.metric for m in regressions(a_to_b)] == ["generation.groundedness"]
    assert describe(regressions(a_to_b)[0]) == (
        "generation.groundedness worse by 0.5625 (mean 1.0000 -> 0.4375, p = 0.0078, "
        "8 paired cases)"
    )


def test_direction_is_the_metrics_own(b_to_a):
    # Reversed, over-refusal (lower is better) rises 0.1 -> 0.8: worse by +0.7.
    worse = {m.metric: round(worse_by(m), 4) for m in regressions(b_to_a)}
    assert worse == {"retrieval.recall_at_k": 0.5, "robustness.overrefusal": 0.7}


@pytest.mark.parametrize(
    ("margin", "expected"),
    [(0.0, ["generation.groundedness"]), (0.56, ["generation.groundedness"]), (0.5625, [])],
)
def test_margin_is_a_strict_tolerance(a_to_b, margin, expected):
    assert [m.metric for m in regressions(a_to_b, margin)] == expected


def test_negative_margin_is_refused(a_to_b):
    with pytest.raises(ValueError, match="margin must be at least 0"):
        regressions(a_to_b, -0.1)


def test_holm_keeps_a_regression_out_of_the_gate_when_many_metrics_were_tested():
    """Reversed, over-refusal worsens at p = 0.0391, but with 4 metrics tested Holm
    adjusts it to 2 x 0.0391 = 0.0781: only recall (0.0078 x 4 = 0.0312) regresses."""
    holm = compare_runs(side("run-b", "results_b.csv"), side("run-a", "results_a.csv"))
    assert holm.correction == "holm"
    adjusted = {m.metric: m.p_adjusted for m in holm.metrics if m.p_adjusted is not None}
    assert adjusted == {
        "retrieval.recall_at_k": 4 * 2 / 256,
        "retrieval.mrr": 1.0,
        "generation.groundedness": 4 * 2 / 256,
        "robustness.overrefusal": 2 * 40 / 1024,
    }
    assert [m.metric for m in regressions(holm)] == ["retrieval.recall_at_k"]


def test_more_agent_steps_is_a_regression_and_fewer_an_improvement():
    """CONTRACT section 17: agent.steps is lower is better, tool recall higher."""

    def agent_side(run_id: str, steps: float, recall: float) -> RunSide:
        rows = [
            (run_id, f"c{i}", metric, "scored", value, None)
            for i in range(8)
            for metric, value in (("agent.steps", steps), ("agent.tool_recall", recall))
        ]
        columns = ["run_id", "case_id", "metric", "status", "value", "reason"]
        return RunSide(record(run_id), pd.DataFrame(rows, columns=columns))

    longer = compare_runs(agent_side("run-a", 2.0, 1.0), agent_side("run-b", 4.0, 0.5))
    worse = {m.metric: worse_by(m) for m in regressions(longer)}
    assert worse == {"agent.tool_recall": 0.5, "agent.steps": 2.0}
    shorter = compare_runs(agent_side("run-b", 4.0, 0.5), agent_side("run-a", 2.0, 1.0))
    assert regressions(shorter) == []
