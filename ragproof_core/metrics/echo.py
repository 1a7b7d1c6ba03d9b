"""echo.exact_match (metrics.md): a debugging metric comparing the answer text verbatim."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from ragproof_core.metrics.result_columns import ResultColumns
from ragproof_core.metrics.result_grid import ResultGrid, case_ids
from ragproof_core.metrics.spec import MetricSpec, case_only
from ragproof_core.model import Case, CaseOutput, MetricResult, Status, scored, skipped

EXACT_MATCH = "echo.exact_match"

NO_EXPECTED_ANSWER = "case has no expected_answer"
NO_ANSWER = "adapter produced no answer"


def exact_match(case: Case, output: CaseOutput) -> MetricResult:
    """1.0 when answer and expected answer are equal after ``str.strip()``, else 0.0.

    A blank expected_answer (empty or only whitespace) counts as no expected
    answer: matching against it would score nearly every case 0 for a missing
    reference, and a metric that cannot be computed must skip, never score 0.
    """
    expected = case.expected_answer
    if expected is None or not expected.strip():
        return skipped(case.id, EXACT_MATCH, NO_EXPECTED_ANSWER)
    if output.answer is None:
        return skipped(case.id, EXACT_MATCH, NO_ANSWER)
    return scored(case.id, EXACT_MATCH, match_value(output.answer.text, expected))


def match_value(answer: str, expected: str) -> float:
    return 1.0 if answer.strip() == expected.strip() else 0.0


def exact_match_columns(
    dataset: pa.Table, outputs: pa.Table, params: Any, wanted: Sequence[str]
) -> ResultColumns:
    """``exact_match`` from the columns, row by row over the two texts."""
    grid = ResultGrid(case_ids(dataset), wanted, NO_EXPECTED_ANSWER)
    rows, values, unanswered = [], [], []
    for row, (expected, text) in enumerate(
        zip(
            dataset.column("expected_answer").to_pylist(),
            outputs.column("answer_text").to_pylist(),
            strict=True,
        )
    ):
        if expected is None or not expected.strip():
            continue
        if text is None:
            unanswered.append(row)
        else:
            rows.append(row)
            values.append(match_value(text, expected))
    grid.set(unanswered, Status.SKIPPED, NO_ANSWER)
    grid.score(rows, values)
    return grid.columns()


# Where these metrics come in the registry, the summary and the report (metrics.registry).
REPORT_ORDER = 50
METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        EXACT_MATCH,
        True,
        "never",
        ("answer", "expected_answer"),
        "answer equals the expected answer after stripping (debugging)",
        score=case_only(exact_match),
        score_columns=exact_match_columns,
        reads=frozenset({"answer"}),
    ),
)
