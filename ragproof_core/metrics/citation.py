"""generation.citation_validity (metrics.md): do the answer's citations point at retrieved chunks?

Citations are chunk ids and are checked against the ids of the retrieved set,
whatever ``run.source_match`` says (CONTRACT section 2): source matching is a
retrieval-metric concept, while a citation names one concrete chunk.
"""

from __future__ import annotations

from ragproof_core.metrics.spec import MetricSpec, case_only
from ragproof_core.model import Case, CaseOutput, MetricResult, scored, skipped

CITATION_VALIDITY = "generation.citation_validity"

NO_ANSWER = "adapter produced no answer"
NO_CITATIONS = "answer has no citations"
# metrics.md does not cover an answer with citations but no retrieved set known
# at all (no answer.retrieved_chunks and no retrieve()). Scoring 0 would blame
# the citations for what is really missing information, so the case skips.
NO_RETRIEVED_SET = "no retrieved set to check citations against"


def citation_validity(case: Case, output: CaseOutput) -> MetricResult:
    """Share of distinct cited ids found among the retrieved chunk ids.

    The retrieved set is ``output.context``: the answer's own retrieved_chunks,
    else the ``retrieve()`` result. An empty retrieved set scores 0.0, since
    every citation then points at nothing.
    """
    answer = output.answer
    if answer is None:
        return skipped(case.id, CITATION_VALIDITY, NO_ANSWER)
    if not answer.citations:
        return skipped(case.id, CITATION_VALIDITY, NO_CITATIONS)
    context = output.context
    if context is None:
        return skipped(case.id, CITATION_VALIDITY, NO_RETRIEVED_SET)
    cited = set(answer.citations)
    valid = cited & {chunk.id for chunk in context}
    return scored(case.id, CITATION_VALIDITY, len(valid) / len(cited))


# Where these metrics come in the registry, the summary and the report (metrics.registry).
REPORT_ORDER = 30
METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        CITATION_VALIDITY,
        True,
        "never",
        ("answer", "citations"),
        "share of cited ids found in the retrieved set",
        score=case_only(citation_validity),
    ),
)
