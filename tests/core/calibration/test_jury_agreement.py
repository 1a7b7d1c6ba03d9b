"""Krippendorff's alpha (interval) of a jury over the bands 0 / 0.5 / 1."""

from __future__ import annotations

import json

import pytest

from ragproof_core.calibration.jury_agreement import jury_agreement, krippendorff_alpha
from ragproof_core.model import MetricResult, Status


def test_alpha_on_a_hand_checked_example():
    # Two models, three cases: (1, 1), (0.5, 0), (0, 0). n = 6 pairable values.
    # D_o = (1/6) * [0 + (0.25 + 0.25)/1 + 0] = 1/12
    # D_e: values 1, 1, 0.5, 0, 0, 0; sum over ordered pairs of (a - b)^2
    #      = 2 * 6 * 2.25 - 2 * 2.5^2 = 14.5, over 6 * 5 pairs -> 14.5 / 30
    # alpha = 1 - (1/12) / (14.5/30) = 1 - 5/29 = 24/29
    assert krippendorff_alpha([[1, 1], [0.5, 0], [0, 0]]) == pytest.approx(24 / 29, abs=1e-12)


def test_alpha_matches_krippendorffs_published_interval_example():
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 coders,
    # 12 units, missing values; interval alpha = 0.849. Unit 12 has one value only.
    a = [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None]
    b = [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3]
    c = [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None]
    d = [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]
    units = [list(u) for u in zip(a, b, c, d, strict=True)]
    assert round(krippendorff_alpha(units), 3) == 0.849


def test_alpha_edge_cases():
    assert krippendorff_alpha([[1, 1], [0, 0], [0.5, 0.5]]) == 1.0  # perfect agreement
    assert krippendorff_alpha([[1, 1], [1, 1]]) is None  # no variation: undefined
    assert krippendorff_alpha([[1, None], [0]]) is None  # nothing pairable
    # A unit with one value is left out: the same as without it.
    assert krippendorff_alpha([[1, 1], [0.5, 0], [0, 0], [1, None]]) == pytest.approx(24 / 29)
    # Systematic disagreement is below chance.
    assert krippendorff_alpha([[1, 0], [0, 1]]) < 0


def jury_result(case_id: str, a: float | None, b: float | None) -> MetricResult:
    raw = json.dumps({"jury": {"m-a": {}, "m-b": {}}, "scores": {"m-a": a, "m-b": b}})
    values = [v for v in (a, b) if v is not None]
    return MetricResult(
        case_id, "retrieval.context_relevance", Status.SCORED, sum(values) / 2, None, raw
    )


def test_jury_agreement_bands_each_models_score_and_counts_pairable_cases():
    results = [
        jury_result("c1", 0.9, 1.0),  # bands 1, 1
        jury_result("c2", 0.6, 0.1),  # bands 0.5, 0
        jury_result("c3", 0.0, 0.2),  # bands 0, 0
        jury_result("c4", 1.0, None),  # one model failed: not pairable
        MetricResult("c5", "generation.groundedness", Status.SCORED, 1.0, None, '{"claims": []}'),
    ]
    agreement = jury_agreement(results)
    assert list(agreement) == ["retrieval.context_relevance"]
    item = agreement["retrieval.context_relevance"]
    assert item["alpha"] == pytest.approx(24 / 29)
    assert (item["level"], item["cases"], item["models"]) == ("interval", 3, ["m-a", "m-b"])
