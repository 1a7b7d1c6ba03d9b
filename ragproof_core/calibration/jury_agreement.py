"""Inter-judge agreement of a jury: Krippendorff's alpha per metric.

Each model's score for a case is mapped to the calibration bands 0, 0.5, 1
(``calibrate.band``) and alpha is computed with the interval distance
``(a - b)^2`` over those three equally spaced values (on three equally spaced
bands the interval metric keeps "one band apart" at a quarter of "two bands
apart", which is what a half-credit verdict means). Units are cases, coders are
the jury's models; a model that gave no score for a case (judge error, not
applicable) is missing data, and a case with fewer than two scores is not
pairable and is left out, as Krippendorff's definition does.

    alpha = 1 - D_o / D_e
    D_o = (1 / n) * sum over units u of (1 / (m_u - 1)) * sum over ordered pairs i != j in u of d
    D_e = (1 / (n (n - 1))) * sum over ordered pairs i != j of all n pairable values of d

alpha is 1 for perfect agreement, about 0 for agreement at chance, negative
below it; it is undefined (None) when there are no pairable values or every
pairable value is the same (D_e = 0: nothing to disagree about).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

from ragproof_core.calibration.agreement import band
from ragproof_core.model import MetricResult

LEVEL = "interval"


def _squared_sum(values: Sequence[float]) -> float:
    """Sum over ordered pairs i != j of (v_i - v_j)^2, in O(n): 2n*sum(v^2) - 2*sum(v)^2."""
    n = len(values)
    total = math.fsum(values)
    return 2 * n * math.fsum(v * v for v in values) - 2 * total * total


def krippendorff_alpha(units: Iterable[Sequence[float | None]]) -> float | None:
    """Interval alpha over ``units`` (one list of coders' values per unit; None = missing)."""
    pairable = [[v for v in unit if v is not None] for unit in units]
    pairable = [unit for unit in pairable if len(unit) >= 2]
    values = [v for unit in pairable for v in unit]
    n = len(values)
    if n < 2:
        return None
    observed = math.fsum(_squared_sum(unit) / (len(unit) - 1) for unit in pairable) / n
    expected = _squared_sum(values) / (n * (n - 1))
    if expected <= 1e-12:
        return None
    return 1.0 - observed / expected


def jury_scores(raw_json: str | None) -> dict[str, float | None] | None:
    """The per-model scores a jury result stores (``jury.SCORES_KEY``), else None."""
    if not raw_json or '"scores"' not in raw_json:
        return None
    data = json.loads(raw_json)
    if not isinstance(data, dict) or "jury" not in data or "scores" not in data:
        return None
    return data["scores"]


def jury_agreement(results: Iterable[MetricResult]) -> dict[str, dict[str, Any]]:
    """Per judged metric: alpha over the banded per-model scores, and how many cases fed it.

    ``{metric: {"alpha": float | None, "level": "interval", "cases": units with 2+ scores,
    "models": [...]}}``; metrics without jury results are absent.
    """
    units: dict[str, list[list[float | None]]] = {}
    models: dict[str, list[str]] = {}
    for result in results:
        scores = jury_scores(result.judge_raw_json)
        if scores is None:
            continue
        names = models.setdefault(result.metric, list(scores))
        units.setdefault(result.metric, []).append(
            [None if scores.get(m) is None else band(scores[m]) for m in names]
        )
    out: dict[str, dict[str, Any]] = {}
    for metric, metric_units in units.items():
        out[metric] = {
            "alpha": krippendorff_alpha(metric_units),
            "level": LEVEL,
            "cases": sum(1 for u in metric_units if sum(v is not None for v in u) >= 2),
            "models": models[metric],
        }
    return out
