"""Agent trajectories measured against gold (CONTRACT section 17, docs/metrics.md).

A case's ``expected_tools`` are matched against the tool calls in its answer's
``steps``. A made call matches an expected one when the names are equal and
every key of the expected arguments has an equal JSON value among the made
call's arguments (``json_equal``). Matching is one to one and maximal: the
largest set of (expected, made) pairs in which no call appears twice
(``max_matching``, augmenting paths), so a repeated call is an extra call and a
made call that could match two expected ones counts once. A greedy first-fit
match would be wrong: with expected ``[search, search(q="a")]`` and made
``[search(q="a"), search(q="b")]``, first-fit pairs ``search`` with
``search(q="a")`` and leaves ``search(q="a")`` unmatched (recall 1/2), while
the maximal matching pairs both (recall 1).

The pure functions (``json_equal``, ``call_matches``, ``max_matching``,
``in_order``, ``exact``) hold the rules; ``tool_results`` turns a case into
results and skip reasons.

``agent.task_completion`` is judged (prompt ``task_completion``, one call per
case whose answer has steps): the judge reads the question, the steps (one JSON
object a line, ``steps_text``) and the answer, and replies complete, partial or
failed, scored 1, 0.5 and 0.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa

from ragproof_core.adapters.coerce import to_steps
from ragproof_core.metrics.judge_plan import JudgePlan, Planned
from ragproof_core.metrics.result_columns import ResultColumns
from ragproof_core.metrics.result_grid import ResultGrid, case_ids, null_mask
from ragproof_core.metrics.spec import MetricGroup, MetricSpec, case_only, plan_without_params
from ragproof_core.model import (
    Answer,
    Case,
    CaseOutput,
    ExpectedTool,
    MetricResult,
    Status,
    Step,
    ToolMatch,
    ToolStep,
    case_error,
    expected_tools_from_json,
    not_applicable,
    scored,
    skipped,
)

TOOL_PRECISION = "agent.tool_precision"
TOOL_RECALL = "agent.tool_recall"
TRAJECTORY_MATCH = "agent.trajectory_match"
STEPS = "agent.steps"
TASK_COMPLETION = "agent.task_completion"
TASK_COMPLETION_PROMPT = "task_completion"
TASK_COMPLETION_SCORES: dict[str, float] = {"complete": 1.0, "partial": 0.5, "failed": 0.0}
TOOL_METRICS: tuple[str, ...] = (TOOL_PRECISION, TOOL_RECALL, TRAJECTORY_MATCH)

NO_EXPECTED_TOOLS = "case has no expected_tools"
NO_ANSWER = "adapter produced no answer"
NO_STEPS = "answer has no steps"
NO_CALLS = "no tool call was made"
NO_EXPECTED_CALLS = "case expects no tool call"
NO_JUDGE = "no judge configured (set RAGPROOF_JUDGE_MODEL)"


def json_equal(a: Any, b: Any) -> bool:
    """Equality of two JSON values: ``1`` equals ``1.0``, ``true`` does not equal ``1``
    (Python's ``True == 1`` would say it does), objects key by key, arrays in order."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[key], b[key]) for key in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return False


def call_matches(expected: ExpectedTool, made: ToolStep) -> bool:
    """Same name, and every expected argument present in the made call with an equal JSON
    value; the made call may carry more arguments (``None`` expects none in particular)."""
    if expected.name != made.name:
        return False
    wanted = expected.arguments or {}
    return all(
        key in made.arguments and json_equal(v, made.arguments[key]) for key, v in wanted.items()
    )


def max_matching(
    expected_count: int, made_count: int, edge: Callable[[int, int], bool]
) -> dict[int, int]:
    """A maximum one-to-one matching of a bipartite graph, as {expected index: made index}.

    Kuhn's augmenting paths: for each expected call, look for a free made call or one
    whose partner can move to another; a trajectory holds a handful of calls, so the
    O(V * E) bound costs nothing.
    """
    adjacent = [[j for j in range(made_count) if edge(i, j)] for i in range(expected_count)]
    partner_of_made: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j in adjacent[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in partner_of_made or augment(partner_of_made[j], seen):
                partner_of_made[j] = i
                return True
        return False

    for i in range(expected_count):
        augment(i, set())
    return {i: j for j, i in partner_of_made.items()}


def tool_matching(expected: Sequence[ExpectedTool], made: Sequence[ToolStep]) -> dict[int, int]:
    """The maximal one-to-one matching of expected to made calls, {expected i: made j}."""
    return max_matching(len(expected), len(made), lambda i, j: call_matches(expected[i], made[j]))


def exact(expected: Sequence[ExpectedTool], made: Sequence[ToolStep]) -> bool:
    """The made calls match the expected ones pairwise: same length, same order."""
    return len(expected) == len(made) and all(
        call_matches(e, m) for e, m in zip(expected, made, strict=True)
    )


def in_order(expected: Sequence[ExpectedTool], made: Sequence[ToolStep]) -> bool:
    """The expected calls match a subsequence of the made calls. Taking the earliest made
    call that matches each expected call in turn is enough: any later choice leaves fewer
    made calls for the rest, so if a subsequence exists this finds one."""
    position = 0
    for call in expected:
        while position < len(made) and not call_matches(call, made[position]):
            position += 1
        if position == len(made):
            return False
        position += 1
    return True


def any_order(expected: Sequence[ExpectedTool], made: Sequence[ToolStep]) -> bool:
    """Every expected call matches a distinct made call."""
    return len(tool_matching(expected, made)) == len(expected)


TRAJECTORY_RULES: dict[ToolMatch, Callable[[Sequence[ExpectedTool], Sequence[ToolStep]], bool]] = {
    ToolMatch.EXACT: exact,
    ToolMatch.IN_ORDER: in_order,
    ToolMatch.ANY_ORDER: any_order,
}


def tool_results(
    case: Case, output: CaseOutput, params: Any, wanted: Sequence[str]
) -> list[MetricResult]:
    """The ``wanted`` tool metrics of one case that did not fail, in that order."""
    reason = _skip_reason(case, output)
    if reason is not None:
        return [skipped(case.id, name, reason) for name in wanted]
    expected = case.expected_tools
    made = output.answer.tool_calls
    matched = len(tool_matching(expected, made))
    results = []
    for name in wanted:
        if name == TOOL_PRECISION:
            if made:
                results.append(scored(case.id, name, matched / len(made)))
            else:
                results.append(not_applicable(case.id, name, NO_CALLS))
        elif name == TOOL_RECALL:
            if expected:
                results.append(scored(case.id, name, matched / len(expected)))
            else:
                results.append(not_applicable(case.id, name, NO_EXPECTED_CALLS))
        else:
            satisfied = TRAJECTORY_RULES[case.tool_match](expected, made)
            results.append(scored(case.id, name, 1.0 if satisfied else 0.0))
    return results


def _skip_reason(case: Case, output: CaseOutput) -> str | None:
    if case.expected_tools is None:
        return NO_EXPECTED_TOOLS
    if output.answer is None:
        return NO_ANSWER
    if output.answer.steps is None:
        return NO_STEPS
    return None


def step_count(case: Case, output: CaseOutput) -> MetricResult:
    """The number of steps the agent took (lower is better)."""
    if output.answer is None:
        return skipped(case.id, STEPS, NO_ANSWER)
    if output.answer.steps is None:
        return skipped(case.id, STEPS, NO_STEPS)
    return scored(case.id, STEPS, len(output.answer.steps))


def steps_text(steps: Sequence[Step]) -> str:
    """The trajectory as the judge reads it: one JSON object a line, in order (chunks with
    their id and text only); ``(no steps)`` for a trajectory in which no call was made."""
    if not steps:
        return "(no steps)"
    lines = []
    for step in steps:
        data = step.to_json()
        if "chunks" in data:
            data["chunks"] = [{"id": c["id"], "text": c["text"]} for c in data["chunks"]]
        lines.append(json.dumps(data, ensure_ascii=False, sort_keys=True))
    return "\n".join(lines)


def plan_task_completion(case: Case, output: CaseOutput, has_judge: bool) -> Planned:
    """complete 1.0, partial 0.5, failed 0.0; asked only of an answer with steps."""
    if output.failed:  # defensive: the pipeline already counts case failures
        return case_error(case.id, TASK_COMPLETION, output.error or "case failed")
    if output.answer is None:
        return skipped(case.id, TASK_COMPLETION, NO_ANSWER)
    if output.answer.steps is None:
        return skipped(case.id, TASK_COMPLETION, NO_STEPS)
    if not has_judge:
        return skipped(case.id, TASK_COMPLETION, NO_JUDGE)
    return JudgePlan(
        case.id,
        TASK_COMPLETION,
        TASK_COMPLETION_PROMPT,
        {
            "question": case.question,
            "steps": steps_text(output.answer.steps),
            "answer": output.answer.text,
        },
        partial(score_task_completion, case.id),
    )


def score_task_completion(case_id: str, data: Mapping[str, Any]) -> MetricResult:
    return scored(
        case_id,
        TASK_COMPLETION,
        TASK_COMPLETION_SCORES[data["verdict"]],
        json.dumps(data, ensure_ascii=False),
    )


# --- from the store's columns -----------------------------------------------------------------


def steps_grid(dataset: pa.Table, outputs: pa.Table, wanted: Sequence[str]) -> ResultGrid:
    """A grid whose cases without an answer skip with ``NO_ANSWER`` and whose answers
    without steps skip with ``NO_STEPS``; the rest are left for the caller."""
    grid = ResultGrid(case_ids(dataset), wanted, NO_STEPS)
    grid.set(null_mask(outputs.column("answer_text")), Status.SKIPPED, NO_ANSWER)
    return grid


def with_steps(outputs: pa.Table) -> np.ndarray:
    """The rows whose answer reports steps (a trajectory, maybe empty)."""
    return np.flatnonzero(~null_mask(outputs.column("steps_json")))


def stepped_rows(
    dataset: pa.Table, outputs: pa.Table, gold: np.ndarray, *columns: str
) -> Iterator[tuple[Any, ...]]:
    """The cases with gold (``gold``: a mask of the rows) whose answer reports steps,
    each as (its row, the output a metric of steps reads, its values of the dataset's
    ``columns``)."""
    rows = np.flatnonzero(gold & ~null_mask(outputs.column("steps_json")))
    chosen = pa.array(rows, pa.int64())
    ids, *picked = (dataset.column(name).take(chosen).to_pylist() for name in ("id", *columns))
    texts = outputs.column("answer_text").take(chosen).to_pylist()
    steps = outputs.column("steps_json").take(chosen).to_pylist()
    for row, case_id, text, steps_json, *values in zip(
        rows, ids, texts, steps, *picked, strict=True
    ):
        answer = Answer(text, steps=to_steps(json.loads(steps_json)))
        yield (row, CaseOutput(case_id, answer), *values)


def tool_columns(
    dataset: pa.Table, outputs: pa.Table, params: Any, wanted: Sequence[str]
) -> ResultColumns:
    """``tool_results`` from the columns: a case with no expected tools, no answer or no
    steps skips at once (``_skip_reason``'s order); the rest are scored by
    ``tool_results`` itself."""
    grid = steps_grid(dataset, outputs, wanted)
    no_tools = null_mask(dataset.column("expected_tools_json"))
    grid.set(no_tools, Status.SKIPPED, NO_EXPECTED_TOOLS)
    for row, output, tools, match in stepped_rows(
        dataset, outputs, ~no_tools, "expected_tools_json", "tool_match"
    ):
        case = Case(
            output.case_id,
            "",
            expected_tools=expected_tools_from_json(tools),
            tool_match=ToolMatch.IN_ORDER if match is None else ToolMatch(match),
        )
        grid.put(row, tool_results(case, output, params, wanted))
    return grid.columns()


def step_columns(
    dataset: pa.Table, outputs: pa.Table, params: Any, wanted: Sequence[str]
) -> ResultColumns:
    """``step_count`` from the columns: the number of steps each answer reports."""
    grid = steps_grid(dataset, outputs, wanted)
    rows = with_steps(outputs)
    steps = outputs.column("steps_json").take(pa.array(rows, pa.int64())).to_pylist()
    grid.score(rows, [len(json.loads(text)) for text in steps])
    return grid.columns()


def unjudged_task_columns(
    dataset: pa.Table, outputs: pa.Table, params: Any, wanted: Sequence[str]
) -> ResultColumns:
    """``plan_task_completion`` without a judge: an answer with steps skips for want of
    a judge, the others as without one."""
    grid = steps_grid(dataset, outputs, wanted)
    grid.set(with_steps(outputs), Status.SKIPPED, NO_JUDGE)
    return grid.columns()


# After robustness (60), before the system metrics (70).
REPORT_ORDER = 65
# One maximal matching per case serves precision, recall and any_order.
TOOL_GROUP = MetricGroup(
    "agent_tools", TOOL_METRICS, score=tool_results, score_columns=tool_columns
)
_NEEDS = ("steps", "expected_tools")

METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        TOOL_PRECISION,
        True,
        "never",
        _NEEDS,
        "made tool calls matching an expected call (one to one) / made calls",
        group=TOOL_GROUP,
        reads=frozenset({"tool_calls"}),
    ),
    MetricSpec(
        TOOL_RECALL,
        True,
        "never",
        _NEEDS,
        "expected tool calls matched by a made call (one to one) / expected calls",
        group=TOOL_GROUP,
        reads=frozenset({"tool_calls"}),
    ),
    MetricSpec(
        TRAJECTORY_MATCH,
        True,
        "never",
        _NEEDS,
        "1 when the made calls satisfy the case's tool_match (exact, in_order, any_order)",
        group=TOOL_GROUP,
        reads=frozenset({"tool_calls"}),
    ),
    MetricSpec(
        STEPS,
        False,
        "never",
        ("steps",),
        "the number of steps the agent took",
        score=case_only(step_count),
        score_columns=step_columns,
        reads=frozenset({"tool_calls"}),
        bounded=False,
    ),
    MetricSpec(
        TASK_COMPLETION,
        True,
        "required",
        ("steps",),
        "complete 1, partial 0.5, failed 0 (judge over the question, steps and answer)",
        plan=plan_without_params(plan_task_completion),
        score_columns=unjudged_task_columns,
        prompt=TASK_COMPLETION_PROMPT,
        reads=frozenset({"answer", "tool_calls"}),
    ),
)
