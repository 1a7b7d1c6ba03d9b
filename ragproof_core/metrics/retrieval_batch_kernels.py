"""The nine retrieval metrics over a whole batch of cases, one numpy function each.

Each kernel takes a ``RetrievalBatch`` (``retrieval_batch``) and the cut-off ``k``
and returns one float64 per case, equal to the last bit to its per-case kernel
in ``retrieval`` and ``trec_measures``: the same operations on the same
numbers in the same order. Sums go through ``np.bincount`` with weights, which
adds each case's terms one by one in rank order from 0.0, as the per-case
loops do; divisions of integers are correctly rounded in both; logarithms come
from a table of ``math.log2`` values, never numpy's own ``log2``. Kernels
without a cut-off accept ``k`` and ignore it, as their per-case twins do.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ragproof_core.metrics.retrieval_batch import (
    RELEVANT,
    UNJUDGED,
    RetrievalBatch,
    rank_within_case,
)


@lru_cache(maxsize=8)
def _log2_table(size: int) -> np.ndarray:
    table = np.array([math.log2(position + 2) for position in range(size)])
    table.flags.writeable = False
    return table


def log2_of_rank(positions: np.ndarray) -> np.ndarray:
    """``math.log2(position + 2)`` for each 0-based position (nDCG's discount)."""
    largest = int(positions.max()) + 1 if len(positions) else 1
    # Powers of two, so a handful of tables serve every batch.
    return _log2_table(1 << max(largest - 1, 255).bit_length())[positions]


def per_case_sum(batch: RetrievalBatch, where: np.ndarray, weights=None) -> np.ndarray:
    """Per case, the sum of ``weights`` (or the count) over the entries ``where`` holds."""
    return np.bincount(batch.case[where], weights=weights, minlength=batch.cases)


def hits_at_k(batch: RetrievalBatch, k: int) -> np.ndarray:
    """How many of each case's first ``k`` ranked ids are relevant."""
    return per_case_sum(batch, (batch.grade >= RELEVANT) & (batch.rank < k))


def precision_at_k(batch: RetrievalBatch, k: int) -> np.ndarray:
    return hits_at_k(batch, k) / k


def recall_at_k(batch: RetrievalBatch, k: int) -> np.ndarray:
    return hits_at_k(batch, k) / batch.relevant


def first_in_case(case: np.ndarray) -> np.ndarray:
    """True at each case's first entry of a list sorted by case."""
    first = np.ones(len(case), dtype=bool)
    first[1:] = case[1:] != case[:-1]
    return first


def mrr(batch: RetrievalBatch, k: int = 0) -> np.ndarray:
    """1 / rank of each case's first relevant id over its whole ranking, else 0.0."""
    relevant = batch.grade >= RELEVANT
    case, position = batch.case[relevant], batch.rank[relevant]
    first = first_in_case(case)
    out = np.zeros(batch.cases)
    out[case[first]] = 1.0 / (position[first] + 1)
    return out


def ideal_ranking(batch: RetrievalBatch) -> tuple[np.ndarray, np.ndarray]:
    """Each case's judged grades sorted descending, case after case: the case and grade
    of each. Judgments all of one grade (a list of ids: all 1) are that already, as
    ``judged_case`` is sorted, and need no sort."""
    grade = batch.judged_grade
    if not len(grade) or grade.min() == grade.max():
        return batch.judged_case, grade
    order = np.lexsort((-grade, batch.judged_case))
    return batch.judged_case[order], grade[order]


def ndcg_at_k(batch: RetrievalBatch, k: int) -> np.ndarray:
    """trec_eval ``ndcg_cut_k``, the grades as gains (grade 1 each on a list of ids)."""
    gaining = (batch.grade >= RELEVANT) & (batch.rank < k)
    position = batch.rank[gaining]
    dcg = np.bincount(
        batch.case[gaining],
        weights=batch.grade[gaining] / log2_of_rank(position),
        minlength=batch.cases,
    )
    ideal_case, ideal_grade = ideal_ranking(batch)
    ideal_position = rank_within_case(ideal_case, batch.cases)
    counted = (ideal_grade >= RELEVANT) & (ideal_position < k)
    ideal = np.bincount(
        ideal_case[counted],
        weights=ideal_grade[counted] / log2_of_rank(ideal_position[counted]),
        minlength=batch.cases,
    )
    out = np.zeros(batch.cases)
    scored = dcg != 0.0
    out[scored] = dcg[scored] / ideal[scored]
    return out


def relevant_hits_so_far(batch: RetrievalBatch, relevant: np.ndarray) -> np.ndarray:
    """At each relevant entry, how many relevant ids its case ranks up to and including it."""
    first = first_in_case(batch.case[relevant])
    index = np.arange(len(first), dtype=np.int64)
    return index - np.maximum.accumulate(np.where(first, index, 0)) + 1


def average_precision(batch: RetrievalBatch, k: int = 0) -> np.ndarray:
    """trec_eval ``map``: precision at each relevant retrieved id, summed, over R."""
    relevant = batch.grade >= RELEVANT
    hits = relevant_hits_so_far(batch, relevant)
    total = per_case_sum(batch, relevant, hits / (batch.rank[relevant] + 1))
    return total / batch.relevant


def r_precision(batch: RetrievalBatch, k: int = 0) -> np.ndarray:
    """trec_eval ``Rprec``: relevant ids among the first R ranks / R."""
    within = batch.rank < batch.relevant[batch.case]
    return per_case_sum(batch, (batch.grade >= RELEVANT) & within) / batch.relevant


def hit_rate_at_k(batch: RetrievalBatch, k: int) -> np.ndarray:
    """trec_eval ``success_k``: 1.0 when a relevant id is in the top k, else 0.0."""
    return (hits_at_k(batch, k) > 0).astype(np.float64)


def bpref(batch: RetrievalBatch, k: int = 0) -> np.ndarray:
    """trec_eval ``bpref``, unjudged ids passed over: each relevant retrieved id scores
    1 - min(n, R) / min(N, R), n the judged non-relevant ids ranked above it and N all
    the case's judged non-relevant ids; the sum over R."""
    judged = batch.grade != UNJUDGED
    case, grade = batch.case[judged], batch.grade[judged]
    nonrelevant = (grade < RELEVANT).astype(np.int64)
    # Judged non-relevant ids above each entry: a running count restarted per case.
    running = np.cumsum(nonrelevant) - nonrelevant
    first = first_in_case(case)
    above = running - np.maximum.accumulate(np.where(first, running, 0))
    relevant = grade >= RELEVANT
    case, above = case[relevant], above[relevant]
    r = batch.relevant[case]
    penalised = above > 0
    terms = np.ones(len(case))
    all_nonrelevant = (batch.judged - batch.relevant)[case[penalised]]
    terms[penalised] = 1.0 - (
        np.minimum(above[penalised], r[penalised]) / np.minimum(all_nonrelevant, r[penalised])
    )
    return np.bincount(case, weights=terms, minlength=batch.cases) / batch.relevant


def judged_at_k(batch: RetrievalBatch, k: int) -> np.ndarray:
    """ir_measures ``Judged@k``: ids among the top k that carry a grade (0 included) / k."""
    return per_case_sum(batch, (batch.grade != UNJUDGED) & (batch.rank < k)) / k
