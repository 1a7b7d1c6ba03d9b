"""Judge calibration: how often the configured judge agrees with human scores.

Each human-scored fixture (``fixtures_check``) is scored by the *same metric
code the pipeline runs* with the *same judge object*, so calibration measures
exactly what a run would report, and its judge calls are cached and budgeted
like any other. Both scores are mapped to three bands (0, 0.5, 1):

- exact agreement: same band;
- within-band agreement: bands at most one step (0.5) apart.

A fixture the judge could not score (judge_error, or a skip / not_applicable
the human did not expect) counts as a disagreement on both measures, and
judge errors are counted separately so a flaky judge is visible as such.

``critique_qa`` (the gate of ``ragproof generate qa``) is scored per flag
instead: exact when the judge agrees with the human on all three flags,
within band when on at least two (``ragproof_core.calibration.critique``).

A prompt passes when both shares meet their thresholds (defaults 70% exact,
90% within band); calibration passes when every prompt does.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ragproof_core.calibration.fixtures_check import Fixture, load_fixtures
from ragproof_core.calibration.jury_calibration import calibrate_jury
from ragproof_core.calibration.report import (
    EXACT_THRESHOLD,
    SCORERS,
    WITHIN_THRESHOLD,
    CalibrationReport,
    build_report,
    score_fixtures,
)
from ragproof_core.judge import Judge


async def calibrate(
    judge: Judge,
    fixtures: Sequence[Fixture] | Path | str | None = None,
    *,
    exact_threshold: float = EXACT_THRESHOLD,
    within_threshold: float = WITHIN_THRESHOLD,
) -> CalibrationReport:
    """Score every fixture with ``judge`` and report agreement per prompt.

    ``fixtures``: None for the shipped fixtures, a directory, or loaded fixtures.
    ``BudgetExceeded`` propagates once every started call has finished.
    """
    if judge is None:
        raise ValueError("calibration needs a judge: set RAGPROOF_JUDGE_MODEL")
    if fixtures is None or isinstance(fixtures, Path | str):
        fixtures = load_fixtures(fixtures)
    unknown = sorted({f.prompt for f in fixtures} - set(SCORERS))
    if unknown:
        raise ValueError(f"no calibration scorer for prompt(s): {', '.join(unknown)}")
    if getattr(judge, "members", None):
        # A jury: each model's agreement and the jury's (calibration.jury_calibration).
        return await calibrate_jury(judge, fixtures, exact_threshold, within_threshold)
    results = await score_fixtures(judge, fixtures)
    return build_report(judge.model, fixtures, results, exact_threshold, within_threshold)
