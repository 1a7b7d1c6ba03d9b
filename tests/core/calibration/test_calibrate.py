"""Calibration through the real judge stack: LiteLLMJudge -> LiteLLM -> HTTP -> local server.

The server's responder looks each request up by (prompt, answer text) among the
shipped fixtures and replies so the metric lands on a planned band: the human
band by default, another band or an invalid reply where a test says so. The
agreement figures are therefore known exactly in advance.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest

from ragproof_core.calibration.agreement import band
from ragproof_core.calibration.calibrate import calibrate
from ragproof_core.calibration.fixture_files import Fixture, load_fixtures
from ragproof_core.judge.factory import make_judge
from ragproof_core.judge.settings import JudgeEnv
from ragproof_core.judge.types import BudgetExceeded
from tests.support.judge_server import JudgeServer, ReceivedRequest

FIXTURES = load_fixtures()
PROMPTS = (
    "groundedness", "citation_support", "answer_relevance", "completeness", "refusal",
    "context_relevance", "knowledge_retention", "groundedness_history", "critique_qa",
    "task_completion", "claim_check", "nugget_support", "generate_nuggets",
)  # fmt: skip
COUNTS = Counter(f.prompt for f in FIXTURES)
# Every prompt in full agreement: (n, exact, within, judge errors, passed).
FULL = {p: (COUNTS[p], COUNTS[p], COUNTS[p], 0, True) for p in PROMPTS}
# Prompts whose plan value is an agreement band (the judge agrees with the human by default).
AGREEMENT = ("critique_qa", "generate_nuggets")


def fixture_key(fixture: Fixture) -> str:
    """What identifies a fixture in a request: its answer, or its question for retrieval
    and for critique_qa (several critique fixtures have an empty proposed answer)."""
    if fixture.prompt in ("context_relevance", "critique_qa", "generate_nuggets"):
        return fixture.case.question
    return fixture.output.answer.text


def request_key(request: ReceivedRequest) -> tuple[str, str]:
    """(fixture prompt, key) of a request: a conversation's fixtures by their last answer
    (knowledge retention) or their answer with a history (groundedness of a later turn)."""
    texts = {b["name"]: b["text"] for b in request.blocks() if "id" not in b}
    if request.prompt == "knowledge_retention":
        return request.prompt, request.messages()[-1]["text"]
    if request.prompt == "groundedness" and request.messages():
        return "groundedness_history", texts["answer"]
    by_question = request.prompt in ("critique_qa", "context_relevance", "generate_nuggets")
    return request.prompt, texts["question"] if by_question else texts["answer"]


BY_ANSWER = {(f.prompt, fixture_key(f)): f for f in FIXTURES}
INVALID = "error"  # plan value: reply with something that fails validation
NO_CLAIMS = "no claims"  # plan value (groundedness): a valid reply with zero claims


def reply_for(
    prompt: str, target: float, request: ReceivedRequest, fixture: Fixture | None = None
) -> str:
    """A valid reply that makes the pipeline's metric score ``target``.

    critique_qa: ``target`` is the agreement band: 1 repeats the human's flags,
    0.5 flips the first flag, 0 flips all three."""
    if prompt == "critique_qa":
        human = fixture.case.metadata["human_flags"]
        flips = {1.0: 0, 0.5: 1, 0.0: 3}[target]
        flags = ("standalone", "answerable", "specific")
        return json.dumps({f: human[f] is (i >= flips) for i, f in enumerate(flags)})
    if prompt == "generate_nuggets":
        # 1: the human's own nuggets; 0.5: each with the other vital flag; 0: none of them.
        human = fixture.case.metadata["human_nuggets"]
        if target == 0.0:
            return json.dumps({"nuggets": [{"text": "Nothing of the answer.", "vital": True}]})
        flip = target == 0.5
        nuggets = [{"text": n["text"], "vital": n["vital"] is not flip} for n in human]
        return json.dumps({"nuggets": nuggets})
    if prompt == "claim_check":
        # generation.hallucination: 2 answer claims, none, one or both neither in the
        # reference nor supported.
        invented = {0.0: [False, False], 0.5: [False, True], 1.0: [True, True]}[target]
        claims = [
            {"claim": f"claim {i}", "in_reference": not bad, "chunk_ids": []}
            for i, bad in enumerate(invented)
        ]
        return json.dumps({"response_claims": claims, "reference_claims": []})
    if prompt == "nugget_support":
        # Every nugget given the same support: the mean is exactly that score.
        support = {1.0: "full", 0.5: "partial", 0.0: "none"}[target]
        indices = [b["index"] for b in request.blocks() if b["name"] == "nugget"]
        return json.dumps({"nuggets": [{"index": i, "support": support} for i in indices]})
    if prompt == "knowledge_retention":
        # Turns 2..T judged; retained for the first share of them.
        turns = sorted({m["turn"] for m in request.messages()})[1:]
        kept = round(target * len(turns))
        assert kept / len(turns) == target, "plan needs a reachable retained share"
        verdicts = [{"turn": t, "retained": i < kept} for i, t in enumerate(turns)]
        return json.dumps({"turns": verdicts})
    if prompt in ("groundedness", "groundedness_history"):
        flags = {1.0: [True, True], 0.5: [True, False], 0.0: [False, False]}[target]
        claims = [{"claim": f"claim {i}", "supported": s} for i, s in enumerate(flags)]
        return json.dumps({"claims": claims})
    if prompt == "citation_support":
        ids = [b["id"] for b in request.blocks() if "id" in b]
        supported = round(target * len(ids))
        assert supported / len(ids) == target, "plan needs a reachable citation share"
        verdicts = [{"chunk_id": cid, "supported": i < supported} for i, cid in enumerate(ids)]
        return json.dumps({"verdicts": verdicts})
    if prompt == "answer_relevance":
        return json.dumps({"verdict": {1.0: "relevant", 0.5: "partial", 0.0: "irrelevant"}[target]})
    if prompt == "completeness":
        return json.dumps({"verdict": {1.0: "complete", 0.5: "partial", 0.0: "missing"}[target]})
    if prompt == "task_completion":
        return json.dumps({"verdict": {1.0: "complete", 0.5: "partial", 0.0: "failed"}[target]})
    if prompt == "context_relevance":
        # Every chunk graded alike: the mean is exactly that grade.
        grade = {1.0: "relevant", 0.5: "partial", 0.0: "irrelevant"}[target]
        ids = [b["id"] for b in request.blocks() if "id" in b]
        return json.dumps({"verdicts": [{"chunk_id": i, "relevance": grade} for i in ids]})
    assert prompt == "refusal" and target in (0.0, 1.0)
    return json.dumps({"refused": target == 1.0})


def responder(plan: dict[str, float | str]):
    def respond(request: ReceivedRequest) -> str:
        fixture: Fixture = BY_ANSWER[request_key(request)]
        # critique_qa and generate_nuggets plan an agreement band; by default the judge
        # agrees with the human.
        default = 1.0 if fixture.prompt in AGREEMENT else fixture.human_score
        target = plan.get(fixture.id, default)
        if target == INVALID:
            return "this is not JSON"
        if target == NO_CLAIMS:
            return json.dumps({"claims": []})
        return reply_for(fixture.prompt, float(target), request, fixture)

    return respond


def run_calibration(
    server: JudgeServer, monkeypatch, plan, tmp_path: Path, env: JudgeEnv | None = None, **kwargs
):
    monkeypatch.setattr(server, "responder", responder(plan))
    env = env or JudgeEnv(model="openai/judge-test", api_base=server.url)
    judge = make_judge(env, tmp_path / "judge_cache.sqlite", use_cache=True, concurrency=8)
    try:
        return asyncio.run(calibrate(judge, **kwargs)), judge
    finally:
        judge.close()


def agreement(report):
    return {p.prompt: (p.n, p.exact, p.within, p.judge_errors, p.passed) for p in report.prompts}


@pytest.mark.parametrize(
    ("score", "expected"),
    [(0.0, 0.0), (0.24, 0.0), (0.25, 0.5), (1 / 3, 0.5), (0.5, 0.5), (2 / 3, 0.5),
     (0.74, 0.5), (0.75, 1.0), (1.0, 1.0)],
)  # fmt: skip
def test_band_ties_go_up(score, expected):
    assert band(score) == expected


def test_full_agreement_passes(server, monkeypatch, tmp_path):
    report, judge = run_calibration(server, monkeypatch, {}, tmp_path)
    assert report.passed is True
    assert agreement(report) == FULL
    assert server.request_count == len(FIXTURES)


def test_agreement_just_above_both_thresholds_passes(server, monkeypatch, tmp_path):
    plan = {
        # groundedness: 3 one-band misses -> exact 9/12 = 75% >= 70%, within 12/12
        "g01-cli-debug-logging": 0.5,
        "g03-leaflet-ibuprofen": 1.0,
        "g04-finance-card-fee": 0.5,
        # citation_support: 2 one-band + 1 two-band misses -> exact 9/12, within 11/12 = 92%
        "c01-docs-k8s-rollback": 0.5,
        "c02-hr-remote-work": 0.0,
        "c05-history-great-fire": 1.0,
        # answer_relevance: a judge error and 2 one-band misses -> exact 9/12, within 11/12
        "a01-docs-macos-install": INVALID,
        "a04-finance-savings-rate": 1.0,
        "a06-docs-git-force": 0.5,
        # refusal: one flipped verdict -> exact 11/12, within 11/12
        "r10-library-holiday-hours": 0.0,
    }
    report, _ = run_calibration(server, monkeypatch, plan, tmp_path)
    assert agreement(report) == {
        **FULL,
        "groundedness": (12, 9, 12, 0, True),
        "citation_support": (12, 9, 11, 0, True),
        "answer_relevance": (12, 9, 11, 1, True),
        "refusal": (12, 11, 11, 0, True),
    }
    assert report.passed is True
    # A question a fixture, plus the repair retry of the one invalid reply.
    assert server.request_count == len(FIXTURES) + 1
    errored = next(o for o in report.outcomes if o.fixture_id == "a01-docs-macos-install")
    assert (errored.status, errored.judge_band, errored.exact, errored.within) == (
        "judge_error", None, False, False,
    )  # fmt: skip


def test_agreement_just_below_either_threshold_fails(server, monkeypatch, tmp_path):
    plan = {
        # groundedness: 4 one-band misses -> exact 8/12 = 67% < 70% (within still 100%)
        "g01-cli-debug-logging": 0.5,
        "g03-leaflet-ibuprofen": 1.0,
        "g04-finance-card-fee": 0.5,
        "g07-docs-python-support": 0.0,
        # citation_support: 2 two-band misses -> exact 10/12 passes, within 10/12 = 83% < 90%
        "c05-history-great-fire": 1.0,
        "c12-legal-tenancy-notice": 0.0,
    }
    report, _ = run_calibration(server, monkeypatch, plan, tmp_path)
    assert agreement(report) == {
        **FULL,
        "groundedness": (12, 8, 12, 0, False),
        "citation_support": (12, 10, 10, 0, False),
    }
    assert report.passed is False
    table = report.render_table()
    assert "groundedness/g07-docs-python-support: human 0.5, judge 0" in table
    assert table.splitlines()[-1] == "FAILED"


def test_thresholds_are_parameters(server, monkeypatch, tmp_path):
    plan = {"g01-cli-debug-logging": 0.5, "g03-leaflet-ibuprofen": 1.0,
            "g04-finance-card-fee": 0.5, "g07-docs-python-support": 0.0}  # fmt: skip
    report, _ = run_calibration(server, monkeypatch, plan, tmp_path, exact_threshold=8 / 12)
    assert report.passed is True
    assert report.to_dict()["exact_threshold"] == 8 / 12


def test_calibration_verdicts_are_cached_like_any_judge_call(server, monkeypatch, tmp_path):
    first, _ = run_calibration(server, monkeypatch, {}, tmp_path)
    assert server.request_count == len(FIXTURES)
    second, judge = run_calibration(server, monkeypatch, {}, tmp_path)
    assert server.request_count == len(FIXTURES)  # every verdict came from the cache
    assert judge.stats.cache_hits == len(FIXTURES)
    assert second.to_dict() == first.to_dict()


def test_report_to_dict_and_table(server, monkeypatch, tmp_path):
    report, _ = run_calibration(server, monkeypatch, {"r02-manual-warranty-water": 1.0}, tmp_path)
    d = report.to_dict()
    assert list(d) == [
        "judge_model", "mode", "passed", "exact_threshold", "within_threshold", "prompts",
        "fixtures",
    ]  # fmt: skip
    assert d["judge_model"] == "openai/judge-test"
    assert d["prompts"]["refusal"] == {
        "n": 12, "exact": 11, "within": 11, "exact_share": 11 / 12, "within_share": 11 / 12,
        # Rows [5, 0, 7], columns [4, 0, 8]; one two-band miss (weight 1) observed
        # against 5*8/12 + 7*4/12 = 68/12 expected: kappa = 1 - 12/68 = 56/68.
        "kappa_quadratic": 56 / 68,
        "confusion": {
            "bands": [0.0, 0.5, 1.0], "rows": "human band", "columns": "judge band",
            "matrix": [[4, 0, 1], [0, 0, 0], [0, 0, 7]],
        },
        "judge_errors": 0, "unscored": 0, "passed": True,
    }  # fmt: skip
    missed = [f for f in d["fixtures"] if not f["exact"]]
    assert missed == [
        {
            "id": "r02-manual-warranty-water", "prompt": "refusal", "human_score": 0.0,
            "status": "scored", "judge_score": 1.0, "judge_band": 1.0, "exact": False,
            "within": False, "detail": None,
        }
    ]  # fmt: skip
    assert json.loads(json.dumps(d)) == d
    lines = report.render_table().splitlines()
    assert lines[0] == "Judge calibration: openai/judge-test (per_metric mode)"
    refusal_row = next(line for line in lines if line.startswith("refusal "))
    assert refusal_row.split() == ["refusal", "12", "92%", "92%", "0.82", "0", "pass"]
    assert "  refusal             4   0   1 |   0   0   0 |   0   0   7" in lines
    assert "  refusal/r02-manual-warranty-water: human 0, judge 1" in lines
    assert lines[-1] == "PASSED"


def test_an_unscored_fixture_is_a_disagreement(server, monkeypatch, tmp_path):
    grounded = [f for f in FIXTURES if f.prompt == "groundedness"]
    report, _ = run_calibration(
        server, monkeypatch, {"g01-cli-debug-logging": NO_CLAIMS}, tmp_path, fixtures=grounded
    )
    assert [
        (p.prompt, p.n, p.exact, p.within, p.judge_errors, p.unscored) for p in report.prompts
    ] == [("groundedness", 12, 11, 11, 0, 1)]
    outcome = report.outcomes[0]
    assert (outcome.fixture_id, outcome.status, outcome.detail) == (
        "g01-cli-debug-logging", "not_applicable", "answer makes no factual claims",
    )  # fmt: skip
    assert "groundedness/g01-cli-debug-logging: human 1, not_applicable" in report.render_table()


def test_budget_exhaustion_stops_calibration(server, monkeypatch, tmp_path):
    env = JudgeEnv(
        model="openai/judge-test",
        api_base=server.url,
        input_cost_per_mtok=1000.0,
        output_cost_per_mtok=1000.0,
        max_cost_usd=0.000001,
    )
    with pytest.raises(BudgetExceeded):
        run_calibration(server, monkeypatch, {}, tmp_path, env=env)
    assert server.request_count == 0


def test_calibration_without_a_judge_is_an_error():
    with pytest.raises(ValueError, match="RAGPROOF_JUDGE_MODEL"):
        asyncio.run(calibrate(None))


def test_critique_qa_is_calibrated_per_flag(server, monkeypatch, tmp_path):
    # Exact needs all three flags to agree; within band, two of three.
    plan = {
        "q01-hr-parental-leave": 0.5,  # one flag flipped: within, not exact
        "q05-finance-card-fee-abroad": 0.5,
        "q11-unans-cm300-wattage": 0.0,  # all three flipped: neither
    }
    critiques = [f for f in FIXTURES if f.prompt == "critique_qa"]
    report, _ = run_calibration(server, monkeypatch, plan, tmp_path, fixtures=critiques)
    # 9 of 12 exact (75% >= 70%), 11 of 12 within (92% >= 90%): passes, just.
    assert agreement(report) == {"critique_qa": (12, 9, 11, 0, True)}
    assert server.request_count == 12
    outcomes = {o.fixture_id: o for o in report.outcomes if not o.exact}
    assert {k: (o.judge_score, o.judge_band, o.within, o.detail) for k, o in outcomes.items()} == {
        "q01-hr-parental-leave": (2 / 3, 0.5, True, "flags differ: standalone"),
        "q05-finance-card-fee-abroad": (2 / 3, 0.5, True, "flags differ: standalone"),
        "q11-unans-cm300-wattage": (
            0.0, 0.0, False, "flags differ: standalone, answerable, specific",
        ),
    }  # fmt: skip
    table = report.render_table()
    assert (
        "  critique_qa/q11-unans-cm300-wattage: human 0, judge 0 "
        "(flags differ: standalone, answerable, specific)"
    ) in table.splitlines()
