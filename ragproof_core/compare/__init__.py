"""Comparing two runs: paired statistics, power, the multiple-comparison correction,
the regression gate and the run plan. What the other layers use is exported here."""

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
from ragproof_core.compare.gate import (
    describe,
    regressions,
)
from ragproof_core.compare.plan import (
    plan_run,
)

__all__ = [
    "BETTER",
    "CORRECTIONS",
    "Comparison",
    "HOLM",
    "MixedJudgesError",
    "MixedSettingsError",
    "RunSide",
    "TAIL_NOTE",
    "WORSE",
    "compare_runs",
    "compare_stored_runs",
    "describe",
    "plan_run",
    "regressions",
]
