"""Human labels of a run's judge scores: reading, matching (PPI inputs), sampling."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from ragproof_core.calibration.labels import (
    LabelsError,
    calibrate_run,
    judge_scores,
    read_labels,
    sample_for_labelling,
)
from ragproof_core.model import Answer, Case, CaseOutput
from tests.conftest import FIXTURES

LABELS = FIXTURES / "labels" / "labels.jsonl"
RELEVANCE = "generation.answer_relevance"
RAW = '{"verdict": "relevant"}'


def results() -> pd.DataFrame:
    """Relevance judged on a..g (f only by the judge), one heuristic score, one skip, MRR."""
    rows = [
        ("a", RELEVANCE, "scored", 0.5, RAW),
        ("b", RELEVANCE, "scored", 1.0, RAW),
        ("c", RELEVANCE, "scored", 0.0, RAW),
        ("d", RELEVANCE, "scored", 1.0, RAW),
        ("e", RELEVANCE, "scored", 0.5, RAW),
        ("f", RELEVANCE, "scored", 0.5, RAW),
        ("g", RELEVANCE, "scored", 0.0, RAW),
        ("h", RELEVANCE, "skipped", None, None),
        ("a", "robustness.overrefusal", "scored", 1.0, None),  # heuristic, not the judge's
        ("a", "retrieval.mrr", "scored", 1.0, None),
    ]
    return pd.DataFrame(rows, columns=["case_id", "metric", "status", "value", "judge_raw_json"])


def test_judge_scores_are_the_judge_replies_only() -> None:
    assert judge_scores(results()) == {
        RELEVANCE: {"a": 0.5, "b": 1.0, "c": 0.0, "d": 1.0, "e": 0.5, "f": 0.5, "g": 0.0}
    }


def test_read_labels_skips_unlabelled_lines_and_keeps_lines_as_given() -> None:
    labels = read_labels(LABELS)
    assert [(x.case_id, x.metric, x.score) for x in labels] == [
        ("a", RELEVANCE, 1.0),
        ("b", RELEVANCE, 1.0),
        ("c", RELEVANCE, 0.5),
        ("zz", RELEVANCE, 0.0),
        ("a", "retrieval.mrr", 1.0),
        ("e", RELEVANCE, 0.25),
    ]
    assert labels[2].line == {
        "case_id": "c",
        "metric": RELEVANCE,
        "score": 0.5,
        "note": "extra keys are kept",
    }


def test_calibrate_run_by_hand() -> None:
    calibration = calibrate_run("r1", results(), read_labels(LABELS))
    assert [m.metric for m in calibration.metrics] == [RELEVANCE]
    e = calibration.metrics[0].estimate
    # L = a, b, c, e: f = [0.5, 1, 0, 0.5], y = [1, 1, 0.5, 0.25], y - f = [0.5, 0, 0.5, -0.25]
    # U = d, f, g: f = [1, 0.5, 0]
    assert (e.n_judged, e.n_labelled) == (7, 4)
    assert e.judge_mean == pytest.approx(3.5 / 7, abs=1e-15)
    assert e.human_mean == pytest.approx(2.75 / 4, abs=1e-15)
    assert e.ppi_mean == pytest.approx(0.5 + 0.75 / 4, abs=1e-15)
    # var_U(f) = 0.5 / 2 = 0.25; y - f: mean 0.1875, squared deviations
    # 0.09765625 + 0.03515625 + 0.09765625 + 0.19140625 = 0.421875, var 0.140625.
    half = 1.96 * math.sqrt(0.25 / 3 + 0.140625 / 4)
    assert e.ppi_ci == pytest.approx((0.6875 - half, min(1.0, 0.6875 + half)), abs=1e-15)
    # Labels for cases the judge did not score in this run, as given.
    assert list(calibration.unmatched) == [
        {"case_id": "zz", "metric": RELEVANCE, "score": 0},
        {"case_id": "a", "metric": "retrieval.mrr", "score": 1},
    ]
    d = calibration.to_dict()
    assert list(d) == ["run_id", "metrics", "unmatched"]
    assert list(d["metrics"][0]) == [
        "metric", "n_judged", "n_labelled", "judge_mean", "judge_ci", "human_mean",
        "ppi_mean", "ppi_ci", "human_ci",
    ]  # fmt: skip
    table = calibration.render_table()
    assert "2 label line(s) name a case the judge did not score" in table


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "not valid JSON"),
        ("[1]", 'a label must be an object {"case_id", "metric", "score"}'),
        ('{"case_id": "a", "metric": "generation.answer_relevance"}', "missing key 'score'"),
        ('{"case_id": 3, "metric": "generation.answer_relevance", "score": 1}', "case_id must"),
        ('{"case_id": "a", "metric": "relevance", "score": 1}', "unknown metric 'relevance'"),
        (
            '{"case_id": "a", "metric": "generation.answer_relevance", "score": 1.5}',
            "score must be a number in [0, 1], got 1.5",
        ),
        (
            '{"case_id": "a", "metric": "generation.answer_relevance", "score": true}',
            "score must be a number in [0, 1], got True",
        ),
    ],
)
def test_bad_label_lines_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text('{"case_id": "b", "metric": "retrieval.mrr", "score": 0}\n' + line + "\n")
    with pytest.raises(LabelsError) as caught:
        read_labels(path)
    assert str(caught.value).startswith(f"{path}:2: ")
    assert message in str(caught.value)


def test_a_case_labelled_twice_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    line = json.dumps({"case_id": "a", "metric": RELEVANCE, "score": 1})
    path.write_text(f"{line}\n{line}\n")
    with pytest.raises(
        LabelsError, match=r":2: case 'a' metric .* labelled twice \(first at line 1\)"
    ):
        read_labels(path)
    with pytest.raises(LabelsError, match="no such labels file"):
        read_labels(tmp_path / "missing.jsonl")


def test_sample_is_seeded_and_drawn_per_metric() -> None:
    cases = [Case(id=c, question=f"question {c}") for c in "abcdefgh"]
    outputs = [CaseOutput(c, Answer(f"answer {c}")) for c in "abcdefgh"]
    first = sample_for_labelling(results(), cases, outputs, 3, seed=7)
    assert first == sample_for_labelling(results(), cases, outputs, 3, seed=7)
    assert len(first) == 3 and len({line["case_id"] for line in first}) == 3
    line = first[0]
    assert list(line) == ["case_id", "metric", "question", "answer", "judge_score", "score"]
    assert line["metric"] == RELEVANCE and line["score"] is None
    assert line["question"] == f"question {line['case_id']}"
    assert line["judge_score"] == judge_scores(results())[RELEVANCE][line["case_id"]]
    # Asking for more than there are gives them all, once each.
    everything = sample_for_labelling(results(), cases, outputs, 50, seed=7)
    assert sorted(x["case_id"] for x in everything) == list("abcdefg")
    with pytest.raises(ValueError, match="--sample must be at least 1"):
        sample_for_labelling(results(), cases, outputs, 0)
