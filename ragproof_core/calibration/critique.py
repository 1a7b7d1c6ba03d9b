"""Calibrating the ``critique_qa`` gate against human-scored fixtures.

A critique fixture (``calibration/fixtures/critique_qa.jsonl``) is a question, the
proposed answer (empty for an unanswerable question) and the chunks it was
written beside, with the human's three flags::

    "human_flags": {"standalone": true, "answerable": false, "specific": true},
    "human_score": 0

``human_score`` is the human's keep verdict for a qa question: 1 when all three
flags are true, else 0 (checked, so the two cannot drift apart).

The gates use the flags separately (a qa question needs all three true; an
unanswerable one needs standalone, specific and *not* answerable), so the
judge is calibrated per flag, not on the keep verdict: its score on a fixture
is the share of the three flags on which it agrees with the human. Bands:

- exact agreement: all three flags agree (score 1, band 1);
- within-band agreement: at least two of three agree (score 2/3, band 0.5);
- one or none agreeing is band 0.

So "exact" measures the gate's full decision for both kinds, and "within"
tolerates one flag off, like the one-band tolerance of the other prompts.
"""

from __future__ import annotations

import json
from typing import Any

from ragproof_core.judge import Judge
from ragproof_core.model import Case, CaseOutput, MetricResult, judge_error, scored

PROMPT = "critique_qa"
FLAGS = ("standalone", "answerable", "specific")
METRIC = "generation.critique_qa_agreement"


def fixture_problems(obj: dict[str, Any], where: str) -> list[str]:
    """What is wrong with a critique fixture's critique-specific keys (empty: nothing)."""
    flags = obj.get("human_flags")
    if not isinstance(flags, dict) or sorted(flags) != sorted(FLAGS):
        return [f"{where}: a critique_qa fixture needs human_flags with exactly {', '.join(FLAGS)}"]
    if not all(isinstance(flags[name], bool) for name in FLAGS):
        return [f"{where}: human_flags values must be true or false"]
    keep = 1.0 if all(flags[name] for name in FLAGS) else 0.0
    if obj.get("human_score") != keep:
        return [
            f"{where}: critique_qa human_score must be {keep:g} for these human_flags "
            "(1 exactly when all three are true)"
        ]
    answer = obj.get("output", {}).get("answer", {})
    if not answer.get("retrieved_chunks"):
        return [f"{where}: a critique_qa fixture needs output.answer.retrieved_chunks"]
    return []


def agreement_band(score: float) -> float:
    """1 when all three flags agree, 0.5 when two do, else 0."""
    matched = round(score * len(FLAGS))
    return 1.0 if matched == 3 else 0.5 if matched == 2 else 0.0


async def critique_agreement(case: Case, output: CaseOutput, judge: Judge) -> MetricResult:
    """The judge's critique of the fixture, scored as agreement with the human's flags."""
    answer = output.answer
    assert answer is not None and answer.retrieved_chunks is not None  # checked at load
    verdict = await judge.ask(
        PROMPT,
        {
            "question": case.question,
            "answer": answer.text,
            "chunks": [{"id": c.id, "text": c.text} for c in answer.retrieved_chunks],
        },
    )
    if not verdict.ok or verdict.data is None:
        raw = json.dumps({"error": verdict.error, "raw": verdict.raw})
        return judge_error(case.id, METRIC, verdict.error or "judge failed", raw)
    human = case.metadata["human_flags"]
    matched = sum(verdict.data[name] is human[name] for name in FLAGS)
    return scored(case.id, METRIC, matched / len(FLAGS), json.dumps(verdict.data))


def differing_flags(case: Case, judge_raw_json: str | None) -> list[str]:
    """The flags on which the judge's stored verdict differs from the human's."""
    if judge_raw_json is None:
        return []
    data = json.loads(judge_raw_json)
    human = case.metadata["human_flags"]
    return [name for name in FLAGS if name in data and data[name] is not human[name]]
