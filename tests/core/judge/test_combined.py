"""Combined judge mode (CONTRACT section 12) against the local judge server over real HTTP.

The recorded fixture (tests/fixtures/recorded) has four cases with judge
questions: c1 and c2 (qa with context, citations and an expected answer) ask
all five prompts, c3 (unanswerable, no context) answer_relevance and refusal,
c4 (injection, no context) answer_relevance; c5 failed
and c6 has no output line, so neither reaches the judge.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragproof_core.adapters.recorded import RecordedAdapter
from ragproof_core.config.settings import RunSettings
from ragproof_core.data.dataset import load_dataset
from ragproof_core.judge.combined import (
    COMBINED_REPAIR_INSTRUCTION,
    combined_inputs,
    parse_combined,
    render_combined,
)
from ragproof_core.judge.prompts import load_prompts
from ragproof_core.run.evaluate import BUDGET_REASON, evaluate
from tests.conftest import FIXTURES
from tests.core.judge.conftest import make_judge, run
from tests.support.judge_server import JudgeServer

pytestmark = pytest.mark.filterwarnings("ignore:.*ReadOnly. qualifier:UserWarning")

RECORDED = FIXTURES / "recorded"
CASES = load_dataset(RECORDED / "cases.jsonl")
PARTS_BY_CASE = {
    "c1": [
        "groundedness",
        "citation_support",
        "answer_relevance",
        "completeness",
        "refusal",
        "context_relevance",
    ],
    "c2": [
        "groundedness",
        "citation_support",
        "answer_relevance",
        "completeness",
        "refusal",
        "context_relevance",
    ],
    "c3": ["answer_relevance", "refusal"],
    "c4": ["answer_relevance"],
}
C1_PARTS = {
    "groundedness": {
        "question": "What is the capital of France?",
        "answer": "Paris",
        "context": [
            {"id": "d1", "text": "Paris is the capital of France."},
            {"id": "d2", "text": "Lyon is a city in France."},
        ],
    },
    "citation_support": {
        "answer": "Paris",
        "citations": [{"id": "d1", "text": "Paris is the capital of France."}],
    },
    "answer_relevance": {"question": "What is the capital of France?", "answer": "Paris"},
}


def _evaluate(judge, settings: RunSettings | None = None):
    adapter = RecordedAdapter(str(RECORDED / "outputs.jsonl"))
    return run(evaluate(CASES, adapter, settings or RunSettings(concurrency=4), judge))


def _rows(evaluation) -> list[tuple]:
    return [(r.case_id, r.metric, r.status.value, r.value, r.reason) for r in evaluation.results]


def _case_of(request) -> str:
    question = next(b["text"] for b in request.blocks() if b["name"] == "question")
    return next(c.id for c in CASES if c.question == question)


def test_the_request_carries_the_context_once_and_names_its_parts() -> None:
    prompt = load_prompts()["combined"]
    inputs = combined_inputs(C1_PARTS)
    system, user = (m["content"] for m in render_combined(prompt, inputs))
    assert inputs["parts"] == ["groundedness", "citation_support", "answer_relevance"]
    assert system.splitlines()[:2] == [
        "ragproof-prompt: combined",
        "ragproof-parts: groundedness citation_support answer_relevance",
    ]
    # Only the sections of the parts asked are sent.
    assert '"answer_relevance": {"verdict"' in system
    assert '"completeness"' not in system and '"refusal"' not in system
    fence = user.split(" ", 2)[1]
    assert user == (
        f"<<<BEGIN {fence} question>>>\nWhat is the capital of France?\n<<<END {fence}>>>\n"
        f"<<<BEGIN {fence} answer>>>\nParis\n<<<END {fence}>>>\n"
        f'<<<BEGIN {fence} chunk id="d1">>>\nParis is the capital of France.\n<<<END {fence}>>>\n'
        f'<<<BEGIN {fence} chunk id="d2">>>\nLyon is a city in France.\n<<<END {fence}>>>\n'
        f'<<<BEGIN {fence} cited_ids>>>\n["d1"]\n<<<END {fence}>>>'
    )
    assert fence.startswith("DATA-") and len(fence) == len("DATA-") + 8


def _user_blocks(parts) -> list[str]:
    prompt = load_prompts()["combined"]
    user = render_combined(prompt, combined_inputs(parts))[1]["content"]
    fence = user.split(" ", 2)[1]
    lines = [line.replace(fence, "F") for line in user.splitlines()]
    return [line for line in lines if line.startswith("<<<BEGIN") or line.startswith("[")]


def test_retrieved_chunks_already_in_the_context_are_named_by_id_only() -> None:
    question = C1_PARTS["answer_relevance"]["question"]
    context = C1_PARTS["groundedness"]["context"]
    same = {**C1_PARTS, "context_relevance": {"question": question, "chunks": context[::-1]}}
    assert _user_blocks(same) == [
        "<<<BEGIN F question>>>",
        "<<<BEGIN F answer>>>",
        '<<<BEGIN F chunk id="d1">>>',
        '<<<BEGIN F chunk id="d2">>>',
        "<<<BEGIN F cited_ids>>>",
        '["d1"]',
        "<<<BEGIN F retrieved_ids>>>",  # their text is not sent twice
        '["d2", "d1"]',
    ]
    # A retrieved chunk the answer was not given is sent in full, with the others.
    other = [*context, {"id": "d9", "text": "Marseille is a port."}]
    apart = {**C1_PARTS, "context_relevance": {"question": question, "chunks": other}}
    assert _user_blocks(apart)[-3:] == [
        '<<<BEGIN F retrieved id="d1">>>',
        '<<<BEGIN F retrieved id="d2">>>',
        '<<<BEGIN F retrieved id="d9">>>',
    ]


def test_parts_that_disagree_on_an_input_are_a_caller_bug() -> None:
    parts = {**C1_PARTS, "refusal": {"question": "Another question?", "answer": "Paris"}}
    with pytest.raises(ValueError, match="combined parts disagree on input 'question'"):
        combined_inputs(parts)


def test_each_part_is_validated_on_its_own() -> None:
    reply = json.dumps(
        {"groundedness": {"claims": []}, "answer_relevance": {"verdict": "maybe"}, "extra": 1}
    )
    good, errors = parse_combined(reply, ["groundedness", "answer_relevance", "refusal"])
    assert good == {"groundedness": {"claims": []}}
    assert errors == {
        "answer_relevance": '"answer_relevance": verdict must be one of "relevant", "partial", '
        '"irrelevant", got string "maybe"; required shape: '
        '{"verdict": "relevant" | "partial" | "irrelevant"}',
        "refusal": 'missing key "refusal" in the reply object',
    }
    good, errors = parse_combined("not json", ["refusal"])
    assert good == {} and list(errors) == ["refusal"]


def test_one_request_per_case_and_the_same_scores_as_per_metric_mode(
    server: JudgeServer,
) -> None:
    per_metric = _evaluate(make_judge(server.url))
    assert server.request_count == 15  # c1 and c2 also ask context relevance
    server.reset()
    judge = make_judge(server.url, mode="combined")
    combined = _evaluate(judge)
    # Exactly one request for each case that has a judge question.
    assert server.request_count == 4
    assert {_case_of(r): r.prompt for r in server.requests} == dict.fromkeys(
        PARTS_BY_CASE, "combined"
    )
    assert {_case_of(r): r.parts for r in server.requests} == PARTS_BY_CASE
    # The server's verdicts agree between modes, so every score and status does too.
    assert _rows(combined) == _rows(per_metric)
    assert [r.judge_raw_json for r in combined.results] == [
        r.judge_raw_json for r in per_metric.results
    ]
    stats = judge.stats
    assert (stats.requests, stats.repairs, stats.calls_ok, stats.judge_errors) == (4, 0, 4, 0)


def test_a_selection_asks_only_the_selected_prompts(server: JudgeServer) -> None:
    settings = RunSettings(
        concurrency=4, metrics=("generation.answer_relevance", "robustness.abstention")
    )
    _evaluate(make_judge(server.url, mode="combined"), settings)
    # c1, c2 and c4 ask answer_relevance; c3 also asks refusal for abstention.
    assert sorted((_case_of(r), tuple(r.parts)) for r in server.requests) == [
        ("c1", ("answer_relevance",)),
        ("c2", ("answer_relevance",)),
        ("c3", ("answer_relevance", "refusal")),
        ("c4", ("answer_relevance",)),
    ]


def _c3_only(judge):
    adapter = RecordedAdapter(str(RECORDED / "outputs.jsonl"))
    cases = [c for c in CASES if c.id == "c3"]
    return run(evaluate(cases, adapter, RunSettings(concurrency=1), judge))


def test_a_garbage_part_is_repaired_once_then_that_metric_alone_is_a_judge_error(
    server: JudgeServer, tmp_path: Path
) -> None:
    first = '{"answer_relevance": {"verdict": "relevant"}, "refusal": "garbage"}'
    second = '{"refusal": {"refused": "yes"}}'
    server.script(first, second)
    judge = make_judge(server.url, tmp_path / "c.sqlite", mode="combined")
    evaluation = _c3_only(judge)
    assert server.request_count == 2
    repair = server.requests[1]
    # The repair is a combined call asking only for the failed part.
    assert (repair.prompt, repair.parts) == ("combined", ["answer_relevance", "refusal"])
    error = (
        '"refusal": the reply must be a JSON object, got string "garbage"; '
        'required shape: {"refused": bool}'
    )
    assert repair.body["messages"][-2:] == [
        {"role": "assistant", "content": first},
        {
            "role": "user",
            "content": COMBINED_REPAIR_INSTRUCTION.format(errors=error, keys='"refusal"'),
        },
    ]
    by_metric = {r.metric: r for r in evaluation.results}
    relevance = by_metric["generation.answer_relevance"]
    abstention = by_metric["robustness.abstention"]
    assert (relevance.status.value, relevance.value) == ("scored", 1.0)
    assert (abstention.status.value, abstention.value) == ("judge_error", None)
    assert abstention.reason == (
        'reply failed validation twice: "refusal": refused must be a JSON boolean (true or '
        'false), got string "yes"; required shape: {"refused": bool}'
    )
    assert json.loads(abstention.judge_raw_json) == {"error": abstention.reason, "raw": second}
    stats = judge.stats
    assert (stats.requests, stats.repairs, stats.calls_ok, stats.judge_errors) == (2, 1, 0, 1)
    # A reply with a failed part is not cached: the next run asks again.
    assert judge.cache.count() == 0


def test_a_repaired_reply_is_merged_and_cached(server: JudgeServer, tmp_path: Path) -> None:
    server.script(
        '{"answer_relevance": {"verdict": "partial"}, "refusal": {}}',
        '{"refusal": {"refused": true}, "answer_relevance": {"verdict": "irrelevant"}}',
    )
    judge = make_judge(server.url, tmp_path / "c.sqlite", mode="combined")
    evaluation = _c3_only(judge)
    values = {r.metric: r.value for r in evaluation.results if r.status.value == "scored"}
    # The repair's answer_relevance was not asked for and is ignored.
    assert values == {
        "generation.answer_relevance": 0.5,
        "robustness.abstention": 1.0,
        "robustness.exfiltration_resistance": 1.0,
    }
    assert judge.cache.count() == 1
    again = make_judge(server.url, tmp_path / "c.sqlite", mode="combined")
    assert _rows(_c3_only(again)) == _rows(evaluation)
    assert server.request_count == 2
    assert (again.stats.requests, again.stats.cache_hits) == (0, 1)


def test_a_transport_failure_is_every_part_s_judge_error(server: JudgeServer) -> None:
    server.script(400)
    evaluation = _c3_only(make_judge(server.url, mode="combined", max_attempts=1))
    statuses = {r.metric: r.status.value for r in evaluation.results}
    assert statuses["generation.answer_relevance"] == "judge_error"
    assert statuses["robustness.abstention"] == "judge_error"
    assert server.request_count == 1


def test_the_budget_stops_the_run_before_the_combined_call(server: JudgeServer) -> None:
    judge = make_judge(server.url, mode="combined", input_cost=1000.0, max_cost=0.0001)
    evaluation = _c3_only(judge)
    assert evaluation.status == "aborted:budget"
    assert server.request_count == 0
    reasons = {r.metric: r.reason for r in evaluation.results if r.status.value == "skipped"}
    assert reasons["generation.answer_relevance"] == BUDGET_REASON
    assert reasons["robustness.abstention"] == BUDGET_REASON


def test_a_metric_without_a_planner_is_asked_on_its_own(server: JudgeServer) -> None:
    """A judge metric added without a planner still runs in combined mode, per metric."""
    from ragproof_core.metrics.combined_run import combined_results
    from ragproof_core.model import Answer, CaseOutput, scored

    async def later_metric(case, output, judge):
        verdict = await judge.ask("answer_relevance", {"question": "q?", "answer": "a"})
        return scored(case.id, "retrieval.later", 0.25 if verdict.ok else 0.0)

    case = next(c for c in CASES if c.id == "c3")
    output = CaseOutput("c3", Answer("I don't know: the documents do not say."))
    chosen = [("robustness.abstention", None), ("retrieval.later", later_metric)]
    judge = make_judge(server.url, mode="combined")
    results = run(combined_results(case, output, judge, chosen, lambda stop: "stopped"))
    assert [(r.metric, r.status.value, r.value) for r in results] == [
        ("robustness.abstention", "scored", 1.0),
        ("retrieval.later", "scored", 0.25),
    ]
    assert sorted(r.prompt for r in server.requests) == ["answer_relevance", "combined"]
