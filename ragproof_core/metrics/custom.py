"""Metrics of your own (CONTRACT section 21): the ``[[metric]]`` tables made metrics.

A table (``ragproof_core.metrics.custom_tables``) becomes one ``MetricSpec`` of family
``custom``, registered for its run beside the shipped metrics
(``run_registry``), so it is selected, stored, summarised, compared and
reported like them:

- a **function metric** calls the user's function once per case with exactly
  the keyword arguments of section 21 (``function_arguments``), each call bounded
  by the table's ``timeout_s`` (``metrics.function_calls``). Any finite number is
  the score, stored as given (a count is fine: ``higher_is_better`` says which
  way is good); None skips the case (``metric returned no value``); a raise of
  any kind (``SystemExit`` and ``KeyboardInterrupt`` too), a NaN, an infinity,
  anything not a number or a call past ``timeout_s`` is status ``error`` for that
  metric and case, with the reason, never the run's failure;
- a **rubric metric** is a judge metric asking the rubric's own prompt (the
  ``rubric`` template with the rubric, bands and material filled in:
  ``judge.prompts.rubric_prompt``), reply ``{"verdict": BAND}``; the bands
  score evenly from 0 (the first) to 1 (the last).
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from ragproof_core.adapters.loading import resolve_target
from ragproof_core.judge.prompts import RUBRIC, Prompt, load_template, rubric_prompt
from ragproof_core.metrics.custom_tables import MetricTable, tables_from_dicts
from ragproof_core.metrics.function_calls import BoundedFunction, Failed
from ragproof_core.metrics.judge_plan import JudgePlan, Planned, messages_input
from ragproof_core.metrics.registry import REGISTRY, Registry
from ragproof_core.metrics.spec import ALL_READS, MetricSpec
from ragproof_core.model import Case, CaseOutput, MetricResult, case_error, scored, skipped

FAMILY = "custom"
NO_VALUE = "metric returned no value"
NO_JUDGE = "no judge configured (set RAGPROOF_JUDGE_MODEL)"
NO_ANSWER = "adapter produced no answer"
NO_CONTEXT = (
    "no context: the answer has no retrieved_chunks and the adapter does not expose retrieval"
)
NO_EXPECTED_ANSWER = "case has no expected_answer"
NO_HISTORY = "case has no conversation history"


def run_registry(
    tables: Sequence[MetricTable], base: Registry = REGISTRY, *, load: bool = True
) -> Registry:
    """The shipped metrics, then the run's own in the order the config declares them.
    ``load=False``: for reading stored runs (compare, report): functions are not imported."""
    return base.with_metrics(custom_metric(table, load=load) for table in tables)


def stored_tables(*config_jsons: str | None) -> tuple[MetricTable, ...]:
    """The ``[[metric]]`` tables stored runs declared (their records' ``config_json``);
    a name two runs declare is read as the first declares it."""
    tables: dict[str, MetricTable] = {}
    for config_json in config_jsons:
        config = json.loads(config_json) if config_json else {}
        for table in tables_from_dicts(config.get("metrics")):
            tables.setdefault(table.name, table)
    return tuple(tables.values())


def stored_registry(*config_jsons: str | None) -> Registry:
    """The metrics stored runs declared (``stored_tables``), for reading and for asking
    their judge again (a rubric's plan needs no function)."""
    return run_registry(stored_tables(*config_jsons), load=False)


def custom_metric(table: MetricTable, *, load: bool = True) -> MetricSpec:
    if table.function is not None:
        function = resolve_target(table.function, "function") if load else _not_loaded
        return MetricSpec(
            table.name,
            table.higher_is_better,
            "never",
            ("what the function reads",),
            f"your function {table.function}",
            score=partial(
                score_function, table.name, BoundedFunction(function, table.timeout_s, table.name)
            ),
            family_name=FAMILY,
            reads=frozenset(table.reads) or ALL_READS,
            # A function's score is any finite number (CONTRACT section 21): a count, a size.
            bounded=False,
        )
    return MetricSpec(
        table.name,
        table.higher_is_better,
        "required",
        tuple(table.material),
        f"rubric: {table.rubric} ({' / '.join(table.bands)})",
        plan=partial(plan_rubric, table),
        prompt=table.name,
        family_name=FAMILY,
        reads=frozenset(table.reads) or ALL_READS,
    )


def rubric_prompts(tables: Sequence[MetricTable], template: Prompt) -> dict[str, Prompt]:
    """The judge prompt of each rubric metric, keyed by the metric's name (its prompt name)."""
    return {
        t.name: rubric_prompt(template, t.name, t.rubric, t.bands, t.material)
        for t in tables
        if t.rubric is not None
    }


def give_rubrics(judge: Any, tables: Sequence[MetricTable]) -> None:
    """Add the rubric metrics' prompts to ``judge`` (a judge, a jury, or None)."""
    if judge is not None and any(t.rubric is not None for t in tables):
        judge.add_prompts(rubric_prompts(tables, load_template(RUBRIC)))


# --- function metrics -----------------------------------------------------------------------


def function_arguments(case: Case, output: CaseOutput) -> dict[str, Any]:
    """The keyword arguments of CONTRACT section 21, built fresh for each call so a
    function that changes them changes nothing of ragproof's."""
    answer = output.answer
    context = output.context
    return {
        "question": case.question,
        "answer": None if answer is None else answer.text,
        "retrieved": None
        if context is None
        else [
            {"id": c.id, "text": c.text, "score": c.score, "metadata": dict(c.metadata)}
            for c in context
        ],
        "citations": None if answer is None or answer.citations is None else list(answer.citations),
        "expected_answer": case.expected_answer,
        "expected_source_ids": expected_source_ids(case),
        "metadata": dict(case.metadata or {}),
    }


def expected_source_ids(case: Case) -> list[str] | dict[str, int] | None:
    """As the dataset gave them: a list of ids, or the object of grades, zeros included."""
    if case.source_grades is not None:
        return dict(case.source_grades)
    return None if case.expected_source_ids is None else list(case.expected_source_ids)


def score_function(
    name: str, function: BoundedFunction, case: Case, output: CaseOutput, params: Any
) -> MetricResult:
    outcome = function(function_arguments(case, output))
    if isinstance(outcome, Failed):  # the user's bug or sleep is this case's error
        return case_error(case.id, name, outcome.reason)
    return function_result(case.id, name, outcome.value)


def _not_loaded(**arguments: Any) -> Any:
    raise RuntimeError("a stored run's function metric is not scored again")


def function_result(case_id: str, name: str, value: Any) -> MetricResult:
    """The result of a function's return value: None skips, any finite number scores."""
    if value is None:
        return skipped(case_id, name, NO_VALUE)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return case_error(case_id, name, f"returned {type(value).__name__}, not a float or None")
    try:
        number = float(value)
    except (OverflowError, ValueError, TypeError):  # an int past float's range, say
        number = math.inf
    if not math.isfinite(number):
        return case_error(case_id, name, f"returned {number}: not a finite number")
    return scored(case_id, name, number)


# --- rubric metrics -------------------------------------------------------------------------


def material_inputs(
    table: MetricTable, case: Case, output: CaseOutput
) -> dict[str, Any] | MetricResult:
    """The judge's inputs for the rubric's material, or the skip when some is missing."""
    inputs: dict[str, Any] = {}
    for item in table.material:
        if item == "question":
            inputs[item] = case.question
        elif item == "answer":
            if output.answer is None:
                return skipped(case.id, table.name, NO_ANSWER)
            inputs[item] = output.answer.text
        elif item == "context":
            if output.context is None:
                return skipped(case.id, table.name, NO_CONTEXT)
            inputs[item] = [{"id": c.id, "text": c.text} for c in output.context]
        elif item == "expected_answer":
            if case.expected_answer is None or not case.expected_answer.strip():
                return skipped(case.id, table.name, NO_EXPECTED_ANSWER)
            inputs[item] = case.expected_answer
        else:  # history: a conversation's earlier turns (none for its first)
            if output.history is None:
                return skipped(case.id, table.name, NO_HISTORY)
            inputs[item] = messages_input(output.history)
    return inputs


def plan_rubric(
    table: MetricTable, case: Case, output: CaseOutput, has_judge: bool, params: Any
) -> Planned:
    if output.failed:  # defensive: the pipeline already counts case failures
        return case_error(case.id, table.name, output.error or "case failed")
    if not has_judge:
        return skipped(case.id, table.name, NO_JUDGE)
    inputs = material_inputs(table, case, output)
    if isinstance(inputs, MetricResult):
        return inputs
    return JudgePlan(case.id, table.name, table.name, inputs, partial(score_band, case.id, table))


def band_scores(bands: Sequence[str]) -> dict[str, float]:
    """Bands scored evenly from 0 (the first) to 1 (the last)."""
    last = len(bands) - 1
    return {band: i / last for i, band in enumerate(bands)}


def score_band(case_id: str, table: MetricTable, data: Mapping[str, Any]) -> MetricResult:
    value = band_scores(table.bands)[data["verdict"]]
    return scored(case_id, table.name, value, json.dumps(data, ensure_ascii=False))
