"""generation.citation_validity (metrics.md): do the answer's citations point at retrieved chunks?

Citations are chunk ids and are checked against the ids of the retrieved set,
whatever ``run.source_match`` says (CONTRACT section 2): source matching is a
retrieval-metric concept, while a citation names one concrete chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ragproof_core.metrics.result_columns import ResultColumns
from ragproof_core.metrics.result_grid import ResultGrid, case_ids, null_mask
from ragproof_core.metrics.spec import MetricSpec, case_only
from ragproof_core.model import Case, CaseOutput, MetricResult, Status, scored, skipped

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
    return scored(
        case.id, CITATION_VALIDITY, valid_share(answer.citations, [c.id for c in context])
    )


def valid_share(citations: Sequence[str], retrieved_ids: Sequence[str]) -> float:
    """The share of distinct cited ids among the retrieved ids (``citations`` not empty)."""
    cited = set(citations)
    return len(cited.intersection(retrieved_ids)) / len(cited)


def citation_columns(
    dataset: pa.Table, outputs: pa.Table, params: Any, wanted: Sequence[str]
) -> ResultColumns:
    """``citation_validity`` from the outputs' columns: the same skips in the same order
    (no answer, no citations, no retrieved set), then the same share of distinct cited
    ids among the context's chunk ids (the answer's chunks, else ``retrieve()``'s)."""
    grid = ResultGrid(case_ids(dataset), wanted, NO_ANSWER)
    answered = ~null_mask(outputs.column("answer_text"))
    citations = outputs.column("citations").combine_chunks()
    cites = answered & (
        pc.list_value_length(citations).fill_null(0).to_numpy(zero_copy_only=False) > 0
    )
    grid.set(answered & ~cites, Status.SKIPPED, NO_CITATIONS)
    own = outputs.column("answer_chunks").combine_chunks()
    retrieved = outputs.column("retrieved").combine_chunks()
    has_context = ~(null_mask(own) & null_mask(retrieved))
    grid.set(cites & ~has_context, Status.SKIPPED, NO_RETRIEVED_SET)
    chosen = pa.array(np.flatnonzero(cites & has_context), pa.int64())
    # ``output.context``: the answer's own chunks, else retrieve()'s; their ids only.
    context = pc.if_else(own.is_null(), chunk_ids(retrieved), chunk_ids(own))
    shares = [
        valid_share(cited, ids)
        for cited, ids in zip(
            citations.take(chosen).to_pylist(), context.take(chosen).to_pylist(), strict=True
        )
    ]
    grid.score(chosen.to_numpy(), shares)
    return grid.columns()


def chunk_ids(chunks: pa.Array) -> pa.Array:
    """A column of chunk lists as lists of their ids (a null list stays null), without
    copying the chunks' texts."""
    # The offsets copied: a slice of a column (a batch of the store's rows) has offsets
    # that from_arrays takes only without a null mask.
    offsets = pa.array(chunks.offsets.to_numpy(zero_copy_only=False), pa.int32())
    return pa.ListArray.from_arrays(
        offsets, pc.struct_field(chunks.values, "id"), mask=chunks.is_null()
    )


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
        score_columns=citation_columns,
        reads=frozenset({"citations", "context"}),
    ),
)
