"""The system's own cost (CONTRACT section 18): ``system.latency_s``, ``system.tokens``
and ``system.cost_usd``, each lower is better.

They read what the pipeline reported about itself, never what a judge thinks:
a live adapter call's wall time (or a recording's ``latency_s``) and the answer's
``usage``. Where the pipeline reported nothing the case is skipped with a reason;
an unknown cost is never a cost of 0.

They are opt-in (``default=False``): a run scores them when it names them
(``--metrics system.latency_s,system.tokens,system.cost_usd``), so a run that
names nothing reports what it always did. The trace sensor names them.

Latency depends on how many calls were in flight (``run.concurrency``), which the
run record keeps beside it.
"""

from __future__ import annotations

from ragproof_core.metrics.spec import MetricSpec, case_only
from ragproof_core.model import Case, CaseOutput, MetricResult, scored, skipped

LATENCY = "system.latency_s"
TOKENS = "system.tokens"
COST = "system.cost_usd"

NO_LATENCY = "pipeline reported no latency"
NO_TOKENS = "pipeline reported no tokens"
NO_COST = "pipeline reported no cost"


def latency_s(case: Case, output: CaseOutput) -> MetricResult:
    """The seconds the pipeline took for the case."""
    if output.latency_s is None:
        return skipped(case.id, LATENCY, NO_LATENCY)
    return scored(case.id, LATENCY, output.latency_s)


def tokens(case: Case, output: CaseOutput) -> MetricResult:
    """Input plus output tokens the answer's ``usage`` reports."""
    usage = None if output.answer is None else output.answer.usage
    total = None if usage is None else usage.tokens
    if total is None:
        return skipped(case.id, TOKENS, NO_TOKENS)
    return scored(case.id, TOKENS, total)


def cost_usd(case: Case, output: CaseOutput) -> MetricResult:
    """The dollars the answer's ``usage`` reports."""
    usage = None if output.answer is None else output.answer.usage
    if usage is None or usage.cost_usd is None:
        return skipped(case.id, COST, NO_COST)
    return scored(case.id, COST, usage.cost_usd)


# Where these metrics come in the registry, the summary and the report (metrics.registry).
REPORT_ORDER = 70
METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        LATENCY,
        False,
        "never",
        ("latency",),
        "seconds the pipeline took for the case (live wall time or the recorded latency_s)",
        score=case_only(latency_s),
        default=False,
        reads=frozenset({"latency"}),
        bounded=False,
    ),
    MetricSpec(
        TOKENS,
        False,
        "never",
        ("usage tokens",),
        "input plus output tokens the pipeline reported (answer usage)",
        score=case_only(tokens),
        default=False,
        reads=frozenset({"usage"}),
        bounded=False,
    ),
    MetricSpec(
        COST,
        False,
        "never",
        ("usage cost",),
        "dollars the pipeline reported for the case (answer usage)",
        score=case_only(cost_usd),
        default=False,
        reads=frozenset({"usage"}),
        bounded=False,
    ),
)
