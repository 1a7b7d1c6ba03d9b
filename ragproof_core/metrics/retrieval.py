"""Retrieval metrics (metrics.md, "Source matching" and "Retrieval metrics").

Modelled on ranx's metric kernels: each metric is one small pure function over
an already deduplicated ranked id list, the set of relevant ids and the cutoff
``k``. ``retrieval_results`` is the only place that knows about cases, adapter
outputs, settings and skip reasons.

These kernels run once per case on datasets of a million cases, so they avoid
per-call allocation where they can: discounts and ideal DCGs come from
precomputed immutable tables, membership is a set lookup, and no numpy array is
built per case (for lists this short the conversion costs more than the math).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from itertools import accumulate

from ragproof_core.config import RunSettings
from ragproof_core.model import Case, CaseOutput, Chunk, MetricResult, Status, skipped

PRECISION_AT_K = "retrieval.precision_at_k"
RECALL_AT_K = "retrieval.recall_at_k"
MRR = "retrieval.mrr"
NDCG_AT_K = "retrieval.ndcg_at_k"
RETRIEVAL_METRICS: tuple[str, ...] = (PRECISION_AT_K, RECALL_AT_K, MRR, NDCG_AT_K)

NO_RETRIEVAL = "adapter does not expose retrieval"
NO_EXPECTED_SOURCES = "case has no expected_source_ids"

# _DISCOUNTS[i] is the nDCG gain of a relevant id at 0-based position i, that is
# 1 / log2(rank + 1) with rank = i + 1. Ranks past the table (k > 256 is rare)
# are computed on the fly by _discount.
_TABLE_SIZE = 256
_DISCOUNTS: tuple[float, ...] = tuple(
    1.0 / math.log2(rank + 1) for rank in range(1, _TABLE_SIZE + 1)
)
# _IDEAL_DCGS[m] is the DCG of m relevant ids in the first m positions, summed
# left to right exactly as ndcg_at_k sums DCG, so a perfect ranking gives 1.0.
_IDEAL_DCGS: tuple[float, ...] = tuple(accumulate(_DISCOUNTS, initial=0.0))


def _discount(position: int) -> float:
    """Gain of a relevant id at 0-based ``position``."""
    if position < _TABLE_SIZE:
        return _DISCOUNTS[position]
    return 1.0 / math.log2(position + 2)


def _ideal_dcg(m: int) -> float:
    """DCG of a ranking whose first ``m`` ids are all relevant."""
    if m <= _TABLE_SIZE:
        return _IDEAL_DCGS[m]
    total = _IDEAL_DCGS[_TABLE_SIZE]
    for position in range(_TABLE_SIZE, m):
        total += _discount(position)
    return total


def dedupe(ids: Iterable[str]) -> list[str]:
    """Drop repeated ids, keeping each id at its first (highest) rank."""
    # dict preserves insertion order and keeps the first key it sees.
    return list(dict.fromkeys(ids))


def matched_ids(chunks: Sequence[Chunk], source_match: str) -> list[str]:
    """The ranked, deduplicated source ids of ``chunks`` under ``source_match``.

    ``"chunk"`` matches on the chunk id; ``"document"`` on metadata.document_id,
    falling back to the chunk id (``Chunk.document_id``).
    """
    # dedupe() inlined: this runs once per case on million-case datasets.
    if source_match == "chunk":
        return list(dict.fromkeys([chunk.id for chunk in chunks]))
    if source_match == "document":
        return list(dict.fromkeys([chunk.document_id for chunk in chunks]))
    raise ValueError(f"source_match must be 'chunk' or 'document', got {source_match!r}")


def hits_at_k(ranked: Sequence[str], relevant: AbstractSet[str], k: int) -> int:
    """How many of the first ``k`` ranked ids are relevant."""
    return len([doc for doc in ranked[:k] if doc in relevant])


def precision_at_k(ranked: Sequence[str], relevant: AbstractSet[str], k: int) -> float:
    """hits(k) / k. The denominator is always k, so short result lists are penalised."""
    return hits_at_k(ranked, relevant, k) / k


def recall_at_k(ranked: Sequence[str], relevant: AbstractSet[str], k: int) -> float:
    """hits(k) / |relevant|; 0.0 for an empty relevant set (callers skip that case)."""
    if not relevant:
        return 0.0
    return hits_at_k(ranked, relevant, k) / len(relevant)


def mrr(ranked: Sequence[str], relevant: AbstractSet[str], k: int | None = None) -> float:
    """1 / rank of the first relevant id over the whole list, else 0.0.

    ``k`` is accepted so every kernel shares one signature, and ignored on
    purpose: metrics.md defines MRR over the full ranked list, not the top k.
    """
    for rank, doc in enumerate(ranked, 1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranked: Sequence[str], relevant: AbstractSet[str], k: int) -> float:
    """Binary nDCG@k; IDCG counts min(k, |relevant|) ideal positions."""
    dcg = 0.0
    for position, doc in enumerate(ranked[:k]):
        if doc in relevant:
            dcg += _DISCOUNTS[position] if position < _TABLE_SIZE else _discount(position)
    if dcg == 0.0:
        # Also covers an empty relevant set, where IDCG would be 0.
        return 0.0
    return dcg / _ideal_dcg(min(k, len(relevant)))


def retrieval_scores(
    ranked: Sequence[str], relevant: AbstractSet[str], k: int
) -> tuple[float, float, float, float]:
    """(precision@k, recall@k, MRR, nDCG@k) in one pass over the ranked list.

    Exactly equal to calling the four kernels (a property test holds it to
    that); it exists because the per-case path runs a million times and four
    separate scans cost twice as much. The kernels stay the readable definition.
    """
    hits = 0
    dcg = 0.0
    reciprocal_rank = 0.0
    for position, doc in enumerate(ranked[:k]):
        if doc in relevant:
            if not hits:
                reciprocal_rank = 1.0 / (position + 1)
            hits += 1
            dcg += _DISCOUNTS[position] if position < _TABLE_SIZE else _discount(position)
    if not hits:
        for position in range(k, len(ranked)):
            if ranked[position] in relevant:
                reciprocal_rank = 1.0 / (position + 1)
                break
        return 0.0, 0.0, reciprocal_rank, 0.0
    return (
        hits / k,
        hits / len(relevant),
        reciprocal_rank,
        dcg / _ideal_dcg(min(k, len(relevant))),
    )


def retrieval_results(case: Case, output: CaseOutput, settings: RunSettings) -> list[MetricResult]:
    """The four retrieval results for one case that did not fail.

    Uses ``output.retrieved`` (the ``retrieve()`` result), never the answer's
    own chunks: metrics.md ties retrieval metrics to an exposed ``retrieve()``.
    """
    case_id = case.id
    if output.retrieved is None:
        return [skipped(case_id, name, NO_RETRIEVAL) for name in RETRIEVAL_METRICS]
    expected = case.expected_source_ids
    if not expected:
        return [skipped(case_id, name, NO_EXPECTED_SOURCES) for name in RETRIEVAL_METRICS]
    ranked = matched_ids(output.retrieved, settings.source_match)
    relevant = frozenset(expected)
    precision, recall, reciprocal_rank, ndcg = retrieval_scores(ranked, relevant, settings.k)
    scored = Status.SCORED
    # MetricResult directly rather than model.scored(): this runs a million
    # times per benchmark and the helper only adds a call and a float().
    return [
        MetricResult(case_id, PRECISION_AT_K, scored, precision),
        MetricResult(case_id, RECALL_AT_K, scored, recall),
        MetricResult(case_id, MRR, scored, reciprocal_rank),
        MetricResult(case_id, NDCG_AT_K, scored, ndcg),
    ]
