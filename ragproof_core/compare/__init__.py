"""Comparing two runs: paired statistics, power, the multiple-comparison correction,
the regression gate, the floors of a run's gate and the run plan. What the other
layers use is exported here."""

from ragproof_core.compare.comparison import (
    BETTER,
    TAIL_NOTE,
    WORSE,
    Comparison,
    MixedJudgesError,
    MixedSettingsError,
    RunSide,
    compare_runs,
    compare_stored_runs,
)
from ragproof_core.compare.correction import (
    CORRECTIONS,
    HOLM,
)
from ragproof_core.compare.floors import (
    FloorResult,
    NoFloors,
    broken,
    check_floors,
    floors_for,
    required_floors,
)
from ragproof_core.compare.gate import (
    describe,
    regressions,
)
from ragproof_core.compare.plan import (
    plan_run,
)
from ragproof_core.compare.stored_trials import (
    stored_case_trials,
    stored_trial_statistics,
)
from ragproof_core.compare.trials import (
    CaseTrials,
    TrialStatistics,
    trial_statistics,
    with_trial_statistics,
)

__all__ = [
    "BETTER",
    "CaseTrials",
    "TrialStatistics",
    "CORRECTIONS",
    "Comparison",
    "FloorResult",
    "NoFloors",
    "HOLM",
    "MixedJudgesError",
    "MixedSettingsError",
    "RunSide",
    "TAIL_NOTE",
    "WORSE",
    "broken",
    "check_floors",
    "compare_runs",
    "compare_stored_runs",
    "describe",
    "floors_for",
    "plan_run",
    "regressions",
    "required_floors",
    "stored_case_trials",
    "stored_trial_statistics",
    "trial_statistics",
    "with_trial_statistics",
]
