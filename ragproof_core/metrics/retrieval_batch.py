"""Many cases' retrieval inputs as flat arrays: the columnar form a run scores in batches.

``RetrievalBatch`` holds, case after case, what the retrieval metrics read of
each scored case: metrics.md's deduplicated ranking (each matched id at its
first rank) as the grade of each ranked id (``UNJUDGED`` when the case does
not judge it), and the grades the case judges (a list of ids is grade 1
each). The batch kernels (``retrieval_batch_kernels``) read nothing else, so a
whole batch is a handful of numpy operations instead of a loop per case.

``BatchBuilder`` fills one from each case's ranked ids and judgments; the only
per-case work is the deduplication and a dict lookup per ranked id, both done
in C (``dict.fromkeys`` and ``map``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat

import numpy as np

UNJUDGED = -1  # the grade of a retrieved id the case does not judge
RELEVANT = 1  # trec_eval's default relevance level, as trec_measures.RELEVANT


@dataclass(frozen=True, slots=True)
class RetrievalBatch:
    """Scored cases' deduplicated rankings with grades, and what each case judged.

    One entry per (case, distinct ranked id), sorted by case then rank:
    ``case`` its case's index, ``rank`` its 0-based rank in the deduplicated
    ranking, ``grade`` its grade (``UNJUDGED`` when the case does not judge it).
    Per case: ``relevant`` (R, ids with grade >= 1; at least 1, as a case
    without a relevant id is skipped before it gets here) and ``judged`` (judged
    ids). ``judged_case``/``judged_grade``: each judged id's case and grade, by case.
    """

    cases: int
    case: np.ndarray
    rank: np.ndarray
    grade: np.ndarray
    relevant: np.ndarray
    judged: np.ndarray
    judged_case: np.ndarray
    judged_grade: np.ndarray


def offsets(counts: Sequence[int]) -> np.ndarray:
    """``[0, c0, c0 + c1, ...]``: where each case's run of a flat list starts and ends."""
    bounds = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=bounds[1:])
    return bounds


def case_index(counts: Sequence[int]) -> np.ndarray:
    """The case of each entry of a flat list holding ``counts[i]`` entries of case i."""
    return np.repeat(np.arange(len(counts), dtype=np.int64), counts)


def rank_within_case(case: np.ndarray, cases: int) -> np.ndarray:
    """Each entry's 0-based position within its case's run (``case`` sorted)."""
    starts = offsets(np.bincount(case, minlength=cases))[:-1]
    return np.arange(len(case), dtype=np.int64) - starts[case]


class BatchBuilder:
    """Collects cases one by one (``add``) into one ``RetrievalBatch`` (``build``)."""

    __slots__ = ("_grades", "_ranked", "_judged", "_judged_counts")

    def __init__(self) -> None:
        self._grades: list[int] = []
        self._ranked: list[int] = []
        self._judged: list[int] = []
        self._judged_counts: list[int] = []

    def __len__(self) -> int:
        return len(self._ranked)

    def add(self, ids: Iterable[str], judgments: Mapping[str, int]) -> None:
        """One case: its matched ids as ranked (repeats included: metrics.md keeps each
        id's first rank) and every id it judges with its grade."""
        ranked = dict.fromkeys(ids)
        # map() keeps the lookups in C: no Python frame per ranked id.
        self._grades.extend(map(judgments.get, ranked, repeat(UNJUDGED)))
        self._ranked.append(len(ranked))
        self._judged.extend(judgments.values())
        self._judged_counts.append(len(judgments))

    def build(self) -> RetrievalBatch:
        cases = len(self._ranked)
        case = case_index(self._ranked)
        judged_case = case_index(self._judged_counts)
        judged_grade = np.array(self._judged, dtype=np.int64)
        return RetrievalBatch(
            cases=cases,
            case=case,
            rank=rank_within_case(case, cases),
            grade=np.array(self._grades, dtype=np.int64),
            relevant=np.bincount(judged_case, weights=judged_grade >= RELEVANT, minlength=cases),
            judged=np.bincount(judged_case, minlength=cases).astype(np.float64),
            judged_case=judged_case,
            judged_grade=judged_grade,
        )


def batch_of(
    rankings: Sequence[Iterable[str]], judgments: Sequence[Mapping[str, int] | Sequence[str]]
) -> RetrievalBatch:
    """A batch from one ranked id list and one set of judgments per case: a mapping of
    id to grade, or a sequence of relevant ids (grade 1 each)."""
    builder = BatchBuilder()
    for ids, judged in zip(rankings, judgments, strict=True):
        builder.add(ids, judged if isinstance(judged, Mapping) else dict.fromkeys(judged, 1))
    return builder.build()
