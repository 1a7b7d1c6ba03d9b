"""The registry finds the metric modules of a package itself: a new module of metrics
needs no edit elsewhere (docs/architecture.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ragproof_core.metrics import registry
from ragproof_core.model import Answer, Case, CaseOutput, Status

PACKAGE = Path(__file__).resolve().parents[2] / "fixtures" / "metric_package"


@pytest.fixture
def extra_metrics(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.syspath_prepend(str(PACKAGE))
    yield "extra_metrics"
    for name in [m for m in sys.modules if m == "extra_metrics" or m.startswith("extra_metrics.")]:
        del sys.modules[name]


def test_modules_with_metrics_are_found_in_report_order_and_helpers_left_out(extra_metrics):
    modules = registry.metric_modules(extra_metrics)
    # words has REPORT_ORDER 5; after has none (LAST); helper declares no METRICS.
    assert [m.__name__ for m in modules] == ["extra_metrics.words", "extra_metrics.after"]
    found = registry.Registry(tuple(s for m in modules for s in m.METRICS))
    assert found.names == ("extra.words", "extra.answered")
    case = Case(id="c1", question="q?")
    output = CaseOutput(case_id="c1", answer=Answer(text="three short words"))
    result = found.spec("extra.words").score(case, output, None)
    assert (result.status, result.value) == (Status.SCORED, 3.0)


def test_the_shipped_registry_is_every_metric_module_of_the_package():
    modules = registry.metric_modules()
    assert tuple(s for m in modules for s in m.METRICS) == registry.METRICS
    # The report order the summary, the docs table and the demo output follow.
    assert [m.__name__.rsplit(".", 1)[1] for m in modules][:10] == [
        "retrieval",
        "context_relevance",
        "hops",
        "citation",
        "generation",
        "diagnostics",
        "echo",
        "robustness",
        "agent",
        "system",
    ]
    # Modules built on the registry are never imported as metric modules.
    assert not {m.__name__.rsplit(".", 1)[1] for m in modules} & registry.BUILT_ON_REGISTRY
