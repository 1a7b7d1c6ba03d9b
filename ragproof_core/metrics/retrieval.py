"""Retrieval metrics (metrics.md, "Source matching" and "Retrieval metrics").

Modelled on ranx's metric kernels: each metric is one small pure function over
an already deduplicated ranked id list, the set of relevant ids and the cutoff
``k``. ``retrieval_results`` (one case) and ``retrieval_batch_results`` (many)
are the only places that know about cases, adapter outputs, settings and skip
reasons.

A run scores through ``retrieval_batch_results``: the scored cases of a batch
become one ``RetrievalBatch`` and each metric is one numpy kernel over all of
them (``retrieval_batch_kernels``), equal to the per-case kernels here to the
last bit. The per-case kernels stay the readable definition and score a single
case; they avoid per-call allocation where they can: discounts and ideal DCGs
come from precomputed immutable tables, membership is a set lookup, and no
numpy array is built per case (for lists this short the conversion costs more
than the math).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from functools import lru_cache
from itertools import accumulate
from operator import attrgetter

import numpy as np
import pyarrow as pa

from ragproof_core.metrics import retrieval_batch_kernels as batch_kernels
from ragproof_core.metrics.cutoff import split_cutoff
from ragproof_core.metrics.result_columns import STATUS_CODE, ResultColumns
from ragproof_core.metrics.retrieval_batch import BatchBuilder, RetrievalBatch
from ragproof_core.metrics.retrieval_batch_columns import batch_from_lists, judged_ids, ranked_ids
from ragproof_core.metrics.spec import SOURCE_MATCHES, MetricGroup, MetricSpec, Params
from ragproof_core.metrics.trec_measures import (
    average_precision,
    bpref,
    graded_ndcg_at_k,
    hit_rate_at_k,
    judged_at_k,
    r_precision,
)
from ragproof_core.model import Case, CaseOutput, Chunk, MetricResult, Status, skipped

PRECISION_AT_K = "retrieval.precision_at_k"
RECALL_AT_K = "retrieval.recall_at_k"
MRR = "retrieval.mrr"
NDCG_AT_K = "retrieval.ndcg_at_k"
RETRIEVAL_METRICS: tuple[str, ...] = (PRECISION_AT_K, RECALL_AT_K, MRR, NDCG_AT_K)
# The trec_eval measures of CONTRACT section 19, scored only when selected.
MAP = "retrieval.map"
R_PRECISION = "retrieval.r_precision"
HIT_RATE_AT_K = "retrieval.hit_rate_at_k"
BPREF = "retrieval.bpref"
JUDGED_AT_K = "retrieval.judged_at_k"
DEPTH_METRICS: tuple[str, ...] = (MAP, R_PRECISION, HIT_RATE_AT_K, BPREF, JUDGED_AT_K)
SCORED_RETRIEVAL: tuple[str, ...] = RETRIEVAL_METRICS + DEPTH_METRICS

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
    raise bad_source_match(source_match)


def bad_source_match(source_match: str) -> ValueError:
    return ValueError(f"source_match must be 'chunk' or 'document', got {source_match!r}")


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


_FOUR = frozenset(RETRIEVAL_METRICS)
# Kernels over the relevant ids (grade >= 1) and over every judged id with its grade.
_BY_RELEVANT = {PRECISION_AT_K: precision_at_k, RECALL_AT_K: recall_at_k, MRR: mrr}
_BY_GRADES = {
    MAP: average_precision,
    R_PRECISION: r_precision,
    HIT_RATE_AT_K: hit_rate_at_k,
    BPREF: bpref,
    JUDGED_AT_K: judged_at_k,
}


def retrieval_value(
    name: str, ranked: Sequence[str], case: Case, relevant: AbstractSet[str], k: int
) -> float:
    """One deterministic retrieval metric (``name`` without its ``@N``) at cut-off ``k``.

    nDCG uses the grades as gains when the case has grades (trec_eval's
    ``ndcg_cut``); on a list of ids it is the binary kernel, which is the same
    number with every gain 1.
    """
    by_relevant = _BY_RELEVANT.get(name)
    if by_relevant is not None:
        return by_relevant(ranked, relevant, k)
    if name == NDCG_AT_K:
        if case.source_grades is None:
            return ndcg_at_k(ranked, relevant, k)
        return graded_ndcg_at_k(ranked, case.source_grades, k)
    return _BY_GRADES[name](ranked, case.judgments(), k)


def retrieval_results(
    case: Case,
    output: CaseOutput,
    settings: Params,
    wanted: Sequence[str] = RETRIEVAL_METRICS,
) -> list[MetricResult]:
    """The ``wanted`` retrieval results for one case that did not fail, in that order.

    ``wanted`` names deterministic retrieval metrics, each optionally with a
    cut-off (``retrieval.ndcg_at_k@10``); without one a metric is cut at
    ``run.k``. Uses ``output.retrieved`` (the ``retrieve()`` result), never
    the answer's own chunks: metrics.md ties retrieval metrics to an exposed
    ``retrieve()``.
    """
    case_id = case.id
    if output.retrieved is None:
        return [skipped(case_id, name, NO_RETRIEVAL) for name in wanted]
    expected = case.expected_source_ids
    if not expected:
        # Also a graded case whose grades are all 0: it has no relevant source.
        return [skipped(case_id, name, NO_EXPECTED_SOURCES) for name in wanted]
    ranked = matched_ids(output.retrieved, settings.source_match)
    relevant = frozenset(expected)
    scored = Status.SCORED
    if case.source_grades is None and _FOUR.issuperset(wanted):
        # The four binary metrics at run.k share one pass over the ranking.
        precision, recall, reciprocal_rank, ndcg = retrieval_scores(ranked, relevant, settings.k)
        # MetricResult directly rather than model.scored(): this runs a million
        # times per benchmark and the helper only adds a call and a float().
        four = [
            MetricResult(case_id, PRECISION_AT_K, scored, precision),
            MetricResult(case_id, RECALL_AT_K, scored, recall),
            MetricResult(case_id, MRR, scored, reciprocal_rank),
            MetricResult(case_id, NDCG_AT_K, scored, ndcg),
        ]
        return four if wanted == RETRIEVAL_METRICS else [r for r in four if r.metric in wanted]
    results = []
    binary = case.source_grades is None
    four: dict[str, float] | None = None
    grades: dict[str, int] | None = None
    for name, base, cutoff in _split_names(tuple(wanted)):
        k = cutoff or settings.k
        if binary and k == settings.k and base in _FOUR:
            # The four binary metrics at run.k still share one pass (as above).
            if four is None:
                four = dict(
                    zip(RETRIEVAL_METRICS, retrieval_scores(ranked, relevant, k), strict=True)
                )
            value = four[base]
        elif base in _BY_GRADES:
            # The judgments are built once per case, not once per measure.
            if grades is None:
                grades = case.judgments()
            value = _BY_GRADES[base](ranked, grades, k)
        else:
            value = retrieval_value(base, ranked, case, relevant, k)
        results.append(MetricResult(case_id, name, scored, value))
    return results


@lru_cache(maxsize=64)
def _split_names(wanted: tuple[str, ...]) -> tuple[tuple[str, str, int | None], ...]:
    """Each wanted name with its base name and cut-off, worked out once per selection."""
    return tuple((name, *split_cutoff(name)) for name in wanted)


_CHUNK_ID = attrgetter("id")
_DOCUMENT_ID = attrgetter("document_id")


def retrieval_batch_results(
    cases: Sequence[Case],
    outputs: Sequence[CaseOutput],
    settings: Params,
    wanted: Sequence[str] = RETRIEVAL_METRICS,
) -> list[list[MetricResult]]:
    """``retrieval_results`` of many cases that did not fail, one list per case in order:
    the same rows (status, value, reason), each case's in ``wanted`` order.

    The skips are decided case by case; the scored cases go into one
    ``RetrievalBatch`` and each metric is one numpy kernel over all of them
    (``retrieval_batch_kernels``).
    """
    if settings.source_match not in SOURCE_MATCHES:
        raise bad_source_match(settings.source_match)
    matched = _DOCUMENT_ID if settings.source_match == "document" else _CHUNK_ID
    rows: list[list[MetricResult] | None] = []
    scored_ids: list[str] = []
    builder = BatchBuilder()
    for case, output in zip(cases, outputs, strict=True):
        chunks = output.retrieved
        if chunks is None:
            rows.append([skipped(case.id, name, NO_RETRIEVAL) for name in wanted])
            continue
        if not case.expected_source_ids:
            rows.append([skipped(case.id, name, NO_EXPECTED_SOURCES) for name in wanted])
            continue
        rows.append(None)
        scored_ids.append(case.id)
        builder.add(map(matched, chunks), case.judgments())
    if not scored_ids:
        return rows  # type: ignore[return-value]  # every case was skipped
    columns = batch_values(builder.build(), wanted, settings.k)
    scored = Status.SCORED
    # One metric's rows at a time (a tight loop), then regrouped by case.
    by_metric = [
        [
            MetricResult(case_id, name, scored, value)
            for case_id, value in zip(scored_ids, column, strict=True)
        ]
        for name, column in zip(wanted, columns, strict=True)
    ]
    by_case = map(list, zip(*by_metric, strict=True))
    if len(scored_ids) == len(rows):
        return list(by_case)
    return [next(by_case) if row is None else row for row in rows]


def batch_values(batch: RetrievalBatch, wanted: Sequence[str], k: int) -> list[list[float]]:
    """Each ``wanted`` metric's value for every case of ``batch``, one list per metric;
    a name without ``@N`` is cut at ``k``."""
    return [column.tolist() for column in batch_arrays(batch, wanted, k)]


def batch_arrays(batch: RetrievalBatch, wanted: Sequence[str], k: int) -> list[np.ndarray]:
    """``batch_values`` as numpy arrays. A metric at a cut-off is computed once."""
    computed: dict[tuple[str, int], np.ndarray] = {}
    columns = []
    for _name, base, cutoff in _split_names(tuple(wanted)):
        key = (base, cutoff or k)
        if key not in computed:
            computed[key] = _KERNELS[base](batch, key[1])
        columns.append(computed[key])
    return columns


# The reasons of a retrieval row, by the index ``ResultColumns.by_case`` reads.
_REASONS = (None, NO_RETRIEVAL, NO_EXPECTED_SOURCES)
_SCORED_CODE, _SKIPPED_CODE = STATUS_CODE[Status.SCORED], STATUS_CODE[Status.SKIPPED]


def retrieval_column_results(
    dataset: pa.Table,
    outputs: pa.Table,
    settings: Params,
    wanted: Sequence[str] = RETRIEVAL_METRICS,
) -> ResultColumns:
    """``retrieval_batch_results`` from the store's columns: ``dataset`` and ``outputs``
    hold the same cases that did not fail, row for row (``id``,
    ``expected_source_ids``, ``expected_source_grades_json``; ``retrieved``). The same
    rows, each case's ``wanted`` in order, case after case, without a Python object
    or loop per case (``retrieval_batch_columns``)."""
    if settings.source_match not in SOURCE_MATCHES:
        raise bad_source_match(settings.source_match)
    case_ids = dataset.column("id").combine_chunks()
    if not case_ids.equals(outputs.column("case_id").combine_chunks()):
        raise ValueError("dataset and outputs rows must hold the same cases in the same order")
    retrieved = outputs.column("retrieved").combine_chunks()
    expected = dataset.column("expected_source_ids").combine_chunks()
    no_retrieval = retrieved.is_null().to_numpy(zero_copy_only=False)
    no_expected = (
        expected.value_lengths().fill_null(0).to_numpy(zero_copy_only=False) == 0
    ) & ~no_retrieval
    reason = np.where(no_retrieval, 1, np.where(no_expected, 2, 0))
    scored = reason == 0
    width = len(wanted)
    values = np.zeros((len(case_ids), width))
    if scored.any():
        ranked = ranked_ids(retrieved, settings.source_match)
        judged = judged_ids(
            expected, dataset.column("expected_source_grades_json").combine_chunks()
        )
        if not scored.all():
            # Only the ids are copied, never the chunks' text.
            ranked, judged = ranked.select(scored), judged.select(scored)
        batch = batch_from_lists(ranked, judged)
        values[scored] = np.column_stack(batch_arrays(batch, wanted, settings.k))
    status = np.where(reason == 0, _SCORED_CODE, _SKIPPED_CODE)
    return ResultColumns.by_case(
        case_ids,
        wanted,
        np.repeat(status[:, None], width, axis=1),
        values,
        np.repeat(reason[:, None], width, axis=1),
        _REASONS,
    )


# One pass over a case's ranking scores every selected retrieval metric (the four
# binary ones at run.k share one loop); ``@N`` variants are scored by the same call.
# A run scores many cases at once through ``score_batch``.
RETRIEVAL_GROUP = MetricGroup(
    "retrieval",
    SCORED_RETRIEVAL,
    score=retrieval_results,
    score_batch=retrieval_batch_results,
    score_columns=retrieval_column_results,
    column_reads=(
        "id",
        "expected_source_ids",
        "expected_source_grades_json",
        "case_id",
        "retrieved.id",
        "retrieved.metadata_json",
    ),
)
_NEEDS = ("retrieval", "expected_source_ids")


def _declare(
    name: str,
    description: str,
    kernel: Callable[[RetrievalBatch, int], np.ndarray],
    *,
    cutoff: bool,
    default: bool = True,
) -> MetricSpec:
    return MetricSpec(
        name,
        True,
        "never",
        _NEEDS,
        description,
        group=RETRIEVAL_GROUP,
        cutoff="k" if cutoff else None,
        default=default,
        kernel=kernel,
        reads=frozenset({"retrieved"}),
    )


# The trec_eval measures of CONTRACT section 19 are opt-in (default=False): a run that
# names nothing reports exactly what it always did.
# Where these metrics come in the registry, the summary and the report (metrics.registry).
REPORT_ORDER = 10
METRICS: tuple[MetricSpec, ...] = (
    _declare(PRECISION_AT_K, "hits in the top k / k", batch_kernels.precision_at_k, cutoff=True),
    _declare(
        RECALL_AT_K,
        "hits in the top k / number of expected sources",
        batch_kernels.recall_at_k,
        cutoff=True,
    ),
    _declare(MRR, "1 / rank of the first expected source", batch_kernels.mrr, cutoff=False),
    _declare(
        NDCG_AT_K,
        "nDCG over the top k, the grades as gains (binary on a list of ids)",
        batch_kernels.ndcg_at_k,
        cutoff=True,
    ),
    _declare(
        MAP,
        "average precision over the whole ranking (trec_eval map)",
        batch_kernels.average_precision,
        cutoff=False,
        default=False,
    ),
    _declare(
        R_PRECISION,
        "relevant ids in the top R / R, R the relevant ids (trec_eval Rprec)",
        batch_kernels.r_precision,
        cutoff=False,
        default=False,
    ),
    _declare(
        HIT_RATE_AT_K,
        "1 when a relevant id is in the top k (trec_eval success_k)",
        batch_kernels.hit_rate_at_k,
        cutoff=True,
        default=False,
    ),
    _declare(
        BPREF,
        "relevant ids ranked above judged non-relevant ones (trec_eval bpref)",
        batch_kernels.bpref,
        cutoff=False,
        default=False,
    ),
    _declare(
        JUDGED_AT_K,
        "ids in the top k that carry a grade / k (ir_measures Judged@k)",
        batch_kernels.judged_at_k,
        cutoff=True,
        default=False,
    ),
)

# Each metric's batch kernel, by name, from its declaration.
_KERNELS: dict[str, Callable[[RetrievalBatch, int], np.ndarray]] = {
    spec.name: spec.kernel for spec in METRICS
}
