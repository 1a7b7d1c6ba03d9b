"""compare ranks the claim diagnostics' changes (CONTRACT section 20): each area's loss in
A and B, the change, its interval turned the loss's way, largest new loss first."""

from __future__ import annotations

import pytest

from ragproof_core.compare.comparison import BETTER, NO_CHANGE, WORSE, MetricComparison
from ragproof_core.compare.diagnosis_changes import diagnosis_changes, diagnosis_lines
from ragproof_core.metrics import diagnostics as d


def compared(metric, up, mean_a, mean_b, ci, p, verdict, paired=30) -> MetricComparison:
    return MetricComparison(
        metric=metric,
        higher_is_better=up,
        scored_a=paired,
        scored_b=paired,
        paired=paired,
        mean_a=mean_a,
        mean_b=mean_b,
        delta=mean_b - mean_a,
        ci_low=ci[0],
        ci_high=ci[1],
        p_value=p,
        verdict=verdict,
        p_adjusted=p,
    )


ROWS = [
    compared("generation.groundedness", True, 0.9, 0.7, (-0.3, -0.1), 0.001, WORSE),
    # retrieval: recall 0.9 -> 0.6, the loss 0.1 -> 0.4 (+0.3); its interval turns around.
    compared(d.RETRIEVAL_CLAIM_RECALL, True, 0.9, 0.6, (-0.4, -0.2), 0.0002, WORSE),
    # use of evidence: utilization 0.5 -> 0.6, the loss 0.5 -> 0.4 (-0.1).
    compared(d.CONTEXT_UTILIZATION, True, 0.5, 0.6, (-0.02, 0.2), 0.2, NO_CHANGE),
    # invention: 0.10 -> 0.15 (+0.05); noise 0.3 -> 0.1 (-0.2).
    compared(d.HALLUCINATION, False, 0.10, 0.15, (-0.01, 0.11), 0.09, NO_CHANGE),
    compared(d.NOISE_SENSITIVITY, False, 0.3, 0.1, (-0.3, -0.1), 0.001, BETTER),
]


def test_areas_are_ranked_by_the_change_of_their_loss():
    changes = diagnosis_changes(ROWS)
    assert [(c.area.name, round(c.change, 10)) for c in changes] == [
        ("retrieval", 0.3),
        ("invention", 0.05),
        ("use of evidence", -0.1),
        ("noise", -0.2),
    ]
    retrieval = changes[0]
    assert (retrieval.loss_a, retrieval.loss_b) == pytest.approx((0.1, 0.4))
    assert (retrieval.ci_low, retrieval.ci_high) == (0.2, 0.4)
    assert retrieval.verdict == WORSE
    assert changes[3].to_dict() == {
        "area": "noise",
        "metric": d.NOISE_SENSITIVITY,
        "paired": 30,
        "loss_a": 0.3,
        "loss_b": 0.1,
        "change": pytest.approx(-0.2),
        "ci_low": -0.3,
        "ci_high": -0.1,
        "p_value": 0.001,
        "p_adjusted": 0.001,
        "verdict": BETTER,
    }
    lines = diagnosis_lines(changes)
    assert lines[0] == (
        "Diagnosis changes (where B loses more than A first; loss = the share of claims lost):"
    )
    assert lines[3].split() == [
        "retrieval", "30", "0.1000", "0.4000", "+0.3000", "[+0.2000,", "+0.4000]", "0.0002",
        "worse",
    ]  # fmt: skip


def test_areas_not_compared_are_left_out():
    unpaired = MetricComparison(
        d.HALLUCINATION, False, 0, 4, 0, None, None, None, None, None, None, "scored in B only"
    )
    assert diagnosis_changes([ROWS[0], unpaired]) == []
    assert diagnosis_lines([]) == []
