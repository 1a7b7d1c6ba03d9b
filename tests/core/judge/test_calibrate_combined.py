"""Calibration of combined mode: the combined fixtures, one combined request each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragproof_core.judge.calibrate_combined import calibrate_combined, load_combined_fixtures
from ragproof_core.judge.fixtures_check import FixtureError
from tests.core.judge.conftest import make_judge, run
from tests.support.judge_server import JudgeServer

pytestmark = pytest.mark.filterwarnings("ignore:.*ReadOnly. qualifier:UserWarning")

FIXTURES = load_combined_fixtures()


def test_the_shipped_fixtures_score_every_prompt_at_least_ten_times() -> None:
    counts = {}
    for fixture in FIXTURES:
        for prompt in fixture.human_scores:
            counts[prompt] = counts.get(prompt, 0) + 1
    assert len(FIXTURES) == 12
    assert counts == {
        "groundedness": 10,
        "citation_support": 10,
        "answer_relevance": 12,
        "completeness": 12,
        "refusal": 12,
    }


def test_one_combined_request_per_fixture_and_agreement_per_prompt(server: JudgeServer) -> None:
    judge = make_judge(server.url, mode="combined")
    report = run(calibrate_combined(judge))
    assert server.request_count == 12
    assert {r.prompt for r in server.requests} == {"combined"}
    asked = sorted(tuple(r.parts) for r in server.requests)
    assert asked.count(("answer_relevance", "completeness", "refusal")) == 2  # the refusals
    # The server calls every claim and citation supported, every answer relevant and
    # complete, and detects the two refusals, so agreement is exactly the human
    # labels that say so.
    assert {p.prompt: (p.n, p.exact, p.within) for p in report.prompts} == {
        "groundedness": (10, 8, 9),
        "citation_support": (10, 7, 8),
        "answer_relevance": (12, 9, 10),
        "completeness": (12, 6, 8),
        "refusal": (12, 12, 12),
    }
    refusal = next(p for p in report.prompts if p.prompt == "refusal")
    assert (refusal.kappa, refusal.confusion) == (1.0, ((10, 0, 0), (0, 0, 0), (0, 0, 2)))
    assert report.mode == "combined"
    assert report.to_dict()["mode"] == "combined"


def test_a_fixture_with_a_bad_score_is_reported(tmp_path: Path) -> None:
    line = json.loads(
        (Path(__file__).parents[3] / "ragproof_core/judge/fixtures/combined.jsonl")
        .read_text()
        .splitlines()[0]
    )
    line["human_scores"]["refusal"] = 0.5
    path = tmp_path / "combined.jsonl"
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(FixtureError) as caught:
        load_combined_fixtures(path)
    assert caught.value.problems[0] == (
        f"{path}:1: refusal human_score must be 0 or 1 (refused), got 0.5 [refusal]"
    )
    assert f"{path}: prompt 'groundedness' has 0 human score(s), at least 10 needed" in (
        caught.value.problems
    )
