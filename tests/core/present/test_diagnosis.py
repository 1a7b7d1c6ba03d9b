"""Where a run loses most (CONTRACT section 20): the diagnosis from the four metrics'
figures, and the case view's claims, by hand."""

from __future__ import annotations

import json

import pytest

from ragproof_core.metrics import diagnostics as d
from ragproof_core.present.claims import case_claims, claim_lines, claims_view, stored_reply
from ragproof_core.present.diagnosis import MetricFigure, diagnose

# Retrieval recall 0.9 (loses 0.1), utilization 0.55 (0.45), hallucination 0.2, noise 0.3.
FIGURES = {
    d.RETRIEVAL_CLAIM_RECALL: MetricFigure(0.9, (0.8, 0.95), 40),
    d.CONTEXT_UTILIZATION: MetricFigure(0.55, (0.45, 0.65), 36),
    d.HALLUCINATION: MetricFigure(0.2, (0.1, 0.3), 40),
    d.NOISE_SENSITIVITY: MetricFigure(0.3, (0.2, 0.4), 40),
    # Not an area: ignored.
    d.CLAIM_PRECISION: MetricFigure(0.5, (0.4, 0.6), 40),
}


# The widest "share of" cell, which sets the rule under the headers.
NOISE = (
    "answer claims outside the reference taken from retrieved chunks (generation.noise_sensitivity)"
)


def test_the_largest_loss_leads_with_its_interval():
    found = diagnose(FIGURES)
    assert [loss.area.name for loss in found.losses] == [
        "use of evidence", "noise", "invention", "retrieval",
    ]  # fmt: skip
    lead = found.lead
    assert lead.loss == pytest.approx(0.45)
    # A higher-is-better metric's interval turns around: 1 - 0.65 .. 1 - 0.45.
    assert lead.ci == pytest.approx((0.35, 0.55))
    assert found.losses[3].ci == pytest.approx((0.05, 0.2))
    # 0.35 > 0.4 fails: the lead over noise [0.2, 0.4] is not clear.
    assert found.clear is False
    assert found.lines() == [
        "diagnosis: the run loses most to use of evidence, not clearly ahead of noise "
        "(their intervals overlap)",
        "  area               lost  95% CI            cases  share of",
        "  ---------------  ------  ----------------  -----  " + "-" * len(NOISE),
        "  use of evidence  0.4500  [0.3500, 0.5500]     36  supported reference claims the "
        "answer leaves out (1 - generation.context_utilization)",
        "  noise            0.3000  [0.2000, 0.4000]     40  answer claims outside the reference "
        "taken from retrieved chunks (generation.noise_sensitivity)",
        "  invention        0.2000  [0.1000, 0.3000]     40  answer claims neither the reference "
        "nor any chunk supports (generation.hallucination)",
        "  retrieval        0.1000  [0.0500, 0.2000]     40  reference claims no retrieved chunk "
        "supports (1 - retrieval.claim_recall)",
        "  look at: the generator ignored evidence it was given: prompt, context order, "
        "context length",
    ]
    as_json = found.to_dict()
    assert (as_json["lead"], as_json["clear"]) == ("use of evidence", False)
    assert as_json["areas"][0] == {
        "area": "use of evidence",
        "metric": d.CONTEXT_UTILIZATION,
        "higher_is_better": True,
        "mean": 0.55,
        "ci": [0.45, 0.65],
        "loss": pytest.approx(0.45),
        "loss_ci": pytest.approx([0.35, 0.55]),
        "scored": 36,
        "counts": "supported reference claims the answer leaves out",
        "action": "the generator ignored evidence it was given: prompt, context order, "
        "context length",
    }


def test_overlapping_intervals_make_the_lead_unclear():
    apart = {**FIGURES, d.NOISE_SENSITIVITY: MetricFigure(0.3, (0.25, 0.34), 40)}
    found = diagnose(apart)
    assert found.clear is True  # 0.35 > 0.34
    assert found.lines()[0] == "diagnosis: the run loses most to use of evidence"
    # An interval that could not be computed cannot show a clear lead.
    unknown = {**apart, d.CONTEXT_UTILIZATION: MetricFigure(0.55, None, 36)}
    assert diagnose(unknown).clear is False
    assert "  use of evidence  0.4500  -" in "\n".join(diagnose(unknown).lines())


def test_areas_without_scored_cases_are_left_out_and_ties_keep_the_area_order():
    alone = {
        d.HALLUCINATION: MetricFigure(0.25, (0.1, 0.4), 8),
        d.NOISE_SENSITIVITY: MetricFigure(0.25, (0.1, 0.4), 8),
        d.CONTEXT_UTILIZATION: MetricFigure(0.0, None, 0),
    }
    found = diagnose(alone)
    assert [loss.area.name for loss in found.losses] == ["invention", "noise"]
    assert diagnose({}) is None
    assert diagnose({d.HALLUCINATION: MetricFigure(0.0, None, 0)}) is None


REPLY = {
    "response_claims": [
        {"claim": "grounded one", "in_reference": True, "chunk_ids": ["c1", "c1"]},
        {"claim": "from memory", "in_reference": True, "chunk_ids": []},
        {"claim": "off the question", "in_reference": False, "chunk_ids": ["c2"]},
        {"claim": "made up", "in_reference": False, "chunk_ids": ["zz"]},
    ],
    "reference_claims": [
        {"claim": "used", "in_response": True, "chunk_ids": ["c1"]},
        {"claim": "left out", "in_response": False, "chunk_ids": ["c3"]},
        {"claim": "never found", "in_response": False, "chunk_ids": []},
        {"claim": "said anyway", "in_response": True, "chunk_ids": []},
    ],
}


def test_each_claim_is_named_with_its_chunks():
    view = claims_view(REPLY, ["c1", "c2", "c3"])
    assert [(c["claim"], c["kind"], c["chunks"], c["ignored"]) for c in view["response"]] == [
        ("grounded one", "grounded", ["c1"], []),
        ("from memory", "self-knowledge", [], []),
        ("off the question", "noise", ["c2"], []),
        ("made up", "hallucination", [], ["zz"]),
    ]
    assert [(c["claim"], c["kind"], c["chunks"]) for c in view["reference"]] == [
        ("used", "used", ["c1"]),
        ("left out", "ignored", ["c3"]),
        ("never found", "missed", []),
        ("said anyway", "unsupported", []),
    ]
    lines = [line.rstrip() for line in claim_lines(view)]
    assert lines[0].split() == ["of", "what", "it", "is", "claim", "supported", "by"]
    assert lines[5].split() == [
        "answer", "hallucination", "made", "up", "-", "(not", "in", "the", "context:", "zz)",
    ]  # fmt: skip
    assert lines[7].split() == ["reference", "ignored", "left", "out", "c3"]


def test_claims_come_from_any_claim_metrics_stored_reply_a_jury_from_its_first_model():
    rows = [
        {"metric": "generation.groundedness", "judge_raw_json": json.dumps({"claims": []})},
        {"metric": d.HALLUCINATION, "judge_raw_json": json.dumps({"jury": {"m1": REPLY}})},
    ]
    view = case_claims(rows, ["c1", "c2", "c3"])
    assert [c["kind"] for c in view["reference"]] == ["used", "ignored", "missed", "unsupported"]
    # A failed call stores its error: no claims to show.
    failed = json.dumps({"error": "reply failed validation twice", "raw": "nonsense"})
    assert stored_reply(failed) is None
    assert case_claims([{"metric": d.HALLUCINATION, "judge_raw_json": failed}], []) is None
