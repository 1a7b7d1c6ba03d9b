"""What a person picks from when labelling a metric: its three bands, named; a rubric
metric's own bands (two to five, CONTRACT section 21), scored as its judge scores them.

A score's band (``agreement.band``) is the nearest of 0, 0.5 and 1, ties
upward (CONTRACT section 22). Probes count a verdict as changed when its band
changes; the labelling sample is stratified by band.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragproof_core.calibration.agreement import BANDS
from ragproof_core.metrics.custom import band_scores
from ragproof_core.metrics.generation import (
    ANSWER_RELEVANCE,
    COMPLETENESS,
    COMPLETENESS_SCORES,
    RELEVANCE_SCORES,
)


@dataclass(frozen=True, slots=True)
class Band:
    """One choice of the labelling page: the score it stores and its name."""

    score: float
    name: str
    key: str  # the keyboard shortcut


# Metrics whose judge answers with a named verdict show the judge's own words.
_NAMED: dict[str, dict[str, float]] = {
    ANSWER_RELEVANCE: RELEVANCE_SCORES,
    COMPLETENESS: COMPLETENESS_SCORES,
}
_GENERIC = {0.0: "no", 0.5: "partly", 1.0: "yes"}
_KEYS = {0.0: "1", 0.5: "2", 1.0: "3"}


def metric_bands(metric: str, rubric_bands: Sequence[str] = ()) -> tuple[Band, ...]:
    """The bands a person scores ``metric`` in, worst first, with keys 1, 2, ...;
    ``rubric_bands``: a rubric metric's own, each scored as its judge's verdict is."""
    if rubric_bands:
        scores = band_scores(rubric_bands)
        return tuple(Band(scores[name], name, str(i)) for i, name in enumerate(rubric_bands, 1))
    named = {score: name for name, score in _NAMED.get(metric, {}).items()}
    return tuple(Band(score, named.get(score, _GENERIC[score]), _KEYS[score]) for score in BANDS)
