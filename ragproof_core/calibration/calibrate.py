"""``calibrate``: how often the configured judge (or jury) agrees with human scores.

The fixtures are scored and reported by ``calibration.report`` (which says how
agreement is measured); a jury is calibrated model by model and as a jury by
``calibration.jury_calibration``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ragproof_core.calibration.fixture_files import Fixture, load_fixtures
from ragproof_core.calibration.jury_calibration import JuryCalibration, calibrate_jury
from ragproof_core.calibration.report import (
    EXACT_THRESHOLD,
    SCORERS,
    WITHIN_THRESHOLD,
    CalibrationReport,
    build_report,
    calibration_scorer,
    score_fixtures,
)
from ragproof_core.judge.types import Judge
from ragproof_core.metrics.registry import MetricSpec


async def calibrate(
    judge: Judge,
    fixtures: Sequence[Fixture] | Path | str | None = None,
    *,
    exact_threshold: float = EXACT_THRESHOLD,
    within_threshold: float = WITHIN_THRESHOLD,
    extra: Sequence[tuple[MetricSpec, Sequence[Fixture]]] = (),
) -> CalibrationReport | JuryCalibration:
    """Score every fixture with ``judge`` and report agreement per prompt.

    ``fixtures``: None for the shipped fixtures, a directory, or loaded fixtures.
    ``extra``: a config's rubric metrics with their own fixtures (prompt = the
    metric's name), reported after the shipped prompts.
    ``BudgetExceeded`` propagates once every started call has finished.
    """
    if judge is None:
        raise ValueError("calibration needs a judge: set RAGPROOF_JUDGE_MODEL")
    if fixtures is None or isinstance(fixtures, Path | str):
        fixtures = load_fixtures(fixtures)
    scorers = {**SCORERS, **{m.name: calibration_scorer(m) for m, _ in extra}}
    fixtures = [*fixtures, *(f for _, own in extra for f in own)]
    unknown = sorted({f.prompt for f in fixtures} - set(scorers))
    if unknown:
        raise ValueError(f"no calibration scorer for prompt(s): {', '.join(unknown)}")
    if getattr(judge, "members", None):
        # A jury: each model's agreement and the jury's (calibration.jury_calibration).
        return await calibrate_jury(judge, fixtures, exact_threshold, within_threshold, scorers)
    results = await score_fixtures(judge, fixtures, scorers)
    return build_report(judge.model, fixtures, results, exact_threshold, within_threshold)
