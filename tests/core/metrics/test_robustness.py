"""Fixture tests for ragproof_core/metrics/robustness.py (metrics.md, Robustness metrics)."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

from ragproof_core.judge.types import BudgetExceeded, JudgeVerdict
from ragproof_core.metrics.robustness import (
    ABSTENTION,
    EXFILTRATION_RESISTANCE,
    INJECTION_RESISTANCE,
    LEAKAGE_RESISTANCE,
    OVERREFUSAL,
    POISONING_RESISTANCE,
    abstention,
    exfiltration_resistance,
    injection_resistance,
    leakage_resistance,
    overrefusal,
    poisoning_resistance,
)
from ragproof_core.model import Answer, Case, CaseKind, CaseOutput, MetricResult, Status
from tests.core.metrics.heuristics.fixture_lines import (
    assert_every_line_owned,
    attack_output,
    case_from,
    lines_for,
    output_for,
)


class ScriptedJudge:
    """A minimal implementation of our own Judge protocol that replays one verdict.

    The real judge (LiteLLM, cache, budget) is tested with the judge package;
    here only the metric's use of the protocol is under test.
    """

    model = "scripted"

    def __init__(self, verdict: JudgeVerdict | Exception) -> None:
        self.verdict = verdict
        self.calls: list[tuple[str, dict[str, Any]]] = []

    @property
    def prompt_hashes(self) -> dict[str, str]:
        return {"refusal": "0" * 64}

    async def ask(self, prompt: str, inputs: dict[str, Any]) -> JudgeVerdict:
        self.calls.append((prompt, inputs))
        if isinstance(self.verdict, Exception):
            raise self.verdict
        return self.verdict


def check(result: MetricResult, line: dict, case_id: str, metric: str) -> None:
    label = line["name"]
    assert (result.case_id, result.metric) == (case_id, metric), label
    if "expect_skip" in line:
        expected = (Status.SKIPPED, None, line["expect_skip"], None)
    else:
        expected = (Status.SCORED, line["expect"], None, None)
    assert (result.status, result.value, result.reason, result.judge_raw_json) == expected, label


def run_injection(test: str) -> None:
    for line in lines_for("injection_cases.jsonl", test):
        case = case_from(line["case"])
        result = injection_resistance(case, output_for(case, line["answer"]))
        check(result, line, case.id, INJECTION_RESISTANCE)


def run_refusal(test: str, metric_fn, metric: str) -> None:
    for line in lines_for("refusal_cases.jsonl", test):
        case = case_from(line["case"])
        result = asyncio.run(metric_fn(case, output_for(case, line["answer"]), None))
        check(result, line, case.id, metric)


def test_injection_resistance_scores_compliance() -> None:
    run_injection("test_injection_resistance_scores_compliance")


def test_injection_resistance_skips() -> None:
    run_injection("test_injection_resistance_skips")


def test_abstention_heuristic() -> None:
    run_refusal("test_abstention_heuristic", abstention, ABSTENTION)


def test_abstention_skips() -> None:
    run_refusal("test_abstention_skips", abstention, ABSTENTION)


def test_overrefusal_heuristic() -> None:
    run_refusal("test_overrefusal_heuristic", overrefusal, OVERREFUSAL)


def test_overrefusal_skips() -> None:
    run_refusal("test_overrefusal_skips", overrefusal, OVERREFUSAL)


def run_attack(test: str, metric_fn, metric: str) -> None:
    """CONTRACT section 23's metrics on the lines of attack_cases.jsonl: each line's case,
    answer, context (the answer's chunks, or ``retrieved``) and citations."""
    for line in lines_for("attack_cases.jsonl", test):
        case = case_from(line["case"])
        check(metric_fn(case, attack_output(case, line)), line, case.id, metric)


def test_poisoning_resistance() -> None:
    run_attack("test_poisoning_resistance", poisoning_resistance, POISONING_RESISTANCE)


def test_poisoning_resistance_skips() -> None:
    run_attack("test_poisoning_resistance_skips", poisoning_resistance, POISONING_RESISTANCE)


def test_leakage_resistance() -> None:
    run_attack("test_leakage_resistance", leakage_resistance, LEAKAGE_RESISTANCE)


def test_leakage_resistance_skips() -> None:
    run_attack("test_leakage_resistance_skips", leakage_resistance, LEAKAGE_RESISTANCE)


def test_exfiltration_resistance() -> None:
    run_attack("test_exfiltration_resistance", exfiltration_resistance, EXFILTRATION_RESISTANCE)


def test_exfiltration_resistance_skips() -> None:
    run_attack(
        "test_exfiltration_resistance_skips", exfiltration_resistance, EXFILTRATION_RESISTANCE
    )


def test_every_fixture_line_belongs_to_a_test() -> None:
    module = sys.modules[__name__]
    assert_every_line_owned("injection_cases.jsonl", module)
    assert_every_line_owned("refusal_cases.jsonl", module)
    assert_every_line_owned("attack_cases.jsonl", module)


UNANSWERABLE = Case("un-1", "When was the Madrid office opened?", CaseKind.UNANSWERABLE)
QA = Case("qa-1", "What is the refund window?", CaseKind.QA)


def ok(refused: bool) -> JudgeVerdict:
    return JudgeVerdict(
        ok=True, data={"refused": refused}, raw=f'{{"refused": {str(refused).lower()}}}'
    )


def test_judge_verdict_is_authoritative_over_the_heuristic() -> None:
    # The heuristic would call "I don't know." a refusal; the judge says it is not.
    judge = ScriptedJudge(ok(False))
    output = CaseOutput("un-1", answer=Answer("I don't know."))
    result = asyncio.run(abstention(UNANSWERABLE, output, judge))
    assert result == MetricResult(
        "un-1", ABSTENTION, Status.SCORED, 0.0, None, '{"refused": false}'
    )
    assert judge.calls == [
        ("refusal", {"question": "When was the Madrid office opened?", "answer": "I don't know."})
    ]
    # And the other way round, on an answer the heuristic reads as answering.
    judge = ScriptedJudge(ok(True))
    output = CaseOutput("qa-1", answer=Answer("Refunds are accepted within 30 days."))
    result = asyncio.run(overrefusal(QA, output, judge))
    assert result == MetricResult(
        "qa-1", OVERREFUSAL, Status.SCORED, 1.0, None, '{"refused": true}'
    )


def test_judge_failure_is_a_judge_error_not_a_heuristic_fallback() -> None:
    verdict = JudgeVerdict(
        ok=False, data=None, raw="not json", error="reply failed validation twice"
    )
    result = asyncio.run(
        overrefusal(QA, CaseOutput("qa-1", answer=Answer("I don't know.")), ScriptedJudge(verdict))
    )
    # judge_raw_json is always JSON: the error and the judge's reply text verbatim.
    assert result == MetricResult(
        "qa-1",
        OVERREFUSAL,
        Status.JUDGE_ERROR,
        None,
        "reply failed validation twice",
        '{"error": "reply failed validation twice", "raw": "not json"}',
    )
    # A verdict without an error message still says what went wrong.
    verdict = JudgeVerdict(ok=False, data=None, raw=None)
    result = asyncio.run(
        abstention(UNANSWERABLE, CaseOutput("un-1", answer=Answer("x")), ScriptedJudge(verdict))
    )
    assert (result.status, result.reason, result.judge_raw_json) == (
        Status.JUDGE_ERROR,
        "judge failed",
        '{"error": null, "raw": null}',
    )


def test_judge_reply_without_boolean_refused_is_a_judge_error() -> None:
    verdict = JudgeVerdict(ok=True, data={"refused": "yes"}, raw='{"refused": "yes"}')
    result = asyncio.run(
        abstention(UNANSWERABLE, CaseOutput("un-1", answer=Answer("x")), ScriptedJudge(verdict))
    )
    assert result == MetricResult(
        "un-1",
        ABSTENTION,
        Status.JUDGE_ERROR,
        None,
        "judge reply has no boolean 'refused'",
        '{"refused": "yes"}',
    )


def test_budget_exceeded_propagates() -> None:
    judge = ScriptedJudge(BudgetExceeded("budget of $1.00 reached"))
    with pytest.raises(BudgetExceeded, match=r"budget of \$1.00 reached"):
        asyncio.run(abstention(UNANSWERABLE, CaseOutput("un-1", answer=Answer("x")), judge))


def test_judge_is_not_asked_for_empty_answers_or_other_kinds() -> None:
    judge = ScriptedJudge(ok(False))
    empty = asyncio.run(abstention(UNANSWERABLE, CaseOutput("un-1", answer=Answer("  ")), judge))
    assert (empty.status, empty.value, empty.judge_raw_json) == (Status.SCORED, 1.0, None)
    other = asyncio.run(overrefusal(UNANSWERABLE, CaseOutput("un-1", answer=Answer("x")), judge))
    assert (other.status, other.reason) == (Status.SKIPPED, "applies to answerable qa cases only")
    missing = asyncio.run(overrefusal(QA, CaseOutput("qa-1", answer=None), judge))
    assert (missing.status, missing.reason) == (Status.SKIPPED, "adapter produced no answer")
    assert judge.calls == []
