# What the other layers use; inside this package, modules import each other directly.
from ragproof_core.compare.comparison import (
    BETTER,
    WORSE,
    Comparison,
    MixedJudgesError,
    MixedSettingsError,
    RunSide,
    compare_runs,
)
from ragproof_core.compare.correction import CORRECTIONS, HOLM
from ragproof_core.compare.gate import describe, regressions
from ragproof_core.compare.plan import plan_run

__all__ = [
    "BETTER",
    "CORRECTIONS",
    "Comparison",
    "HOLM",
    "MixedJudgesError",
    "MixedSettingsError",
    "RunSide",
    "WORSE",
    "compare_runs",
    "describe",
    "plan_run",
    "regressions",
]
