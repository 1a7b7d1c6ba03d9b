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
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ragproof_core.adapters.runner import run_adapter
from ragproof_core.config.settings import RunSettings
from ragproof_core.gc_pause import collector_paused
from ragproof_core.interruption import Interrupted, Interruption, finish
from ragproof_core.judge.jury import run_judged, score_metric
from ragproof_core.judge.types import (
    ABORTED_BUDGET,
    ABORTED_JUDGE,
    BudgetExceeded,
    Judge,
    JudgeStopped,
)
from ragproof_core.judge.usage import attributed_to
from ragproof_core.masking import NO_SECRETS, Masker
from ragproof_core.metrics.combined_run import combined_results
from ragproof_core.metrics.conversation_columns import (
    CONVERSATION_READS,
    ConversationColumns,
    conversations_of,
)
from ragproof_core.metrics.judge_plan import JudgePlan, result_from_verdict, run_plan, with_history
from ragproof_core.metrics.registry import REGISTRY, MetricGroup, MetricSpec, Registry
from ragproof_core.metrics.result_columns import ResultColumns, concat
from ragproof_core.metrics.spec import ColumnScore, adapter_methods
from ragproof_core.model import (
    Case,
    CaseOutput,
    MetricResult,
    case_error,
    skipped,
)
from ragproof_core.run.column_scoring import ROW_READS, column_results
from ragproof_core.run.turn_replay import replayed_turns
from ragproof_core.store.schema import (
    decode_dataset,
    decode_outputs,
    encode_dataset,
    encode_outputs,
)
from ragproof_core.store_health import StoreWriteError

COMPLETED = "completed"
# A signal stopped the run (CONTRACT section 29): no new adapter or judge request.
INTERRUPTED = "interrupted"
# The statuses of a run the judge stopped, and why its unasked questions are skipped.
STOPPED_STATUSES = (ABORTED_BUDGET, ABORTED_JUDGE)
BUDGET_REASON = BudgetExceeded.skip_reason
# (exception) -> the skip reason of the question it stopped: records the run's stop.
OnStop = Callable[[JudgeStopped], str]

# How many cases may wait for judge verdicts at once, per unit of concurrency.
# Bounds memory on a slow judge: past it, the adapter waits instead of racing ahead.
_JUDGE_BACKLOG_PER_SLOT = 4
# Scored cases whose batch-scored groups (MetricGroup.score_batch) are scored together:
# enough that the numpy calls' fixed cost vanishes per case, few enough that a batch's
# arrays stay a few hundred kB.
SCORE_BATCH_CASES = 4096

DEFAULT_SETTINGS = RunSettings()


@dataclass(repr=False)
class Evaluation:
    """Everything one run produced, in dataset order."""

    outputs: list[CaseOutput]
    results: list[MetricResult]
    status: str = COMPLETED
    # A selection scored from columns (``evaluate(..., as_columns=True)``,
    # ``evaluate_recorded``): the results as columns (``results`` then stays empty) and
    # the outputs as the store encodes them (any run_id), so neither becomes objects to
    # be written; ``evaluate_recorded`` leaves ``outputs`` empty too.
    columns: ResultColumns | None = None
    outputs_table: pa.Table | None = None
    # The adapter's calls, by method (``retrieve``, ``answer``; a replay's ``run_case``).
    adapter_calls: Counter[str] = field(default_factory=Counter)

    def __repr__(self) -> str:
        # Short on purpose: asyncio.run() in a main thread formats the repr of its task,
        # result included, when it restores the SIGINT handler (Python 3.11), and the
        # dataclass repr of 20,000 cases' outputs and results took longer than scoring them.
        rows = len(self.results) if self.columns is None else len(self.columns)
        return f"Evaluation({self.cases} outputs, {rows} results, status={self.status!r})"

    @property
    def cases(self) -> int:
        """How many cases were evaluated."""
        return len(self.outputs) if self.outputs_table is None else self.outputs_table.num_rows

    @property
    def case_failures(self) -> int:
        if self.outputs_table is not None:
            return self.cases - self.outputs_table.column("error").null_count
        return sum(1 for o in self.outputs if o.failed)

    def failures(self, limit: int) -> list[tuple[str, str]]:
        """The first ``limit`` failed cases: (case id, error), in dataset order."""
        if self.outputs_table is None:
            return [(o.case_id, o.error) for o in self.outputs if o.failed][:limit]
        failed = self.outputs_table.filter(pc.is_valid(self.outputs_table.column("error")))
        head = failed.slice(0, limit)
        return list(
            zip(head.column("case_id").to_pylist(), head.column("error").to_pylist(), strict=True)
        )

    def stored_outputs(self) -> Sequence[CaseOutput] | pa.Table:
        """The outputs as the store writes them: encoded already, or as objects."""
        return self.outputs if self.outputs_table is None else self.outputs_table

    def stored_results(self) -> Sequence[MetricResult] | ResultColumns:
        """The results as the store writes them: as columns, or as objects."""
        return self.results if self.columns is None else self.columns

    def status_counts(self) -> dict[str, int]:
        """How many result rows have each status."""
        if self.columns is not None:
            return self.columns.status_counts()
        # Counted by member, named once each: ``Status.value`` is a property call on
        # Python 3.11, twice a row here before (22 rows a case with default metrics).
        counted = Counter(result.status for result in self.results)
        return {status.value: n for status, n in counted.items()}


def internal_error_reason(exc: Exception) -> str:
    """The reason of every row of a case that ragproof's own scoring failed on."""
    return f"internal error while scoring: {type(exc).__name__}: {exc}"


def per_metric_function(declared: MetricSpec, params: Any):
    """A judged metric as ``(case, output, judge) -> MetricResult``: its plan, asked alone."""

    async def metric(case: Case, output: CaseOutput, judge: Judge | None) -> MetricResult:
        planned = declared.plan(case, output, judge is not None, params)
        return await run_plan(with_history(planned, output), judge)

    return metric


@dataclass(frozen=True)
class Selection:
    """Which metrics a run computes, read from the registry; unselected metrics cost
    nothing and leave no row. ``registry`` holds the run's own metrics too."""

    names: tuple[str, ...] = REGISTRY.names
    registry: Registry = REGISTRY

    @classmethod
    def from_settings(cls, settings: RunSettings, registry: Registry = REGISTRY) -> Selection:
        names = registry.select(settings.metrics)
        if not settings.metrics:
            # As config.settings spells out a run's stored selection: a conversation's
            # own metrics leave rows only where a run has conversations.
            names = (*names, *registry.conversation_names)
        return cls(names, registry)

    @cached_property
    def specs(self) -> tuple[MetricSpec, ...]:
        """The declarations of the selected metrics (a cut-off variant ``x@N`` is x's)."""
        chosen = {self.registry.spec(name).name for name in self.names}
        return tuple(m for m in self.registry.metrics if m.name in chosen)

    @cached_property
    def group_members(self) -> dict[str, tuple[str, ...]]:
        """Each group's selected names, cut-off variants (``@N``) included, in order."""
        members: dict[str, list[str]] = {}
        for name in self.names:
            group = self.registry.spec(name).group
            if group is not None:
                members.setdefault(group.name, []).append(name)
        return {group: tuple(names) for group, names in members.items()}

    @cached_property
    def groups(self) -> tuple[MetricGroup, ...]:
        """The groups with a selected member, in registry order."""
        return tuple(dict.fromkeys(m.group for m in self.specs if m.group is not None))

    @cached_property
    def deterministic_groups(self) -> tuple[MetricGroup, ...]:
        return tuple(g for g in self.groups if g.score is not None)

    @cached_property
    def batch_groups(self) -> tuple[MetricGroup, ...]:
        """Deterministic groups a run scores many cases at a time (``score_batch``)."""
        return tuple(g for g in self.deterministic_groups if g.score_batch is not None)

    @cached_property
    def case_groups(self) -> tuple[MetricGroup, ...]:
        """Deterministic groups a run scores case by case."""
        return tuple(g for g in self.deterministic_groups if g.score_batch is None)

    @cached_property
    def deterministic(self) -> tuple[MetricSpec, ...]:
        """Selected metrics scored on their own without a judge."""
        return tuple(m for m in self.specs if m.group is None and m.score is not None)

    @cached_property
    def judged(self) -> tuple[MetricSpec, ...]:
        """Selected judged metrics asked of a case on their own in per_metric mode (a
        conversation's own metrics are asked of the conversation: ``conversational``)."""
        return tuple(
            m
            for m in self.specs
            if m.group is None and m.plan is not None and not m.per_conversation
        )

    @cached_property
    def judged_groups(self) -> tuple[MetricGroup, ...]:
        """Groups asking one judge call for all their selected members in per_metric mode."""
        return tuple(g for g in self.groups if g.ask is not None)

    @cached_property
    def planned(self) -> tuple[MetricSpec, ...]:
        """Every selected metric with a plan: the parts of combined mode's request."""
        return tuple(m for m in self.specs if m.plan is not None and not m.per_conversation)

    @cached_property
    def conversational(self) -> tuple[MetricSpec, ...]:
        """Selected metrics of a whole conversation, scored under its id."""
        return tuple(m for m in self.specs if m.per_conversation)

    @cached_property
    def adapter_methods(self) -> frozenset[str]:
        """The adapter methods a single case calls: those that give what the selected
        metrics read (``MetricSpec.reads``). A conversation's turns call ``answer``
        whatever they are (``run_adapter``)."""
        return frozenset().union(*(adapter_methods(m.reads) for m in self.specs))

    @cached_property
    def case_names(self) -> tuple[str, ...]:
        """The names a case or a turn has rows for: all but a conversation's own."""
        own = {m.name for m in self.conversational}
        return tuple(name for name in self.names if name not in own)

    @cached_property
    def order(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.registry.order(self.names))}

    @cached_property
    def scored_from_columns(self) -> bool:
        """Every selected metric is in a group that scores columns (``score_columns``):
        nothing judged, case by case or per conversation."""
        return (
            bool(self.batch_groups)
            and all(g.score_columns is not None for g in self.batch_groups)
            and not (self.case_groups or self.deterministic or self.judged)
            and not (self.judged_groups or self.planned or self.conversational)
        )

    @cached_property
    def unjudged_column_sources(
        self,
    ) -> tuple[tuple[MetricGroup | MetricSpec, tuple[str, ...]], ...] | None:
        """Every selected metric's group or own declaration (each with ``score_columns``)
        beside the names it gives, for a run without a judge (a judged metric's columns
        are its rows without one); None when one has none. A conversation's own metrics
        have no rows in a batch of single cases."""
        sources: list[tuple[MetricGroup | MetricSpec, tuple[str, ...]]] = []
        for group in self.groups:
            if group.score_columns is None:
                return None
            sources.append((group, self.group_members[group.name]))
        for declared in self.specs:
            if declared.group is None and not declared.per_conversation:
                if declared.score_columns is None:
                    return None
                sources.append((declared, (declared.name,)))
        return tuple(sources)

    def column_sources(
        self, has_judge: bool, has_turns: bool
    ) -> tuple[tuple[MetricGroup | MetricSpec, tuple[str, ...]], ...] | None:
        """The declarations whose ``score_columns`` score a batch, beside the names each
        gives, or None when the batch is scored as objects: a selection
        ``scored_from_columns``, or without a judge one whose every metric has
        ``score_columns`` (and, for a batch with turns, ``has_turns``, whose every
        conversation's own metric has ``conversation_columns``)."""
        if self.scored_from_columns:
            return tuple((g, self.group_members[g.name]) for g in self.batch_groups)
        if has_judge or (has_turns and not self.conversations_from_columns):
            return None
        return self.unjudged_column_sources

    @cached_property
    def conversations_from_columns(self) -> bool:
        """Every selected conversation's own metric gives its rows without a judge from
        columns (``MetricSpec.conversation_columns``)."""
        return all(m.conversation_columns is not None for m in self.conversational)

    def column_scorers(
        self, has_judge: bool, has_turns: bool
    ) -> tuple[tuple[ColumnScore, tuple[str, ...]], ...] | None:
        """What scores a batch from columns (``column_sources``' functions), or None."""
        sources = self.column_sources(has_judge, has_turns)
        if sources is None:
            return None
        return tuple((source.score_columns, names) for source, names in sources)

    def column_reads(self, has_judge: bool, has_turns: bool) -> tuple[str, ...] | None:
        """The store columns a batch scored from columns reads (``ColumnScore``'s note):
        the rows' own (``column_scoring.ROW_READS``) and what each scorer declares; None
        when the batch is not scored from columns or a scorer declares none."""
        sources = self.column_sources(has_judge, has_turns)
        if sources is None or any(source.column_reads is None for source, _ in sources):
            return None
        reads = [*ROW_READS, *(name for source, _ in sources for name in source.column_reads)]
        if has_turns:
            reads += CONVERSATION_READS
        return tuple(dict.fromkeys(reads))

    @cached_property
    def result_names(self) -> tuple[str, ...]:
        """A case's names in the order ``evaluate`` lists its rows."""
        if len(self.batch_groups) == 1 and self.scored_from_columns:
            return self.group_members[self.batch_groups[0].name]
        order = self.order
        return tuple(sorted(self.case_names, key=lambda name: order.get(name, len(order))))


ALL_METRICS = Selection()


def deterministic_results(
    case: Case,
    output: CaseOutput,
    settings: RunSettings,
    selection: Selection = ALL_METRICS,
    groups: Sequence[MetricGroup] | None = None,
) -> list[MetricResult]:
    """One case's deterministic results: ``groups`` (every selected deterministic group
    when None) and the selected metrics scored on their own."""
    results: list[MetricResult] = []
    for group in selection.deterministic_groups if groups is None else groups:
        # A group's metrics share one pass (the retrieval metrics, one ranking).
        results.extend(group.score(case, output, settings, selection.group_members[group.name]))
    results.extend(m.score(case, output, settings) for m in selection.deterministic)
    return results


def batch_results(
    cases: Sequence[Case],
    outputs: Sequence[CaseOutput],
    settings: RunSettings,
    selection: Selection = ALL_METRICS,
) -> list[list[MetricResult]]:
    """The batch-scored groups' results of cases that did not fail, one list per case:
    the rows ``deterministic_results`` gives those groups case by case."""
    per_case: list[list[MetricResult]] = [[] for _ in cases]
    for group in selection.batch_groups:
        wanted = selection.group_members[group.name]
        for rows, scored in zip(
            per_case, group.score_batch(cases, outputs, settings, wanted), strict=True
        ):
            rows.extend(scored)
    return per_case


def failure_results(
    case: Case, output: CaseOutput, selection: Selection = ALL_METRICS
) -> list[MetricResult]:
    """A case failure counts in every metric's error count and enters no mean (a
    conversation's own metrics have their row under the conversation's id)."""
    return [
        case_error(case.id, name, output.error or "case failed") for name in selection.case_names
    ]


async def conversation_results(
    turns: Sequence[Case],
    outputs: Sequence[CaseOutput],
    judge: Judge | None,
    on_stop: OnStop,
    selection: Selection = ALL_METRICS,
    settings: RunSettings = DEFAULT_SETTINGS,
) -> list[MetricResult]:
    """The selected per-conversation metrics of one conversation (its turns and outputs in
    order), stored under its id. In combined mode each is a ``combined`` request of its
    one part (CONTRACT section 12)."""
    results: list[MetricResult] = []
    for declared in selection.conversational:
        planned = declared.conversation(turns, outputs, judge is not None, settings)
        if not isinstance(planned, JudgePlan):
            results.append(planned)
            continue
        with attributed_to(declared.name):
            try:
                (result,) = await run_judged(lambda j, p=planned: _ask_alone(p, j), judge)
            except JudgeStopped as stop:
                result = skipped(planned.case_id, declared.name, on_stop(stop))
        results.append(result)
    return results


async def _ask_alone(planned: JudgePlan, judge: Judge) -> tuple[MetricResult]:
    if getattr(judge, "mode", "per_metric") == "combined":
        verdicts = await judge.ask_combined({planned.prompt: planned.inputs})
        return (result_from_verdict(planned, verdicts[planned.prompt]),)
    return (await run_plan(planned, judge),)


async def judged_results(
    case: Case,
    output: CaseOutput,
    judge: Judge | None,
    on_stop: OnStop,
    selection: Selection = ALL_METRICS,
    k: int = 5,
    settings: RunSettings | None = None,
) -> list[MetricResult]:
    params = settings if settings is not None else _params(k)
    if judge is None:
        return await _unjudged_results(case, output, selection, params)

    async def one(declared: MetricSpec) -> list[MetricResult]:
        # Judge usage is counted under the metric that asked (usage.attributed_to).
        with attributed_to(declared.name):
            try:
                return [
                    await score_metric(per_metric_function(declared, params), case, output, judge)
                ]
            except JudgeStopped as stop:
                return [skipped(case.id, declared.name, on_stop(stop))]

    if getattr(judge, "mode", "per_metric") == "combined":
        # CONTRACT section 12: one request per case carrying every judge prompt,
        # the judged retrieval metrics' context_relevance part included.
        chosen = tuple((m.name, per_metric_function(m, params)) for m in selection.planned)
        with attributed_to("combined"):
            return list(
                await run_judged(
                    lambda j: combined_results(
                        case,
                        output,
                        j,
                        chosen,
                        on_stop,
                        params,
                        selection.registry,
                    ),
                    judge,
                )
            )

    async def together(group: MetricGroup) -> list[MetricResult]:
        # The group's metrics share one judge call, counted under the group's name.
        with attributed_to(group.name):
            try:
                results = await run_judged(lambda j: group.ask(case, output, j, params), judge)
            except JudgeStopped as stop:
                reason = on_stop(stop)
                results = tuple(skipped(case.id, name, reason) for name in group.members)
        return [r for r in results if r.metric in selection.names]

    jobs = [one(m) for m in selection.judged]
    jobs.extend(together(group) for group in selection.judged_groups)
    return [r for rs in await asyncio.gather(*jobs) for r in rs]


def _params(k: int) -> RunSettings:
    return DEFAULT_SETTINGS if k == DEFAULT_SETTINGS.k else replace(DEFAULT_SETTINGS, k=k)


async def _unjudged_results(
    case: Case, output: CaseOutput, selection: Selection, params: RunSettings
) -> list[MetricResult]:
    """``judged_results`` without a judge, in the same order: each metric skips (or uses
    the refusal heuristic) at once. Nothing is asked, so there is no usage to attribute,
    no budget to hit and no jury to combine: the per-metric wrappers are left out, as
    they cost more than the metrics themselves on a million cases."""
    results = [await run_plan(m.plan(case, output, False, params), None) for m in selection.judged]
    for group in selection.judged_groups:
        together = await group.ask(case, output, None, params)
        results.extend(r for r in together if r.metric in selection.names)
    return results


async def evaluate(
    cases: Sequence[Case],
    adapter: object,
    settings: RunSettings,
    judge: Judge | None = None,
    on_case_done: Callable[[], None] | None = None,
    registry: Registry = REGISTRY,
    as_columns: bool = False,
    dataset: pa.Table | None = None,
    masker: Masker = NO_SECRETS,
    interruption: Interruption | None = None,
) -> Evaluation:
    """Evaluate ``cases`` against ``adapter``; never raises for a case's problem.
    ``interruption``: once set (a signal), no new adapter or judge request is sent (the
    judge checks the same ``Interruption`` before each of its requests), those in flight
    get its allowance and are then cancelled; the cases answered and scored whole are
    kept (a conversation only whole), status interrupted.
    ``registry``: the metrics to choose from, the run's own (``metrics.custom``) included.
    ``masker``: the run's secret values, masked in each output as the adapter gives it
    (``run_adapter``).

    ``as_columns``: when every selected metric scores from columns
    (``Selection.column_scorers``), give the results as ``Evaluation.columns``
    (``column_scoring``); ``dataset``: the cases' rows of the store's dataset table, if
    the caller has them (otherwise they are encoded from ``cases``)."""
    selection = Selection.from_settings(settings, registry)
    scorers = None
    if as_columns:
        turns = any(case.turn is not None for case in cases)
        scorers = selection.column_scorers(judge is not None, turns)
    if scorers is not None:
        return await _evaluate_columns(
            cases,
            adapter,
            settings,
            selection,
            scorers,
            on_case_done,
            dataset,
            masker,
            interruption,
        )
    results_by_case: dict[str, list[MetricResult]] = {}
    pending: set[asyncio.Task] = set()
    backlog = asyncio.Semaphore(settings.concurrency * _JUDGE_BACKLOG_PER_SLOT)
    # The status of a run the judge stopped (its budget, or a judge that cannot answer).
    stopped: str | None = None
    store_fault: StoreWriteError | None = None
    scored_case_by_case = bool(selection.case_groups or selection.deterministic)
    unjudged_plans = bool(selection.judged or selection.judged_groups)
    # Cases whose scoring is done but for the batch-scored groups, and those groups' rows.
    waiting: list[tuple[Case, CaseOutput]] = []
    batched: dict[str, list[MetricResult]] = {}

    def internal_error(case: Case, output: CaseOutput, exc: Exception) -> None:
        # A bug in ragproof's own scoring must not cost the other cases their
        # run: the case is an error in every metric, counted and explained.
        reason = internal_error_reason(exc)
        results_by_case[case.id] = failure_results(case, replace(output, error=reason), selection)

    def score_waiting() -> None:
        """The batch-scored groups of every waiting case; when that raises, each case
        alone, so only a case at fault becomes an internal error."""
        chosen = list(waiting)
        waiting.clear()
        cases_, outputs_ = [c for c, _ in chosen], [o for _, o in chosen]
        scored: list[list[MetricResult] | None]
        try:
            scored = list(batch_results(cases_, outputs_, settings, selection))
        except Exception:  # noqa: BLE001 - found again case by case just below
            scored = []
            for case, output in chosen:
                try:
                    scored += batch_results([case], [output], settings, selection)
                except Exception as exc:  # noqa: BLE001 - as in score()
                    internal_error(case, output, exc)
                    scored.append(None)
        for case, rows in zip(cases_, scored, strict=True):
            if rows is not None:
                batched[case.id] = rows

    def on_stop(stop: JudgeStopped) -> str:
        nonlocal stopped
        stopped = stopped or stop.status
        return stop.skip_reason

    def stopping() -> bool:
        return interruption is not None and interruption.is_set()

    async def score(case: Case, output: CaseOutput) -> None:
        nonlocal store_fault
        try:
            if stopping() and (judge is not None or unjudged_plans):
                # Not judged after the signal: left for the resume, not half-kept.
                return
            if output.failed:
                results_by_case[case.id] = failure_results(case, output, selection)
                return
            fixed = (
                deterministic_results(case, output, settings, selection, selection.case_groups)
                if scored_case_by_case
                else []
            )
            if judge is None and not unjudged_plans:
                # Nothing to ask and no heuristic to run: a retrieval-only selection
                # pays no per-case call for it (a million cases a run).
                results_by_case[case.id] = fixed
            else:
                judged = await judged_results(
                    case, output, judge, on_stop, selection, settings.k, settings
                )
                results_by_case[case.id] = fixed + judged
            if selection.batch_groups:
                # Only a case whose own scoring is done waits: its rows can no longer
                # be replaced by an internal error while its batch is scored.
                waiting.append((case, output))
                if len(waiting) >= SCORE_BATCH_CASES:
                    score_waiting()
        except Interrupted:
            return  # a judge request after the signal was not sent: the resume redoes it
        except StoreWriteError as exc:
            # Not the case's fault: the store cannot keep what the judge returns, so
            # no new case starts and the run stops with the fault (store_health.py).
            store_fault = store_fault or exc
        except Exception as exc:
            internal_error(case, output, exc)
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

    # A conversation's own results go right after its last turn's.
    after_turn: dict[str, str] = {}

    async def score_conversation(turns: Sequence[Case], outputs: Sequence[CaseOutput]) -> None:
        nonlocal store_fault
        conversation_id = turns[0].turn.conversation_id
        try:
            results_by_case[conversation_id] = await conversation_results(
                turns, outputs, judge, on_stop, selection, settings
            )
        except Interrupted:
            return  # left out whole, and redone whole by the resume
        except StoreWriteError as exc:
            store_fault = store_fault or exc
        except Exception as exc:
            reason = internal_error_reason(exc)
            results_by_case[conversation_id] = [
                case_error(conversation_id, m.name, reason) for m in selection.conversational
            ]

    async def on_conversation(turns: Sequence[Case], outputs: Sequence[CaseOutput]) -> None:
        if not selection.conversational:
            return
        # Placed before its scoring starts: a conversation whose scoring a signal cut
        # short is then known, and left out whole.
        after_turn[turns[-1].id] = turns[0].turn.conversation_id
        if judge is None:
            await score_conversation(turns, outputs)
            return
        task = asyncio.create_task(score_conversation(turns, outputs))
        pending.add(task)
        task.add_done_callback(pending.discard)

    calls: Counter[str] = Counter()
    with collector_paused():
        outputs = await run_adapter(
            cases,
            adapter,
            settings,
            on_output=on_output,
            should_stop=lambda: stopped is not None or store_fault is not None or stopping(),
            on_conversation=on_conversation,
            masker=masker,
            methods=selection.adapter_methods,
            calls=calls,
            interruption=interruption,
        )
        # After a signal, the judge requests in flight get what is left of the allowance.
        await finish(list(pending), interruption)
        score_waiting()
    if store_fault is not None:
        raise store_fault

    interrupted = stopping()
    if interrupted:
        # Only the cases scored whole are kept; a conversation with any turn unanswered
        # or unscored, or its own metrics unscored, is redone whole by the resume.
        scored = [o for o in outputs if o.case_id in results_by_case]
        _, outputs = _whole_units(cases, scored)
        if selection.conversational:
            unscored = {c for c in after_turn.values() if c not in results_by_case}
            _, outputs = _whole_units(cases, outputs, cut=unscored)
        kept = {o.case_id for o in outputs}
        after_turn = {k: v for k, v in after_turn.items() if k in kept}
    results: list[MetricResult] = []
    order = selection.order
    for output in outputs:
        case_results = results_by_case.get(output.case_id, [])
        more = batched.get(output.case_id)
        if more is not None and not case_results and len(selection.batch_groups) == 1:
            # One group's rows alone come in the selection's order already.
            results.extend(more)
        else:
            case_results.extend(more or ())
            case_results.sort(key=lambda r: order.get(r.metric, len(order)))
            results.extend(case_results)
        conversation_id = after_turn.get(output.case_id)
        if conversation_id is not None:
            results.extend(results_by_case.get(conversation_id, []))
    return Evaluation(
        outputs=list(outputs),
        results=results,
        status=INTERRUPTED if interrupted else stopped or COMPLETED,
        adapter_calls=calls,
    )


@dataclass(frozen=True, slots=True)
class RecordingScoring:
    """A recorded run every batch of which ``evaluate_recorded`` scores from columns: its
    scoring reads ``columns`` of the two tables (``Selection.column_reads``; None: every
    column). ``outputs_as_recorded``: its outputs are its recording's rows as they are
    (no turn replayed as a failure: ``turn_replay.replays_as_recorded``), so the shards
    write none; otherwise they write the rows they replay, read whole."""

    columns: tuple[str, ...] | None
    outputs_as_recorded: bool = True


def recording_scoring(
    settings: RunSettings,
    registry: Registry,
    *,
    has_judge: bool,
    has_turns: bool,
    as_recorded: bool = True,
) -> RecordingScoring | None:
    """How a recorded run is scored from columns, or None when some batch is not (a
    selection not scored from columns, ``Selection.column_scorers``: the cases of such
    batches are replayed by ``evaluate``). ``has_turns``: the run has a conversation;
    ``as_recorded``: its recording is what it replays (``turn_replay``)."""
    selection = Selection.from_settings(settings, registry)
    if selection.column_scorers(has_judge, has_turns) is None:
        return None
    if not as_recorded:
        return RecordingScoring(None, outputs_as_recorded=False)
    return RecordingScoring(selection.column_reads(has_judge, has_turns))


def evaluate_recorded(
    dataset: pa.Table,
    recorded: pa.Table,
    settings: RunSettings,
    registry: Registry = REGISTRY,
    has_judge: bool = True,
    full_rows: Callable[[], tuple[pa.Table, pa.Table]] | None = None,
) -> Evaluation | None:
    """``evaluate`` of a recorded run's cases from the store's columns alone: ``dataset``
    rows and ``recorded``, the stored recording's rows beside them (what the recorded
    adapter replays for each case, failures included). No ``Case``, ``CaseOutput`` or
    ``MetricResult`` object is built. None when the selection is not scored from columns
    (``Selection.column_scorers``: pass ``has_judge=False`` for a run without a judge);
    ``evaluate`` then evaluates them. A conversation's turns are replayed as the runner
    replays them (``turn_replay``: a turn after a failed one fails) and its own rows
    follow its last turn's, as ``evaluate`` places them.

    ``dataset`` and ``recorded`` may hold only the columns the scorers read
    (``Selection.column_reads``): ``full_rows`` then gives the same rows whole, for
    the case-by-case scoring a scorer's failure falls back to. The evaluation's
    outputs table is ``recorded`` as given, its turns replayed."""
    selection = Selection.from_settings(settings, registry)
    turns = "conversation_id" in dataset.column_names and (
        dataset.column("conversation_id").null_count < dataset.num_rows
    )
    scorers = selection.column_scorers(has_judge, turns)
    if scorers is None:
        return None
    conversations = conversations_of(dataset, recorded)
    replayed = replayed_turns(recorded, conversations)

    def as_objects() -> tuple[list[Case], list[CaseOutput]]:
        whole, outputs = (dataset, recorded) if full_rows is None else full_rows()
        with collector_paused():
            return decode_dataset(whole), decode_outputs(replayed_turns(outputs, conversations))

    columns = _scored_columns(
        dataset, replayed, settings, selection, scorers, as_objects, conversations
    )
    return Evaluation(outputs=[], results=[], columns=columns, outputs_table=replayed)


async def _evaluate_columns(
    cases: Sequence[Case],
    adapter: object,
    settings: RunSettings,
    selection: Selection,
    scorers: Sequence[tuple[ColumnScore, tuple[str, ...]]],
    on_case_done: Callable[[], None] | None,
    dataset: pa.Table | None,
    masker: Masker,
    interruption: Interruption | None = None,
) -> Evaluation:
    """``evaluate`` of a selection scored from columns, without a judge: the adapter's
    outputs first, then every case's rows from the dataset's and the outputs' columns at
    once; a conversation's own rows (which ask no judge) after its last turn's, as
    ``evaluate`` places them. Interrupted, the cases answered whole are scored and kept,
    status interrupted."""

    def on_output(case: Case, output: CaseOutput) -> None:
        if on_case_done is not None:
            on_case_done()

    calls: Counter[str] = Counter()
    with collector_paused():
        outputs = await run_adapter(
            cases,
            adapter,
            settings,
            on_output=on_output,
            should_stop=None if interruption is None else interruption.is_set,
            methods=selection.adapter_methods,
            calls=calls,
            masker=masker,
            interruption=interruption,
        )
        interrupted = interruption is not None and interruption.is_set()
        if interrupted and len(outputs) < len(cases):
            cases, outputs = _whole_units(cases, outputs)
            dataset = None
        outputs_table = encode_outputs("", outputs)
        rows = encode_dataset("", cases) if dataset is None else dataset
        columns = _scored_columns(
            rows,
            outputs_table,
            settings,
            selection,
            scorers,
            lambda: (cases, outputs),
            conversations_of(rows, outputs_table),
        )
    return Evaluation(
        outputs=list(outputs),
        results=[],
        columns=columns,
        outputs_table=outputs_table,
        status=INTERRUPTED if interrupted else COMPLETED,
        adapter_calls=calls,
    )


def _whole_units(
    cases: Sequence[Case], outputs: Sequence[CaseOutput], cut: set[str] | None = None
) -> tuple[list[Case], list[CaseOutput]]:
    """The cases (and their outputs) answered before a stop, a conversation only whole
    (and none of the conversations in ``cut``)."""
    answered = {o.case_id for o in outputs}
    cut = set(cut or ()) | {
        c.turn.conversation_id for c in cases if c.turn is not None and c.id not in answered
    }

    def kept(case: Case) -> bool:
        return case.id in answered and (case.turn is None or case.turn.conversation_id not in cut)

    chosen = [c for c in cases if kept(c)]
    ids = {c.id for c in chosen}
    return chosen, [o for o in outputs if o.case_id in ids]


def _scored_columns(
    dataset: pa.Table,
    outputs: pa.Table,
    settings: RunSettings,
    selection: Selection,
    scorers: Sequence[tuple[ColumnScore, tuple[str, ...]]],
    as_objects: Callable[[], tuple[Sequence[Case], Sequence[CaseOutput]]],
    conversations: ConversationColumns,
) -> ResultColumns:
    """The rows of a batch scored from columns (``dataset`` rows, ``outputs`` beside
    them), each conversation's own rows after its last turn's; when a scorer fails, the
    cases' rows one at a time from ``as_objects`` (so only a case at fault becomes an
    internal error)."""
    try:
        columns = column_results(dataset, outputs, settings, scorers, selection.result_names)
    except Exception:  # noqa: BLE001 - found again case by case just below
        cases, case_outputs = as_objects()
        columns = ResultColumns.from_results(
            _results_case_by_case(cases, case_outputs, settings, selection)
        )
    if not (selection.conversational and len(conversations)):
        return columns
    own = []
    for declared in selection.conversational:
        try:
            own.append(declared.conversation_columns(conversations, settings))
        except Exception:  # noqa: BLE001 - found again conversation by conversation
            own.append(
                _conversation_rows_one_by_one(declared, conversations, as_objects(), settings)
            )
    return _with_conversation_rows(columns, dataset.num_rows, conversations, concat(own))


def _conversation_rows_one_by_one(
    declared: MetricSpec,
    conversations: ConversationColumns,
    objects: tuple[Sequence[Case], Sequence[CaseOutput]],
    settings: RunSettings,
) -> ResultColumns:
    """A conversation's own metric's rows without a judge, one conversation at a time as
    objects (``objects``: the batch's cases and outputs), so only a conversation at fault
    becomes an internal error, as ``evaluate``'s ``score_conversation`` finds it."""
    cases, outputs = objects
    rows: list[MetricResult] = []
    for conversation_id, start, count in zip(
        conversations.conversation_id.to_pylist(),
        conversations.first_row.tolist(),
        conversations.turns.tolist(),
        strict=True,
    ):
        try:
            rows.append(
                declared.conversation(
                    cases[start : start + count], outputs[start : start + count], False, settings
                )
            )
        except Exception as exc:  # noqa: BLE001 - a bug in scoring costs one conversation
            rows.append(case_error(conversation_id, declared.name, internal_error_reason(exc)))
    return ResultColumns.from_results(rows)


def _with_conversation_rows(
    columns: ResultColumns,
    cases: int,
    conversations: ConversationColumns,
    own: ResultColumns,
) -> ResultColumns:
    """``columns`` (the rows of a batch's ``cases`` cases, each case's rows together, in
    batch order) with ``own`` (each of the conversations' own metrics' rows, one per
    conversation in ``conversations``' order, metric after metric) right after each
    conversation's last turn's rows."""
    rows = len(columns)
    if rows == 0:  # a selection of a conversation's own metrics alone
        after = np.zeros(len(conversations), dtype=np.int64)
    else:
        # Where each case's rows end: its id changes there (ids are unique per case).
        # Compared in Arrow: a million rows' ids as Python strings cost more than the rest.
        ids = columns.case_id
        changed = pc.not_equal(ids.slice(1), ids.slice(0, rows - 1))
        ends = np.r_[np.flatnonzero(changed.to_numpy(zero_copy_only=False)) + 1, rows]
        if len(ends) != cases:
            raise ValueError(f"{len(ends)} cases have result rows, the batch has {cases}")
        after = ends[conversations.last_row]
    # Row keys: a case's row its own index; a conversation's rows the last row of its last
    # turn, after that turn's rows by the stable sort (they come later in the concatenation).
    keys = np.concatenate(
        [
            np.arange(rows, dtype=np.int64),
            np.tile(after - 1, len(own) // len(conversations)),
        ]
    )
    return concat([columns, own]).take(np.argsort(keys, kind="stable"))


def _results_case_by_case(
    cases: Sequence[Case],
    outputs: Sequence[CaseOutput],
    settings: RunSettings,
    selection: Selection,
) -> list[MetricResult]:
    """The selected metrics' rows one case at a time, as objects and without a judge,
    so only a case at fault becomes an internal error (as ``evaluate``'s
    ``score_waiting`` finds it)."""
    results: list[MetricResult] = []
    order = {name: i for i, name in enumerate(selection.result_names)}
    for case, output in zip(cases, outputs, strict=True):
        if output.failed:
            rows = failure_results(case, output, selection)
        else:
            try:
                rows = deterministic_results(case, output, settings, selection)
                rows += unjudged_plans(case, output, selection, settings)
            except Exception as exc:  # noqa: BLE001 - a bug in scoring costs one case
                reason = internal_error_reason(exc)
                rows = failure_results(case, replace(output, error=reason), selection)
        results.extend(sorted(rows, key=lambda r: order[r.metric]))
    return results


def unjudged_plans(
    case: Case, output: CaseOutput, selection: Selection, params: Any
) -> list[MetricResult]:
    """The selected judged metrics' rows of a case in a run without a judge: each plan's
    result (a skip, or the refusal heuristic's score), which asks nothing; the rows
    ``_unjudged_results`` gives, but for their order."""
    rows = []
    for declared in selection.planned:
        planned = declared.plan(case, output, False, params)
        if not isinstance(planned, MetricResult):
            raise TypeError(f"{declared.name} plans a judge question in a run without a judge")
        rows.append(planned)
    return rows
