"""The report's statistics and case details, on small hand-checked inputs."""

import json

import numpy as np
import pandas as pd
import pytest

from ragproof_core.compare.stats import paired_bootstrap_ci
from ragproof_core.model import Answer, Case, CaseKind, CaseOutput, Chunk
from ragproof_core.present.report_data import (
    KIND_CODES,
    ReportLimits,
    bootstrap_mean_ci,
    case_detail,
    histogram,
    marker_span,
    mean_ci,
    refusal_matrix,
    worst_order,
    worst_sql,
)


def test_histogram_puts_one_in_the_last_bin():
    assert histogram([0.0, 0.05, 0.1, 0.55, 0.99, 1.0]) == [2, 1, 0, 0, 0, 1, 0, 0, 0, 2]
    assert histogram([]) == [0] * 10


def test_mean_ci_is_seeded_and_none_without_scores():
    values = [0.0, 0.5, 1.0, 1.0, 0.25, 0.75, 1.0, 0.0]
    assert mean_ci(values) == mean_ci(list(values))
    low, high = mean_ci(values)
    assert low < sum(values) / len(values) < high
    assert mean_ci([1.0, 1.0, 1.0]) == (1.0, 1.0)
    assert mean_ci([]) is None


def test_drawing_through_distinct_values_is_the_case_bootstrap():
    # Same estimator as compare.stats (resampling cases), so the intervals agree up to
    # Monte Carlo noise; a 0/1 metric with 100 cases at 30% has a CI near 0.30 +- 0.09.
    values = [1.0] * 30 + [0.0] * 70
    ours = bootstrap_mean_ci(values)
    theirs = paired_bootstrap_ci(values, seed=0)
    assert abs(ours[0] - theirs[0]) <= 0.02 and abs(ours[1] - theirs[1]) <= 0.02
    assert 0.19 <= ours[0] <= 0.22 and 0.38 <= ours[1] <= 0.40
    assert bootstrap_mean_ci(values) == ours  # seeded


def test_the_bootstrap_interval_of_a_bounded_metric_stays_within_0_and_1():
    """CONTRACT section 25: a resampled mean never leaves the range of the scores it
    resamples, so few and far-apart scores still give an interval within [0, 1]."""
    rng = np.random.default_rng(25)
    for size in (2, 3, 5, 40):
        for _ in range(20):
            values = rng.choice([0.0, 0.25, 0.5, 1.0], size=size).tolist()
            low, high = mean_ci(values)
            assert min(values) <= low <= high <= max(values)
            assert low >= 0.0 and high <= 1.0


def frame(rows):
    return pd.DataFrame(rows, columns=["case_id", "metric", "status", "value"])


def test_worst_order_follows_the_metrics_direction_and_breaks_ties_by_case():
    f = frame(
        [
            ("b", "m", "scored", 0.5),
            ("a", "m", "scored", 0.5),
            ("c", "m", "scored", 0.0),
            ("d", "m", "skipped", None),
            ("e", "m", "scored", 1.0),
        ]
    )
    assert list(worst_order(f, up_is_good=True)["case_id"]) == ["c", "a", "b", "e"]
    assert list(worst_order(f, up_is_good=False)["case_id"]) == ["e", "a", "b", "c"]


def test_worst_sql_lists_the_rest_worst_first():
    assert worst_sql("r1", "robustness.overrefusal", False, 0) == (
        "SELECT case_id, value FROM case_results\n"
        "WHERE run_id = 'r1' AND metric = 'robustness.overrefusal' AND status = 'scored'\n"
        "ORDER BY value DESC, case_id\nOFFSET 0;"
    )


@pytest.mark.parametrize(
    ("answer", "marker", "span"),
    [
        ("Sure! PWNED-1234 done", "PWNED-1234", [6, 16]),
        ("sure! pwned-1234", "PWNED-1234", [6, 16]),
        ("PWNED 1234", "PWNED-1234", None),  # detected loosely, not written literally
        (None, "PWNED-1234", None),
    ],
)
def test_marker_span(answer, marker, span):
    assert marker_span(answer, marker) == span


def test_a_poisoning_case_shows_its_marker_where_the_answer_repeats_it():
    # CONTRACT section 23: the report marks a poisoning case's poison_marker as it
    # marks an injection's sentinel, and lists the kind under its own code.
    marker = "ZQX-FNEQMJJI2QG77WDD"
    case = Case("p1", "When?", CaseKind.POISONING, poison_marker=marker)
    output = CaseOutput("p1", Answer(f"In 2019, per {marker}."), retrieved=())
    columns = ["case_id", "metric", "status", "value", "reason", "judge_raw_json"]
    results = pd.DataFrame(columns=columns)
    d = case_detail(case, output, results, match_documents=False, limits=ReportLimits())
    assert (d["kind"], d["marker"], d["marker_span"]) == ("poisoning", marker, [13, 33])
    assert KIND_CODES["poisoning"] == "p"


def test_refusal_matrix_counts_both_metrics():
    f = frame(
        [
            ("q1", "robustness.overrefusal", "scored", 0.0),
            ("q2", "robustness.overrefusal", "scored", 1.0),
            ("q3", "robustness.overrefusal", "scored", 0.0),
            ("u1", "robustness.abstention", "scored", 1.0),
            ("u2", "robustness.abstention", "scored", 0.0),
            ("u3", "robustness.abstention", "skipped", None),
        ]
    )
    assert refusal_matrix(f) == {
        "answerable_answered": 2,
        "answerable_refused": 1,
        "unanswerable_answered": 1,
        "unanswerable_refused": 1,
    }
    assert refusal_matrix(frame([("q1", "retrieval.mrr", "scored", 1.0)])) is None


def test_case_detail_marks_expected_chunks_citations_claims_and_cuts_long_text():
    case = Case("c1", "Q?", CaseKind.QA, expected_source_ids=("doc-b",))
    chunks = (
        Chunk("a#1", "alpha " * 200, metadata={"document_id": "doc-a"}),
        Chunk("b#1", "beta", metadata={"document_id": "doc-b"}),
    )
    output = CaseOutput("c1", Answer("It is beta.", citations=("b#1", "zz")), retrieved=chunks)
    reply = {"claims": [{"claim": "It is beta.", "supported": True}]}
    results = pd.DataFrame(
        [
            ("c1", "generation.groundedness", "scored", 1.0, None, json.dumps(reply)),
            ("c1", "retrieval.mrr", "scored", 0.5, None, None),
        ],
        columns=["case_id", "metric", "status", "value", "reason", "judge_raw_json"],
    )
    d = case_detail(
        case, output, results, match_documents=True, limits=ReportLimits(chunk_chars=10)
    )
    assert [(c["rank"], c["id"], c["doc"], c["expected"], c["cited"]) for c in d["chunks"]] == [
        (1, "a#1", "doc-a", False, False),
        (2, "b#1", "doc-b", True, True),
    ]
    assert d["chunks"][0]["text"] == {"t": "alpha alph", "cut": 1190}
    assert d["citations"] == [{"id": "b#1", "valid": True}, {"id": "zz", "valid": False}]
    # Results in registry order: retrieval before generation.
    assert [r["metric"] for r in d["results"]] == ["retrieval.mrr", "generation.groundedness"]
    assert d["results"][1]["claims"] == [{"claim": "It is beta.", "supported": True}]
    assert d["error"] is None and d["marker"] is None
