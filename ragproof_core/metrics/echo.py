"""echo.exact_match (metrics.md): a debugging metric comparing the answer text verbatim."""

from __future__ import annotations

from ragproof_core.metrics.spec import MetricSpec, case_only
from ragproof_core.model import Case, CaseOutput, MetricResult, scored, skipped

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
    return scored(
        case.id, EXACT_MATCH, 1.0 if output.answer.text.strip() == expected.strip() else 0.0
    )


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
    ),
)
