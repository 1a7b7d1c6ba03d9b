"""A jury of two judge models, over real LiteLLM and HTTP to the local server.

The server tells the models apart by the request's ``model`` field (LiteLLM
sends ``judge-a`` for ``openai/judge-a``) and replies per model.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from ragproof_core.calibration.calibrate import calibrate
from ragproof_core.calibration.fixture_files import load_fixtures
from ragproof_core.judge.factory import make_judge
from ragproof_core.judge.jury import JuryJudge, combine, jury_name, score_metric
from ragproof_core.judge.session import LiteLLMJudge
from ragproof_core.judge.settings import JudgeEnv
from ragproof_core.metrics.generation import answer_relevance
from ragproof_core.model import Answer, Case, CaseOutput, MetricResult, Status
from tests.core.judge.conftest import run
from tests.support.judge_server import JudgeServer, ReceivedRequest

pytestmark = pytest.mark.filterwarnings("ignore:.*ReadOnly. qualifier:UserWarning")

JURY = "openai/judge-a,openai/judge-b"
CASE = Case("q1", "How do I install the CLI?")
OUTPUT = CaseOutput("q1", Answer("Run brew install acme."))


def jury(server: JudgeServer, models: str = JURY, cache_path=None) -> JuryJudge:
    judge = make_judge(JudgeEnv(model=models, api_base=server.url), cache_path)
    assert isinstance(judge, JuryJudge)
    return judge


def per_model(replies: dict[str, str]):
    def respond(request: ReceivedRequest) -> str:
        return replies[request.body["model"]]

    return respond


def test_the_jury_is_named_by_its_sorted_models_so_order_does_not_matter(server):
    assert jury(server).model == JURY
    assert jury(server, "openai/judge-b, openai/judge-a").model == JURY
    assert jury(server).models == ("openai/judge-a", "openai/judge-b")
    assert jury_name(["b", "a", "c"]) == "a,b,c"
    assert jury(server, "openai/judge-a,openai/judge-c").model != JURY
    # One model, even with a stray comma, is an ordinary judge.
    single = make_judge(JudgeEnv(model="openai/judge-a,", api_base=server.url), None)
    assert isinstance(single, LiteLLMJudge) and single.model == "openai/judge-a"
    twice = make_judge(JudgeEnv(model="openai/judge-a,openai/judge-a", api_base=server.url), None)
    assert isinstance(twice, LiteLLMJudge) and twice.model == "openai/judge-a"


def test_each_question_goes_to_every_model_and_the_case_scores_their_mean(server, monkeypatch):
    replies = {"judge-a": '{"verdict": "relevant"}', "judge-b": '{"verdict": "partial"}'}
    monkeypatch.setattr(server, "responder", per_model(replies))
    judge = jury(server)
    result = run(score_metric(answer_relevance, CASE, OUTPUT, judge))
    assert (result.status, result.value) == (Status.SCORED, 0.75)
    assert server.request_count == 2
    assert Counter(r.body["model"] for r in server.requests) == {"judge-a": 1, "judge-b": 1}
    assert json.loads(result.judge_raw_json) == {
        "jury": {
            "openai/judge-a": {"verdict": "relevant"},
            "openai/judge-b": {"verdict": "partial"},
        },
        "scores": {"openai/judge-a": 1.0, "openai/judge-b": 0.5},
    }
    stats = judge.stats
    assert (stats.requests, stats.calls_ok, stats.judge_errors) == (2, 2, 0)


def test_one_models_garbage_reply_is_not_a_judge_error(server, monkeypatch):
    replies = {"judge-a": '{"verdict": "partial"}', "judge-b": "garbage, not JSON"}
    monkeypatch.setattr(server, "responder", per_model(replies))
    judge = jury(server)
    result = run(score_metric(answer_relevance, CASE, OUTPUT, judge))
    # Scored from judge-a alone; judge-b's failure is kept, not averaged in.
    assert (result.status, result.value) == (Status.SCORED, 0.5)
    stored = json.loads(result.judge_raw_json)
    assert stored["scores"] == {"openai/judge-a": 0.5, "openai/judge-b": None}
    assert stored["jury"]["openai/judge-b"]["raw"] == "garbage, not JSON"
    assert stored["jury"]["openai/judge-b"]["error"].startswith("reply failed validation twice")
    # judge-a once, judge-b twice (its one repair retry).
    assert Counter(r.body["model"] for r in server.requests) == {"judge-a": 1, "judge-b": 2}
    assert judge.stats.judge_errors == 0
    by_model = {row["model"]: row for row in judge.usage.rows()}
    assert (
        by_model["openai/judge-a"]["judge_errors"],
        by_model["openai/judge-b"]["judge_errors"],
    ) == (
        0,
        1,
    )


def test_a_judge_error_only_when_every_model_fails(server, monkeypatch):
    monkeypatch.setattr(server, "responder", per_model({"judge-a": "nope", "judge-b": "[]"}))
    judge = jury(server)
    result = run(score_metric(answer_relevance, CASE, OUTPUT, judge))
    assert result.status is Status.JUDGE_ERROR
    assert result.reason.startswith("every jury model failed: openai/judge-a: reply failed")
    assert "; openai/judge-b: reply failed validation twice" in result.reason
    assert server.request_count == 4
    assert judge.stats.judge_errors == 1


def test_each_model_is_cached_apart_and_a_rerun_asks_nobody(server, tmp_path):
    cache = tmp_path / "cache.sqlite"
    first = jury(server, cache_path=cache)
    run(score_metric(answer_relevance, CASE, OUTPUT, first))
    first.close()
    assert server.request_count == 2
    second = jury(server, cache_path=cache)
    result = run(score_metric(answer_relevance, CASE, OUTPUT, second))
    second.close()
    assert (result.status, result.value) == (Status.SCORED, 1.0)
    assert server.request_count == 2
    assert second.stats.cache_hits == 2


def test_combine_keeps_results_that_asked_no_judge_as_they_are():
    skip = MetricResult("q1", "m", Status.SKIPPED, None, "adapter produced no answer")
    assert combine([skip, skip], ["a", "b"]) is skip
    na = MetricResult("q1", "m", Status.NOT_APPLICABLE, None, "no claims", '{"claims": []}')
    err = MetricResult("q1", "m", Status.JUDGE_ERROR, None, "bad", '{"error": "bad", "raw": "x"}')
    combined = combine([err, na], ["a", "b"])
    assert (combined.status, combined.reason) == (Status.NOT_APPLICABLE, "no claims")
    assert json.loads(combined.judge_raw_json)["scores"] == {"a": None, "b": None}


def test_jury_calibration_reports_each_model_and_the_jury(server, monkeypatch, tmp_path):
    fixtures = [f for f in load_fixtures() if f.prompt == "answer_relevance"]
    human = {f.output.answer.text: f.human_score for f in fixtures}
    verdict = {1.0: "relevant", 0.5: "partial", 0.0: "irrelevant"}

    def respond(request: ReceivedRequest) -> str:
        answer = next(b["text"] for b in request.blocks() if b["name"] == "answer")
        # judge-a agrees with the human; judge-b calls everything relevant.
        score = human[answer] if request.body["model"] == "judge-a" else 1.0
        return json.dumps({"verdict": verdict[score]})

    monkeypatch.setattr(server, "responder", respond)
    judge = make_judge(JudgeEnv(model=JURY, api_base=server.url), tmp_path / "c.sqlite")
    report = run(calibrate(judge, fixtures))
    judge.close()
    assert server.request_count == 24  # 12 fixtures, each asked of both models once

    def shares(r):
        (p,) = r.prompts
        return (p.n, p.exact, p.within, p.passed)

    assert shares(report.models["openai/judge-a"]) == (12, 12, 12, True)
    # judge-b: right only on the 4 fixtures the human called relevant.
    assert shares(report.models["openai/judge-b"]) == (12, 4, 8, False)
    # Jury: human 1 -> (1+1)/2 = 1 exact; human 0.5 -> 0.75, band 1, within;
    # human 0 -> 0.5, within. Exact 4/12, within 12/12.
    assert shares(report.jury) == (12, 4, 12, False)
    assert report.passed is False
    d = report.to_dict()
    assert d["judge_model"] == JURY
    assert sorted(d["models"]) == ["openai/judge-a", "openai/judge-b"]
    table = report.render_table()
    assert "Judge calibration: openai/judge-a" in table
    assert "Judge calibration: openai/judge-b" in table
    assert "Jury calibration: openai/judge-a,openai/judge-b" in table
    assert table.splitlines()[-1] == "FAILED"
