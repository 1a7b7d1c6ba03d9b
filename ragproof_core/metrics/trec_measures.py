"""The trec_eval measures on graded judgments (CONTRACT section 19, metrics.md).

Each measure is one small pure function over an already deduplicated ranked id
list and ``grades``, the case's judged ids with their integer grades (0 judged
non-relevant, >= 1 relevant; an id absent from ``grades`` is unjudged). Each
equals, per query, the trec_eval measure named in its docstring at trec_eval's
default relevance level 1, and sums in trec_eval's order so the results are
equal to the last bit, not just close.

``k`` is the cut-off for the measures that have one; the others accept it so
every kernel shares one signature, and ignore it as trec_eval does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

RELEVANT = 1  # trec_eval's default relevance_level: grades >= 1 are relevant


def relevant_count(grades: Mapping[str, int]) -> int:
    """R, trec_eval's ``num_rel``: how many judged ids are relevant."""
    return sum(1 for grade in grades.values() if grade >= RELEVANT)


def graded_ndcg_at_k(ranked: Sequence[str], grades: Mapping[str, int], k: int) -> float:
    """trec_eval ``ndcg_cut_k``: the grades are the gains.

    DCG = sum of grade / log2(i + 1) over the first k ranks i; IDCG the same sum
    over the grades sorted descending, cut at k; 0.0 when nothing relevant was
    retrieved in the top k.
    """
    dcg = 0.0
    for position, doc in enumerate(ranked[:k]):
        grade = grades.get(doc, 0)
        if grade > 0:
            dcg += grade / math.log2(position + 2)
    if dcg == 0.0:
        return 0.0
    ideal = 0.0
    for position, grade in enumerate(sorted(grades.values(), reverse=True)[:k]):
        if grade > 0:
            ideal += grade / math.log2(position + 2)
    return dcg / ideal


def average_precision(ranked: Sequence[str], grades: Mapping[str, int], k: int = 0) -> float:
    """trec_eval ``map`` for one query: the precision at each relevant retrieved id,
    summed and divided by R (relevant ids never retrieved add 0)."""
    hits = 0
    total = 0.0
    for position, doc in enumerate(ranked):
        if grades.get(doc, 0) >= RELEVANT:
            hits += 1
            total += hits / (position + 1)
    if not hits:
        return 0.0
    return total / relevant_count(grades)


def r_precision(ranked: Sequence[str], grades: Mapping[str, int], k: int = 0) -> float:
    """trec_eval ``Rprec``: relevant ids among the first R ranks / R."""
    r = relevant_count(grades)
    if not r:
        return 0.0
    hits = sum(1 for doc in ranked[:r] if grades.get(doc, 0) >= RELEVANT)
    return hits / r


def hit_rate_at_k(ranked: Sequence[str], grades: Mapping[str, int], k: int) -> float:
    """trec_eval ``success_k``: 1.0 when a relevant id is in the top k, else 0.0."""
    return 1.0 if any(grades.get(doc, 0) >= RELEVANT for doc in ranked[:k]) else 0.0


def bpref(ranked: Sequence[str], grades: Mapping[str, int], k: int = 0) -> float:
    """trec_eval ``bpref``: unjudged ids are passed over; each relevant retrieved id
    scores 1 - min(n, R) / min(N, R), n the judged non-relevant ids ranked above
    it and N all judged non-relevant ids (grade 0); the sum is divided by R."""
    r = relevant_count(grades)
    if not r:
        return 0.0
    judged_nonrelevant = len(grades) - r
    nonrelevant_above = 0
    total = 0.0
    for doc in ranked:
        grade = grades.get(doc)
        if grade is None:
            continue
        if grade >= RELEVANT:
            if nonrelevant_above:
                total += 1.0 - min(nonrelevant_above, r) / min(judged_nonrelevant, r)
            else:
                total += 1.0
        else:
            nonrelevant_above += 1
    return total / r


def judged_at_k(ranked: Sequence[str], grades: Mapping[str, int], k: int) -> float:
    """ir_measures ``Judged@k``: ids among the top k that carry a grade (0 included) / k."""
    return sum(1 for doc in ranked[:k] if doc in grades) / k
