"""`ragproof calibrate --sample/--labels`, `show` with a calibration, and `ragproof plan`,
as a user runs them, on the recorded fixture judged by the local server.

The server judges every answer relevant, so answer_relevance's judge scores
are 1.0 on its N = 4 judged cases (c1..c4). Labels c1 = 0.5 and c2 = 1 give
y - f = [-0.5, 0] (mean -0.25, variance 0.125) and var_U(f) = 0:
ppi_mean = 1 - 0.25 = 0.75, half width 1.96 * sqrt(0.125 / 2) = 0.49; the
human-only interval is the same here (sd 0.25 * sqrt(2) over sqrt(2)). Both
intervals, [0.26, 1.24], are reported within [0, 1]: [0.26, 1] (CONTRACT section 25).
"""

from __future__ import annotations

import json

import duckdb
import pytest

from tests.assets.expected import RUN_ARGS
from tests.support.cli import cli_env, ragproof
from tests.support.judge_server import JudgeServer

pytestmark = pytest.mark.slow
RELEVANCE = "generation.answer_relevance"


@pytest.fixture(scope="module")
def server():
    with JudgeServer() as srv:
        yield srv


def test_sample_label_calibrate_show_and_plan(server, store_path, tmp_path):
    env = cli_env(
        RAGPROOF_JUDGE_MODEL="openai/judge-test",
        RAGPROOF_JUDGE_API_BASE=server.url,
        OPENAI_API_KEY="sk-test-labels",
    )
    done = ragproof(*RUN_ARGS, "--json", env=env)
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]

    sample = tmp_path / "to_label.jsonl"
    done = ragproof("calibrate", "--sample", "2", "--run", run_id, "--out", str(sample), env=env)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in sample.read_text().splitlines()]
    # Two per judge metric; abstention judged only c3.
    assert [line["metric"] for line in lines] == [
        "retrieval.context_relevance",
        "retrieval.context_relevance",
        "retrieval.judged_ndcg_at_k",
        "retrieval.judged_ndcg_at_k",
        "generation.groundedness",
        "generation.groundedness",
        "generation.citation_support",
        "generation.citation_support",
        RELEVANCE,
        RELEVANCE,
        "generation.completeness",
        "generation.completeness",
        "robustness.abstention",
        "robustness.overrefusal",
        "robustness.overrefusal",
    ]
    assert all(line["score"] is None for line in lines)
    again = tmp_path / "again.jsonl"
    ragproof("calibrate", "--sample", "2", "--run", run_id, "--out", str(again), env=env)
    assert again.read_text() == sample.read_text()  # seeded

    labels = tmp_path / "labels.jsonl"
    unmatched = {"case_id": "c5", "metric": RELEVANCE, "score": 1}
    labels.write_text(
        "\n".join(
            json.dumps(x)
            for x in (
                {"case_id": "c1", "metric": RELEVANCE, "score": 0.5},
                {"case_id": "c2", "metric": RELEVANCE, "score": 1},
                {"case_id": "c3", "metric": RELEVANCE, "score": None},
                unmatched,
            )
        )
        + "\n"
    )
    done = ragproof("calibrate", "--run", run_id, "--labels", str(labels), "--json", env=env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert list(result) == ["run_id", "metrics", "unmatched"]
    assert result["unmatched"] == [unmatched]
    relevance = next(m for m in result["metrics"] if m["metric"] == RELEVANCE)
    half = 1.96 * (0.125 / 2) ** 0.5
    assert relevance == {
        "metric": RELEVANCE,
        "n_judged": 4,
        "n_labelled": 2,
        "judge_mean": 1.0,
        "judge_ci": [1.0, 1.0],
        "human_mean": 0.75,
        "ppi_mean": 0.75,
        "ppi_ci": [0.75 - half, 1.0],  # 1.24 within [0, 1] (CONTRACT section 25)
        "human_ci": pytest.approx([0.75 - half, 1.0], abs=1e-15),
    }

    shown = ragproof("show", run_id, "--json", env=env)
    calibrated = json.loads(shown.stdout)["calibrations"][RELEVANCE]
    assert (calibrated["ppi_mean"], calibrated["n_labelled"]) == (0.75, 2)
    text = ragproof("show", run_id, env=env).stdout
    assert "Bias-corrected with human labels" in text
    below = text.split("Bias-corrected with human labels", 1)[1].splitlines()
    row = next(line for line in below if line.startswith(RELEVANCE + " "))
    assert row.split()[:5] == [RELEVANCE, "1.0000", "4", "2", "0.7500"]  # raw mean beside PPI
    with duckdb.connect(str(store_path / "ragproof.duckdb"), read_only=True) as con:
        assert con.execute(
            "SELECT n_judged, n_labelled, ppi_mean FROM calibrations WHERE metric = ?",
            [RELEVANCE],
        ).fetchall() == [(4, 2, 0.75)]

    # Bad input: one line naming file and line, exit 1, nothing stored.
    labels.write_text('{"case_id": "c1", "metric": "generation.answer_relevance", "score": 2}\n')
    bad = ragproof("calibrate", "--run", run_id, "--labels", str(labels), env=env)
    assert bad.returncode == 1
    assert bad.stderr == (f"ragproof: {labels}:1: score must be a number in [0, 1], got 2\n")
    assert len(list((store_path / "runs" / run_id / "calibrations").glob("*.parquet"))) == 1

    # plan: recall_at_k scored 0.5 and 1.0: variance 0.125; (2.8016^2 * 0.125 / 0.01)
    # = 98.112032 -> 99 cases.
    planned = json.loads(ragproof("plan", "--run", run_id, "--delta", "0.1", "--json").stdout)
    recall = next(m for m in planned["metrics"] if m["metric"] == "retrieval.recall_at_k")
    assert (recall["scored"], recall["cases_needed"]) == (2, 99)
    assert recall["sd"] == pytest.approx(0.125**0.5, abs=1e-15)
    bad = ragproof("plan", "--run", run_id, "--delta", "0")
    assert (bad.returncode, bad.stderr) == (
        1,
        "ragproof: --delta must be a positive change in score, got 0\n",
    )
