"""Calibrating ``generate_nuggets`` (``ragproof generate nuggets``) against the nuggets a
human wrote.

A fixture (``calibration/fixtures/generate_nuggets.jsonl``) is a question and its
expected answer, with the nuggets a human took from that answer::

    "human_nuggets": [{"text": "The warranty lasts two years", "vital": true,
                       "terms": ["two year|2 year|two-year|24 month"]}, ...],
    "output": {}, "human_score": 1

Each human nugget names the ``terms`` that say it (a term is matched by any of
its ``|``-separated spellings, ignoring case). A generated nugget *names* a
human nugget when it holds one of its terms; the human nugget is *found* when
every one of its terms is held by the generated nuggets naming it. Each human
nugget scores 1 when found and its vital flag agrees with theirs (vital when
any of them is), 0.5 when found with the other flag, 0 when not found. A
generated nugget naming no human nugget is *extra*: a fact the expected answer
does not hold, or one split past recognition. The judge's score on a fixture is

    the human nuggets' scores summed / (human nuggets + extra generated ones)

so missing facts, wrong vital flags and invented nuggets all cost. The human's
score is 1 by definition (their own nuggets), checked; exact agreement is band
1 (a score of 0.75 or more), within band at least band 0.5.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragproof_core.judge.types import Judge
from ragproof_core.metrics.diagnostics import GENERATE_PROMPT, generate_inputs
from ragproof_core.model import Case, CaseOutput, MetricResult, judge_error, scored

PROMPT = GENERATE_PROMPT
METRIC = "generation.generate_nuggets_agreement"
HUMAN_NUGGETS = "human_nuggets"
# The request calibration asks: what `generate nuggets` asks with its default seed.
CALIBRATION_SEED = 0


def fixture_problems(obj: Mapping[str, Any], where: str) -> list[str]:
    """What is wrong with a generate_nuggets fixture's own keys (empty: nothing)."""
    human = obj.get(HUMAN_NUGGETS)
    shape = (
        f'{where}: {HUMAN_NUGGETS} must be a non-empty list of {{"text": string, '
        '"vital": true or false, "terms": [non-empty strings]}'
    )
    if not isinstance(human, list) or not human:
        return [shape]
    for item in human:
        if not (
            isinstance(item, dict)
            and isinstance(item.get("text"), str)
            and item["text"].strip()
            and isinstance(item.get("vital"), bool)
            and isinstance(item.get("terms"), list)
            and item["terms"]
            and all(isinstance(t, str) and t.strip("| ") for t in item["terms"])
        ):
            return [shape]
    if obj.get("human_score") != 1:
        return [f"{where}: a generate_nuggets human_score is 1 (the human's own nuggets)"]
    own = agreement(human, human)
    if own.score != 1.0:
        return [
            f"{where}: {HUMAN_NUGGETS} must agree with themselves (each text holding its own "
            f"terms): {own.detail()}"
        ]
    return []


def holds(text: str, term: str) -> bool:
    """Whether ``text`` holds ``term``: one of its ``|``-separated spellings, any case."""
    folded = text.casefold()
    return any(s.strip().casefold() in folded for s in term.split("|") if s.strip())


@dataclass(frozen=True, slots=True)
class NuggetAgreement:
    score: float
    missing: tuple[str, ...]  # human nuggets not found
    vital_differs: tuple[str, ...]  # found, with the other vital flag
    extra: tuple[str, ...]  # generated nuggets naming no human nugget

    def detail(self) -> str | None:
        parts = [
            f"{label}: {'; '.join(items)}"
            for label, items in (
                ("missing", self.missing),
                ("vital differs", self.vital_differs),
                ("extra", self.extra),
            )
            if items
        ]
        return " | ".join(parts) or None


def agreement(
    human: Sequence[Mapping[str, Any]], generated: Sequence[Mapping[str, Any]]
) -> NuggetAgreement:
    """How far ``generated`` (a reply's nuggets) agrees with the human's (module docstring)."""
    total = 0.0
    missing: list[str] = []
    differs: list[str] = []
    named: set[int] = set()
    for nugget in human:
        terms = nugget["terms"]
        naming = [
            i for i, g in enumerate(generated) if any(holds(g["text"], term) for term in terms)
        ]
        named.update(naming)
        texts = [generated[i]["text"] for i in naming]
        if not all(any(holds(text, term) for text in texts) for term in terms):
            missing.append(nugget["text"])
            continue
        if any(generated[i]["vital"] for i in naming) == nugget["vital"]:
            total += 1.0
        else:
            total += 0.5
            differs.append(nugget["text"])
    extra = tuple(g["text"] for i, g in enumerate(generated) if i not in named)
    return NuggetAgreement(total / (len(human) + len(extra)), tuple(missing), tuple(differs), extra)


async def generation_agreement(case: Case, output: CaseOutput, judge: Judge) -> MetricResult:
    """The judge's nuggets for the fixture, scored as agreement with the human's."""
    inputs = generate_inputs(case.question, case.expected_answer, CALIBRATION_SEED)
    verdict = await judge.ask(PROMPT, inputs)
    if not verdict.ok or verdict.data is None:
        raw = json.dumps({"error": verdict.error, "raw": verdict.raw})
        return judge_error(case.id, METRIC, verdict.error or "judge failed", raw)
    found = agreement(case.metadata[HUMAN_NUGGETS], verdict.data["nuggets"])
    return scored(case.id, METRIC, found.score, json.dumps(verdict.data))


def agreement_detail(case: Case, judge_raw_json: str | None) -> str | None:
    """What the judge's stored nuggets missed, flagged otherwise or added."""
    if judge_raw_json is None:
        return None
    data = json.loads(judge_raw_json)
    return agreement(case.metadata[HUMAN_NUGGETS], data.get("nuggets", [])).detail()
