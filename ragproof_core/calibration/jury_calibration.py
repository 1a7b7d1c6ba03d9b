"""Calibration of a jury: each model's agreement with the human scores, and the jury's.

Every model scores every fixture once (through the pipeline's own metric code,
as ``calibrate`` does for one judge); the jury's result for a fixture is those
results combined exactly as a run combines them (``jury.combine``), so the
jury's agreement is the agreement a run's jury scores would have. No fixture
is asked twice of a model.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragproof_core.calibration.fixture_files import Fixture
from ragproof_core.calibration.report import (
    SCORERS,
    CalibrationReport,
    build_report,
    score_fixtures,
)
from ragproof_core.judge.jury import JuryJudge, combine, gather_all
from ragproof_core.model import MetricResult


@dataclass(frozen=True, slots=True)
class JuryCalibration:
    """The jury's report (what passes or fails) and one report per model."""

    jury: CalibrationReport
    models: dict[str, CalibrationReport]

    @property
    def passed(self) -> bool:
        return self.jury.passed

    def to_dict(self) -> dict[str, Any]:
        return {**self.jury.to_dict(), "models": {m: r.to_dict() for m, r in self.models.items()}}

    def render_table(self) -> str:
        """Each model's table (for reading), then the jury's, which decides pass or fail."""
        parts = [report.render_table().rsplit("\n\n", 1)[0] for report in self.models.values()]
        parts.append(self.jury.render_table().replace("Judge calibration:", "Jury calibration:", 1))
        return "\n\n".join(parts)


async def calibrate_jury(
    jury: JuryJudge,
    fixtures: Sequence[Fixture],
    exact_threshold: float,
    within_threshold: float,
    scorers: Mapping[str, Callable[..., Awaitable[MetricResult]]] = SCORERS,
) -> JuryCalibration:
    """``scorers``: each fixture prompt's metric, a config's rubric metrics included."""
    per_model = await gather_all(
        score_fixtures(member, fixtures, scorers) for member in jury.members
    )
    combined = [
        combine([results[i] for results in per_model], jury.models) for i in range(len(fixtures))
    ]
    return JuryCalibration(
        jury=build_report(jury.model, fixtures, combined, exact_threshold, within_threshold),
        models={
            model: build_report(model, fixtures, results, exact_threshold, within_threshold)
            for model, results in zip(jury.models, per_model, strict=True)
        },
    )
