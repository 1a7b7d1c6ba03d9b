"""One evaluation: run the adapter over the cases and score every metric on each.

The adapter and the judge overlap: as soon as a case's output arrives its
deterministic metrics are scored and its judge questions start, bounded by the
judge's own concurrency, while the adapter keeps working on later cases. A
slow judge therefore never serialises a run, and a failing case never stops it.

This is the only evaluation path: the Dagster asset calls ``evaluate`` and the
command line drives that asset.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ragproof_core.adapters import run_adapter
from ragproof_core.config import RunSettings
from ragproof_core.gc_pause import collector_paused
from ragproof_core.judge import BudgetExceeded, Judge, attributed_to, run_judged, score_metric
from ragproof_core.metrics import (
    CONTEXT_METRICS,
    CONTEXT_RELEVANCE,
    JUDGE_METRICS,
    METRIC_NAMES,
    SCORED_RETRIEVAL,
    abstention,
    citation_validity,
    combined_results,
    context_metric_functions,
    context_planners,
    context_relevance_results,
    exact_match,
    injection_resistance,
    metric_order,
    overrefusal,
    retrieval_results,
    select_metrics,
    split_cutoff,
)
from ragproof_core.model import (
    Case,
    CaseOutput,
    MetricResult,
    case_error,
    skipped,
)

COMPLETED = "completed"
ABORTED_BUDGET = "aborted:budget"
BUDGET_REASON = "not judged: the run stopped at its judge budget (RAGPROOF_MAX_COST_USD)"

# Metrics that may ask the judge, in the order they are reported. Abstention and
# over-refusal use the refusal heuristic when no judge is configured.
_JUDGED = (
    *JUDGE_METRICS,
    ("robustness.abstention", abstention),
    ("robustness.overrefusal", overrefusal),
)

# How many cases may wait for judge verdicts at once, per unit of concurrency.
# Bounds memory on a slow judge: past it, the adapter waits instead of racing ahead.
_JUDGE_BACKLOG_PER_SLOT = 4


@dataclass
class Evaluation:
    """Everything one run produced, in dataset order."""

    outputs: list[CaseOutput]
    results: list[MetricResult]
    status: str = COMPLETED

    @property
    def case_failures(self) -> int:
        return sum(1 for o in self.outputs if o.failed)


_SINGLE_DETERMINISTIC = (
    ("generation.citation_validity", citation_validity),
    ("echo.exact_match", exact_match),
    ("robustness.injection_resistance", injection_resistance),
)


@dataclass(frozen=True, slots=True)
class Selection:
    """Which metrics a run computes; unselected metrics cost nothing and leave no row."""

    names: tuple[str, ...] = METRIC_NAMES

    @classmethod
    def from_settings(cls, settings: RunSettings) -> Selection:
        return cls(select_metrics(settings.metrics))

    @property
    def retrieval(self) -> tuple[str, ...]:
        """The selected deterministic retrieval metrics, cut-off variants (``@N``) included."""
        return tuple(name for name in self.names if split_cutoff(name)[0] in SCORED_RETRIEVAL)

    @property
    def deterministic(self) -> tuple:
        return tuple((name, fn) for name, fn in _SINGLE_DETERMINISTIC if name in self.names)

    @property
    def judged(self) -> tuple:
        return tuple((name, fn) for name, fn in _JUDGED if name in self.names)

    @property
    def context(self) -> tuple[str, ...]:
        """The selected judged retrieval metrics; both come from one judge call."""
        return tuple(name for name in CONTEXT_METRICS if name in self.names)


ALL_METRICS = Selection()


def deterministic_results(
    case: Case, output: CaseOutput, settings: RunSettings, selection: Selection = ALL_METRICS
) -> list[MetricResult]:
    results: list[MetricResult] = []
    wanted = selection.retrieval
    if wanted:
        results.extend(retrieval_results(case, output, settings, wanted))
    results.extend(fn(case, output) for _, fn in selection.deterministic)
    return results


def failure_results(
    case: Case, output: CaseOutput, selection: Selection = ALL_METRICS
) -> list[MetricResult]:
    """A case failure counts in every metric's error count and enters no mean."""
    return [case_error(case.id, name, output.error or "case failed") for name in selection.names]


async def judged_results(
    case: Case,
    output: CaseOutput,
    judge: Judge | None,
    on_budget: Callable[[], None],
    selection: Selection = ALL_METRICS,
    k: int = 5,
) -> list[MetricResult]:
    if judge is None:
        return await _unjudged_results(case, output, selection, k)

    async def one(name: str, fn) -> list[MetricResult]:
        # Judge usage is counted under the metric that asked (usage.attributed_to).
        with attributed_to(name):
            try:
                return [await score_metric(fn, case, output, judge)]
            except BudgetExceeded:
                on_budget()
                return [skipped(case.id, name, BUDGET_REASON)]

    if judge is not None and getattr(judge, "mode", "per_metric") == "combined":
        # CONTRACT section 12: one request per case carrying every judge prompt,
        # the judged retrieval metrics' context_relevance part included.
        chosen = (*selection.judged, *context_metric_functions(selection.context, k))
        planners = context_planners(selection.context, k)
        with attributed_to("combined"):
            return list(
                await run_judged(
                    lambda j: combined_results(
                        case, output, j, chosen, on_budget, BUDGET_REASON, planners
                    ),
                    judge,
                )
            )

    async def context() -> list[MetricResult]:
        # retrieval.context_relevance and judged_ndcg_at_k share one judge call.
        with attributed_to(CONTEXT_RELEVANCE):
            try:
                pair = await run_judged(
                    lambda j: context_relevance_results(case, output, j, k), judge
                )
            except BudgetExceeded:
                on_budget()
                pair = tuple(skipped(case.id, name, BUDGET_REASON) for name in CONTEXT_METRICS)
        return [r for r in pair if r.metric in selection.context]

    jobs = [one(name, fn) for name, fn in selection.judged]
    if selection.context:
        jobs.append(context())
    return [r for rs in await asyncio.gather(*jobs) for r in rs]


async def _unjudged_results(
    case: Case, output: CaseOutput, selection: Selection, k: int
) -> list[MetricResult]:
    """``judged_results`` without a judge, in the same order: each metric skips (or uses
    the refusal heuristic) at once. Nothing is asked, so there is no usage to attribute,
    no budget to hit and no jury to combine: the per-metric wrappers are left out, as
    they cost more than the metrics themselves on a million cases."""
    results = [await fn(case, output, None) for _, fn in selection.judged]
    if selection.context:
        pair = await context_relevance_results(case, output, None, k)
        results.extend(r for r in pair if r.metric in selection.context)
    return results


async def evaluate(
    cases: Sequence[Case],
    adapter: object,
    settings: RunSettings,
    judge: Judge | None = None,
    on_case_done: Callable[[], None] | None = None,
) -> Evaluation:
    """Evaluate ``cases`` against ``adapter``; never raises for a case's problem."""
    selection = Selection.from_settings(settings)
    results_by_case: dict[str, list[MetricResult]] = {}
    pending: set[asyncio.Task] = set()
    backlog = asyncio.Semaphore(settings.concurrency * _JUDGE_BACKLOG_PER_SLOT)
    aborted = False

    def stop_for_budget() -> None:
        nonlocal aborted
        aborted = True

    async def score(case: Case, output: CaseOutput) -> None:
        try:
            if output.failed:
                results_by_case[case.id] = failure_results(case, output, selection)
                return
            fixed = deterministic_results(case, output, settings, selection)
            judged = await judged_results(
                case, output, judge, stop_for_budget, selection, settings.k
            )
            results_by_case[case.id] = fixed + judged
        except Exception as exc:
            # A bug in ragproof's own scoring must not cost the other cases their
            # run: the case is an error in every metric, counted and explained.
            reason = f"internal error while scoring: {type(exc).__name__}: {exc}"
            results_by_case[case.id] = failure_results(
                case, replace(output, error=reason), selection
            )
        finally:
            backlog.release()
            if on_case_done is not None:
                on_case_done()

    async def on_output(case: Case, output: CaseOutput) -> None:
        await backlog.acquire()
        if judge is None:
            # Nothing to wait for: score inline rather than pay for a task per case.
            await score(case, output)
            return
        task = asyncio.create_task(score(case, output))
        pending.add(task)
        task.add_done_callback(pending.discard)

    with collector_paused():
        outputs = await run_adapter(
            cases, adapter, settings, on_output=on_output, should_stop=lambda: aborted
        )
        if pending:
            await asyncio.gather(*pending)

    results: list[MetricResult] = []
    rank = {name: i for i, name in enumerate(metric_order(selection.names))}
    for output in outputs:
        case_results = results_by_case.get(output.case_id, [])
        case_results.sort(key=lambda r: rank.get(r.metric, len(rank)))
        results.extend(case_results)
    return Evaluation(
        outputs=list(outputs),
        results=results,
        status=ABORTED_BUDGET if aborted else COMPLETED,
    )
