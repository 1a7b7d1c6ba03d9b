"""ragproof from Python: evaluate a pipeline, read its results as DataFrames, compare
runs (CONTRACT section 26).

A run made here is the same Dagster run ``ragproof run`` makes, in the same store:
it is listed, shown, compared, reported and served like any other::

    import ragproof

    run = ragproof.evaluate("cases.jsonl", "mypkg.rag:Pipeline", config="ragproof.toml")
    run.summary          # one row per metric
    run.cases            # one row per case and metric
    ragproof.compare(baseline_id, run).regressions
    ragproof.resume(stopped_id)   # an interrupted or aborted run, continued in place

``ragproof_core`` stays the engine; this package re-exports nothing else. Its names
are imported when first used: the pytest plugin (``ragproof.pytest_plugin``), loaded
by every pytest session, imports none of pandas, Dagster or the store until a test
asks for a run.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragproof.comparison import Comparison, compare
    from ragproof.errors import BadInput
    from ragproof.evaluation import evaluate, resume
    from ragproof.results import Run, load_run

__all__ = ["BadInput", "Comparison", "Run", "compare", "evaluate", "load_run", "resume"]

# Each public name and the module defining it.
_DEFINED_IN = {
    "BadInput": "ragproof.errors",
    "Comparison": "ragproof.comparison",
    "Run": "ragproof.results",
    "compare": "ragproof.comparison",
    "evaluate": "ragproof.evaluation",
    "load_run": "ragproof.results",
    "resume": "ragproof.evaluation",
}


def __getattr__(name: str) -> Any:
    module = _DEFINED_IN.get(name)
    if module is None:
        raise AttributeError(f"module 'ragproof' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
