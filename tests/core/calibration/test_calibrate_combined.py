"""Calibration of combined mode: the combined fixtures, one combined request each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragproof_core.calibration.calibrate_combined import calibrate_combined, load_combined_fixtures
from ragproof_core.calibration.fixture_files import FixtureError
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
        "context_relevance": 12,
        "task_completion": 12,
        "claim_check": 10,  # the two refusals make no claim
        "nugget_support": 12,
    }


def test_one_combined_request_per_fixture_and_agreement_per_prompt(server: JudgeServer) -> None:
    judge = make_judge(server.url, mode="combined")
    report = run(calibrate_combined(judge))
    assert server.request_count == 12
    assert {r.prompt for r in server.requests} == {"combined"}
    asked = sorted(tuple(r.parts) for r in server.requests)
    # context_relevance and task_completion (every fixture's answer has steps) ride in
    # every request, as in a combined run.
    # nugget_support (every fixture carries nuggets) too, and claim_check beside it for the
    # ten fixtures a human worked claims out for.
    refusal_parts = ("answer_relevance", "completeness", "refusal")
    tail = ("context_relevance", "task_completion")
    assert asked.count((*refusal_parts, *tail, "nugget_support")) == 2
    grounded = ("groundedness", "citation_support", *refusal_parts, *tail, "claim_check")
    assert asked.count((*grounded, "nugget_support")) == 10
    assert all(parts[-1] == "nugget_support" for parts in asked)
    # The server calls every claim and citation supported, every answer relevant and
    # complete, and detects the two refusals, so agreement is exactly the human
    # labels that say so.
    assert {p.prompt: (p.n, p.exact, p.within) for p in report.prompts} == {
        "groundedness": (10, 8, 9),
        "citation_support": (10, 7, 8),
        "answer_relevance": (12, 9, 10),
        "completeness": (12, 6, 8),
        "refusal": (12, 12, 12),
        "context_relevance": (12, 7, 12),
        "task_completion": (12, 7, 10),
        "claim_check": (10, 6, 7),
        "nugget_support": (12, 5, 12),
    }
    # task_completion: the server fails the two refusals (x06, x11) and calls every other
    # answer complete. Human 0 on x04 (the wrong answer) and x05 (the wrong year) is two
    # bands off; human 0.5 on x02, x07 and x12 one band.
    task = next(p for p in report.prompts if p.prompt == "task_completion")
    assert task.confusion == ((2, 0, 2), (0, 0, 3), (0, 0, 5))
    assert (task.judge_errors, task.unscored) == (0, 0)
    # Quadratic weights: observed 2 * 1 + 3 * 0.25 = 2.75 of 12; expected from the
    # margins (4, 3, 5) x (2, 0, 10): (40 + 1.5 + 7.5 + 10) / 12 = 59 / 12.
    assert task.kappa == pytest.approx(1 - 2.75 / (59 / 12))  # 26 / 59
    refusal = next(p for p in report.prompts if p.prompt == "refusal")
    assert (refusal.kappa, refusal.confusion) == (1.0, ((10, 0, 0), (0, 0, 0), (0, 0, 2)))
    # The server grades a chunk by the words (4+ letters) it shares with the question,
    # 2+ relevant, 1 partial, so its scores in fixture order are these; against the
    # human bands: x05's headcount chunk shares "acme" (0.75, band 1; human 0.5), x06's
    # chunk shares "parental leave" (1; human 0.5), x12's up-1 says "uploaded", not
    # "upload" (0; human 0.5), x04's "Passwords" and x08's recovery codes share nothing
    # (0.5; human 1). Seven exact, all twelve within a band.
    context = next(p for p in report.prompts if p.prompt == "context_relevance")
    assert context.confusion == ((0, 0, 0), (1, 5, 2), (0, 2, 2))
    assert (context.judge_errors, context.unscored, context.passed) == (0, 0, False)
    judged = [o.judge_score for o in report.outcomes if o.prompt == "context_relevance"]
    assert judged == [0.5, 0.25, 0.75, 0.5, 0.75, 1.0, 0.5, 0.5, 0.5, 0.5, 1.0, 0.0]
    assert context.kappa == pytest.approx(2 / 7)  # 1 - 1.25 / 1.75, by hand
    # claim_check: the server calls a claim in a text, or supported by a chunk, when that
    # text holds half its words of 4+ letters. x05's "founded in 1992 in Bergen" shares
    # "acme founded" with ab-1 (noise to the server, invented to the human: two bands);
    # x10's "Python 3.9 or newer" shares one word of three with the reference and py-1
    # (invented to the server, human 0); x08's recovery codes share two words of five with
    # 2fa-3 (one claim of two invented).
    claims = [
        (o.fixture_id[:3], o.judge_score) for o in report.outcomes if o.prompt == "claim_check"
    ]
    assert claims == [
        ("x01", 0.0), ("x02", 0.5), ("x03", 0.0), ("x04", 0.0), ("x05", 0.0), ("x07", 0.0),
        ("x08", 0.5), ("x09", 0.0), ("x10", 1.0), ("x12", 1.0),
    ]  # fmt: skip
    check = next(p for p in report.prompts if p.prompt == "claim_check")
    assert check.confusion == ((5, 1, 2), (0, 1, 0), (1, 0, 0))
    # nugget_support: full when the answer holds every word (4+ letters) of the nugget,
    # partial when some: x01's "The warranty lasts two years" finds only "warranty" in
    # "a two-year limited warranty" (partial), its motor-and-battery nugget "covers" none.
    nuggets = [o.judge_score for o in report.outcomes if o.prompt == "nugget_support"]
    assert nuggets == pytest.approx(
        [0.5, 1.0, 2 / 3, 0.0, 0.5, 0.25, 5 / 6, 5 / 6, 2 / 3, 0.5, 0.0, 0.25]
    )
    support = next(p for p in report.prompts if p.prompt == "nugget_support")
    assert support.confusion == ((2, 2, 0), (0, 1, 1), (0, 4, 2))
    assert report.mode == "combined"
    assert report.to_dict()["mode"] == "combined"


def test_a_fixture_with_a_bad_score_is_reported(tmp_path: Path) -> None:
    line = json.loads(
        (Path(__file__).parents[3] / "ragproof_core/calibration/fixtures/combined.jsonl")
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


def test_context_relevance_grades_output_retrieved_else_the_answers_chunks(tmp_path: Path) -> None:
    lines = (
        (Path(__file__).parents[3] / "ragproof_core/calibration/fixtures/combined.jsonl")
        .read_text()
        .splitlines()
    )
    given, derived, unretrieved = (json.loads(lines[0]) for _ in range(3))
    given["id"] = "given"
    given["output"]["retrieved"] = [{"id": "r-9", "text": "The warranty lasts two years."}]
    unretrieved["id"] = "unretrieved"
    unretrieved["human_scores"] = {"context_relevance": 0.5}
    del unretrieved["output"]["answer"]["retrieved_chunks"]
    path = tmp_path / "combined.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in (given, derived, unretrieved)))
    with pytest.raises(FixtureError) as caught:
        load_combined_fixtures(path)
    assert caught.value.problems[0] == (
        f"{path}:3: a context_relevance fixture needs output.retrieved, "
        "a non-empty list of chunks [context_relevance]"
    )
    path.write_text("".join(json.dumps(o) + "\n" for o in (given, derived) * 5))
    loaded = load_combined_fixtures(path)
    assert [c.id for c in loaded[0].output.retrieved] == ["r-9"]
    assert [c.id for c in loaded[1].output.retrieved] == ["w-1", "w-2"]
    # The answer prompts still read the answer's own chunks.
    assert [c.id for c in loaded[0].output.answer.retrieved_chunks] == ["w-1", "w-2"]
