"""How far a judge agrees with itself: Krippendorff's alpha over its repeats (CONTRACT
section 27, ``run --judge-repeats M``).

A result scored with judge repeats stores each repeat's score
(``judge.repeats``: ``{"repeats": [...], "scores": [s_1, ..., s_M]}``). Per metric,
units are the results so stored (a case's trial), coders are the repeats, values
the scores as they are (interval distance ``(a - b)^2``: ``krippendorff.py``); a
repeat with no score (its reply failed) is missing data, and a unit with fewer
than two scores is not pairable, as Krippendorff's definition has it. alpha is
None when it is undefined: no pairable unit, or every pairable score the same
(nothing varies, so there is nothing to agree on).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ragproof_core.calibration.krippendorff import krippendorff_alpha
from ragproof_core.judge import REPEATS_KEY
from ragproof_core.metrics.aggregate import MetricSummary
from ragproof_core.store import RunStore
from ragproof_core.store.file_sql import file_reader

LEVEL = "interval"

# The rows a judge's repeats scored, with their repeats' scores (JSON nulls kept).
_REPEATED = f"""
SELECT metric, CAST(json_extract(judge_raw_json, '$.scores') AS DOUBLE[]) AS scores
FROM read_parquet($files, union_by_name = true)
WHERE judge_raw_json LIKE '{{"{REPEATS_KEY}": [%'
ORDER BY metric, case_id
"""


@dataclass(frozen=True, slots=True)
class SelfAgreement:
    """One metric's judge self-agreement: alpha (None when undefined) over ``units``
    results whose judge requests were repeated."""

    alpha: float | None
    units: int


def self_agreement(units: Iterable[Sequence[float | None]]) -> SelfAgreement:
    """alpha (interval) over ``units``: each result's repeat scores (None: no score)."""
    listed = [list(unit) for unit in units]
    return SelfAgreement(krippendorff_alpha(listed, LEVEL), len(listed))


def stored_self_agreement(store: RunStore, run_id: str) -> dict[str, SelfAgreement]:
    """Each metric's judge self-agreement in a stored run (metrics without results
    scored through judge repeats are absent)."""
    by_metric: dict[str, list[list[float | None]]] = {}
    with file_reader(store.layout) as con:
        rows = con.execute(_REPEATED, {"files": store.case_result_files(run_id)}).fetchall()
    for metric, scores in rows:
        by_metric.setdefault(metric, []).append(list(scores))
    return {metric: self_agreement(units) for metric, units in by_metric.items()}


def with_self_agreement(
    summaries: Sequence[MetricSummary], agreement: dict[str, SelfAgreement]
) -> list[MetricSummary]:
    """The summaries of a run with judge repeats, each metric scored through them with
    its judge's self-agreement."""
    return [
        summary
        if summary.metric not in agreement
        else replace(
            summary,
            judge_repeated=agreement[summary.metric].units,
            judge_self_agreement=agreement[summary.metric].alpha,
        )
        for summary in summaries
    ]
