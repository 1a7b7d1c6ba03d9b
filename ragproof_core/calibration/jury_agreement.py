"""Inter-judge agreement of a jury: Krippendorff's alpha per metric.

Each model's score for a case is mapped to the calibration bands 0, 0.5, 1
(``agreement.band``) and alpha (``krippendorff.py``) is computed with the interval distance
``(a - b)^2`` over those three equally spaced values (on three equally spaced
bands the interval metric keeps "one band apart" at a quarter of "two bands
apart", which is what a half-credit verdict means). Units are cases, coders are
the jury's models; a model that gave no score for a case (judge error, not
applicable) is missing data, and a case with fewer than two scores is not
pairable and is left out, as Krippendorff's definition does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ragproof_core.calibration.agreement import band
from ragproof_core.calibration.krippendorff import krippendorff_alpha
from ragproof_core.model import MetricResult

LEVEL = "interval"


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
            "alpha": krippendorff_alpha(metric_units, LEVEL),
            "level": LEVEL,
            "cases": sum(1 for u in metric_units if sum(v is not None for v in u) >= 2),
            "models": models[metric],
        }
    return out
