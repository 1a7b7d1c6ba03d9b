"""The evaluation step, fanned out into shards (CONTRACT section 8), and the run's summary.

``evaluation_assets(shape)`` is one graph-backed asset definition (the
``evaluate_cases`` graph) for adapter_outputs, judge_verdicts, case_scores and
run_summary, its ops named and its resources keyed by the shape (``shape.py``)::

    plan_shards ──> evaluate_shard[shard_0000] ─┐
                ├─> evaluate_shard[shard_0001] ─┼─> summarize_run -> adapter_outputs,
                └─> ...                         ┘     judge_verdicts, case_scores,
                                                      run_summary (+ its three checks)

``plan_shards`` emits one dynamic output per shard of the run's launch form, the
count the dataset step writes into the manifest: it depends on nothing, so it
runs beside ``eval_dataset`` instead of as a step of its own after it (a
process launched on the run's critical path). The job's executor runs the shard
steps in parallel
(separate processes with the multiprocess executor, pods with
``k8s_job_executor``). Each shard reads its block of cases from the store,
streams its outputs and case results to its own files
(``<table>-shard-NNNN.parquet``; a one-shard run writes ``<table>.parquet``)
and stores a ``ShardReport``. A recorded run scored from columns writes only
case results: its outputs are its recording, which ``gather_shards`` makes the
``outputs`` table (``RunStore.outputs_from_recording``). Between the ops inside
the graph only Nothing passes, so no step needs another's local disk (Dagster's
default IO manager would pickle to it); the asset's inputs and outputs are
``StoredTable`` handles through the table IO manager. ``summarize_run`` adds the reports up
(``gather_shards``), then writes the run's summary and record and evaluates
run_summary's checks (``assets.run_summary``), all in one step: each step is a
process to hand off, launch and set up on the run's critical path. Lineage
still shows run_summary downstream of case_scores and judge_verdicts
(``internal_asset_deps``).

A failed shard step can be re-executed alone ("re-execute from failure" in
the UI): the other shards' files stay, and its judge calls already paid for
come back from the judge cache; summarize_run runs again after it.
"""

import asyncio
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc

from ragproof_assets.evaluation.assets import (
    PRIOR_DOCUMENT,
    prepare_summary,
    run_summary,
    write_report,
)
from ragproof_assets.evaluation.config import PROGRESS_TAG, EvalRunConfig
from ragproof_assets.evaluation.progress import progress_bar
from ragproof_assets.evaluation.resources import CheckSettings, JudgeResource, StoreResource
from ragproof_assets.evaluation.shape import EvaluationShape
from ragproof_assets.evaluation.summary_checks import RUN_SUMMARY, run_summary_check_specs
from ragproof_assets.evaluation.table_schemas import (
    CASE_RESULTS_COLUMNS,
    METRIC_SUMMARIES_COLUMNS,
    OUTPUTS_COLUMNS,
)
from ragproof_core.adapters.loading import AdapterLoadError
from ragproof_core.adapters.recorded import RecordedAdapter
from ragproof_core.adapters.runner import close_adapter
from ragproof_core.config import (
    Config,
    ConfigError,
    RunManifest,
    expanded,
    redact,
    run_masker,
)
from ragproof_core.data.dataset import fewer_units_than
from ragproof_core.gc_pause import collector_paused
from ragproof_core.interruption import Interruption
from ragproof_core.judge import JudgeLedger, judge_ledger
from ragproof_core.masking import NO_SECRETS, Masker
from ragproof_core.metrics import give_rubrics, run_registry
from ragproof_core.model import CaseOutput
from ragproof_core.present import distributions_table
from ragproof_core.run import (
    ATTEMPT_PREFIX,
    EVALUATION_DOCUMENT,
    INTERRUPTED,
    STAGED_SECRETS_DOCUMENT,
    STOPPED_STATUSES,
    AttemptRecorder,
    ShardReport,
    attempt_document,
    attempt_document_name,
    evaluate,
    evaluate_recorded,
    merge_reports,
    new_attempt_token,
    recording_scoring,
    replays_as_recorded,
    shard_share,
    take_adapter,
    unfinished_attempts,
    unit_shard_ranges,
)
from ragproof_core.run.shards import RunTotals
from ragproof_core.store import ResultTally, RunNotFound, RunStore, StoredTable
from ragproof_core.store.result_tally import tally_shard_groups
from ragproof_core.store.run_store import RunBatch
from ragproof_core.store_health import STORE_FAULT, StoreHealth, StoreWriteError

# Cases evaluated (and written) at a time within a shard: a shard's memory holds
# one batch of outputs and results, not its whole share of the dataset.
EVAL_BATCH_CASES = 20_000
MAPPING_PREFIX = "shard_"
FIRST_FAILURES = 10


def report_name(shard: int) -> str:
    return f"{MAPPING_PREFIX}{shard:04d}"


def _shard_index(context: dg.OpExecutionContext) -> int:
    return int(context.get_mapping_key().removeprefix(MAPPING_PREFIX))


def _shard_count(run_store, run_id: str) -> int:
    return run_store.run_manifest(run_id).run.shards


def planned_shards(
    context: dg.OpExecutionContext, shape: EvaluationShape, store: StoreResource
) -> int:
    """How many shard steps the run has: ``run.shards`` of its launch form, resolved as the
    dataset step resolves it for the manifest. Without the form in this run (steps
    launched after the dataset step's own run), the stored manifest's. One when the
    dataset step will refuse the form (a bad config, more shards than the dataset has
    units): that step fails the run, its error the one shown, and the shard is skipped."""
    launched = shape.launched_form(context.run)
    if launched is None:
        return _shard_count(store.store(), context.partition_key)
    form = EvalRunConfig(**launched)
    try:
        shards = form.resolve().run.shards
        # Counted up to `shards` lines only: an absurd count must not plan thousands of steps.
        if shards > 1 and fewer_units_than(form.dataset_file(), shards):
            return 1
    except ConfigError:
        return 1
    return shards


def plan_shards(context: dg.OpExecutionContext, shape: EvaluationShape, store: StoreResource):
    """The plan step: one dynamic output per shard."""
    for index in range(planned_shards(context, shape, store)):
        yield dg.DynamicOutput(None, mapping_key=report_name(index))


def _changed_shards(shards: int) -> dg.Failure:
    return dg.Failure(
        description=f"run.shards changed since this run was planned (now {shards}); "
        "start a new run",
        allow_retries=False,
    )


def _shard_report(run_store: RunStore, run_id: str, index: int, shards: int) -> ShardReport:
    try:
        return ShardReport.from_dict(run_store.read_document(run_id, report_name(index)))
    except RunNotFound:
        # Every planned shard succeeded: fewer were planned than the manifest holds.
        raise _changed_shards(shards) from None


def launched_config(
    context: dg.OpExecutionContext, shape: EvaluationShape, manifest: RunManifest
) -> Config:
    """The run's config as written (its adapter's real options, ``${NAME}`` unexpanded),
    from the run's launch form.

    The manifest's copy has its secrets masked (``ragproof_core/config/redaction.py``),
    so an adapter built from it would send ``***`` as its key. The form is resolved
    again and must still match the manifest: a config file edited since the run
    started fails the step instead of evaluating with another adapter.
    """
    launched = shape.launched_form(context.run)
    if launched is None:
        # A step launched alone (no eval_dataset in this Dagster run) has only the
        # manifest: right for adapters without secrets, as before.
        return manifest.config
    config = EvalRunConfig(**launched).resolve()
    spec, stored = config.adapter, manifest.adapter
    if (spec.target, redact(dict(spec.options))) != (stored.target, dict(stored.options)):
        raise ConfigError(
            f"the adapter's config ({stored.target} and its options) changed since "
            "this run started; start a new run"
        )
    return replace(manifest.config, adapter=spec, judge=config.judge, source=config.source)


def _launch_secrets(context: dg.OpExecutionContext, shape: EvaluationShape) -> list[str]:
    """What ``${NAME}`` gave the run's launch paths (``LaunchForm.path_secrets``)."""
    launched = shape.launched_form(context.run)
    return [] if launched is None else EvalRunConfig(**launched).path_secrets()


def evaluate_shard(
    context: dg.OpExecutionContext,
    shape: EvaluationShape,
    eval_dataset: StoredTable,
    judge_resource: JudgeResource,
):
    """A shard step: its cases evaluated, its outputs, case results and report written."""
    run_store = RunStore.holding(eval_dataset)
    # The run is listed running while any of its steps works on it, and a signal to the
    # command reaches the step through the store (CONTRACT section 29).
    with run_store.heartbeat(context.partition_key) as heartbeat:
        yield from _evaluate_shard(
            context,
            shape,
            eval_dataset,
            judge_resource,
            run_store,
            Interruption(heartbeat.stopping.is_set),
        )


def _evaluate_shard(
    context: dg.OpExecutionContext,
    shape: EvaluationShape,
    eval_dataset: StoredTable,
    judge_resource: JudgeResource,
    run_store: RunStore,
    interruption: Interruption,
):
    run_id = context.partition_key
    index = _shard_index(context)
    manifest = run_store.run_manifest(run_id)
    settings = manifest.run
    shards = settings.shards
    if index >= shards:
        # The config file was edited between the plan and the dataset step.
        raise _changed_shards(shards)
    # A conversation's turns stay in one shard (CONTRACT section 16).
    unit_starts = run_store.dataset_unit_starts(run_id)
    start, end = unit_shard_ranges(eval_dataset.rows, shards, unit_starts)[index]
    # run.concurrency is the run's total in flight: each shard takes its share.
    settings = replace(settings, concurrency=shard_share(settings.concurrency, shards, index))
    masker = NO_SECRETS
    try:
        config = launched_config(context, shape, manifest)
        # ${NAME} read from this process's environment as the run starts here; the
        # run's secret values are masked in everything this step takes in.
        masker = run_masker(config, launched=_launch_secrets(context, shape))
        used = expanded(config).config
        # The ingest step validated the adapter's input (a recording) before this step,
        # and stored it when it could: then the adapter replays the stored rows.
        adapter = take_adapter(
            used.adapter, prechecked=True, stored=run_store.has_recorded_outputs(run_id)
        )
    except (AdapterLoadError, ConfigError) as exc:
        raise dg.Failure(description=masker.text(str(exc)), allow_retries=False) from exc
    # Shared by the judge cache, the ledger recorder and the result writes below: once
    # one of them cannot write, the judge sends no further request.
    health = StoreHealth()
    judge = judge_resource.open_judge(
        use_cache=manifest.use_cache,
        concurrency=settings.concurrency,
        table=used.judge,
        masker=masker,
        shards=shards,
        health=health,
        shard=index,
        # Every shard of the run draws its rate-limit slots from one schedule from here.
        anchor=manifest.started_at.timestamp(),
        # After a signal the judge sends no new request (CONTRACT section 29).
        interruption=interruption,
    )
    # The run's own metrics ([[metric]] tables); a rubric metric's prompt joins the judge's.
    registry = run_registry(manifest.metrics)
    give_rubrics(judge, manifest.metrics)
    # A stored recording scored from columns: the outputs are the recording as it is
    # (gather_shards makes it the table), so only the columns scored are read; unless a
    # turn after a failed one replays as a failure somewhere in the run.
    from_recording = (
        recording_scoring(
            settings,
            registry,
            has_judge=judge is not None,
            has_turns=unit_starts is not None,
            as_recorded=unit_starts is None
            or replays_as_recorded(unit_starts, run_store.recorded_failures(run_id)),
        )
        if run_store.has_recorded_outputs(run_id)
        else None
    )
    # A resumed run (CONTRACT section 29) runs only the cases without results from before,
    # and judges the outputs it has of cases it did not judge (a recording's are free).
    done = run_store.done_cases(run_id)
    to_judge = {} if from_recording is not None else run_store.outputs_to_judge(run_id)
    if done:
        from_recording = None  # the cases left are replayed as cases, whatever they are
    repeats = settings.repeats
    # Each trial has outputs of its own (CONTRACT section 27): a recording is one trial's.
    outputs_as_recorded = (
        from_recording is not None and from_recording.outputs_as_recorded and repeats == 1
    )
    # Several processes drawing one terminal bar would garble it: one shard only.
    progress = progress_bar(
        (end - start) * repeats,
        where=context.run.tags.get(PROGRESS_TAG) if shards == 1 else None,
    )

    status, evaluated, failures = "completed", 0, 0
    statuses: Counter[str] = Counter()
    adapter_calls: Counter[str] = Counter()
    first_failures: list[str] = []
    # This attempt's judge spend is on record while it runs, should it die unreported.
    token = new_attempt_token()
    recorder = AttemptRecorder(
        write=lambda doc: run_store.write_document(
            run_id, attempt_document_name(index, token), doc
        ),
        snapshot=lambda: attempt_document(
            index, token, judge_ledger(judge, use_cache=manifest.use_cache)
        ),
        health=health,
    )
    # One event loop for every batch (the judge and adapter clients bind to it);
    # the Runner cancels leftover tasks (LiteLLM's logging worker) before closing it.
    runner = asyncio.Runner()
    try:
        with (
            recorder,
            run_store.results_writer(
                run_id, None if shards == 1 else index, outputs=not outputs_as_recorded
            ) as writer,
        ):
            for batch in run_store.iter_run_batches(
                run_id,
                start,
                end,
                # A batch's trials run one after another: as many case evaluations a
                # batch as a run without repeats, so the same memory.
                max(1, EVAL_BATCH_CASES // repeats),
                columns=None if from_recording is None else from_recording.columns,
            ):
                if done:
                    batch = left_to_do(batch, done)
                    if not batch.rows:
                        continue
                # Each trial of the batch's cases (CONTRACT section 27), in order; a
                # conversation is repeated whole, as evaluate keeps its turns together.
                for trial in range(1, repeats + 1):
                    # A resumed run judges the outputs it stored but did not judge as
                    # they are: the pipeline is asked only for the cases without one.
                    for rows, answering in resume_parts(batch, to_judge, adapter):
                        # The batch's outputs and results die before the collector
                        # resumes: a collection over a live batch (a million chunks and
                        # results) walks every one of them, and again each time they
                        # move up a generation.
                        with collector_paused():
                            evaluation = _evaluate_rows(
                                rows,
                                answering,
                                settings,
                                registry,
                                judge,
                                progress,
                                runner,
                                interruption,
                                masker,
                            )
                            try:
                                # Columns when the selection scores from them: no object
                                # per row.
                                writer.write(
                                    evaluation.stored_outputs(),
                                    evaluation.stored_results(),
                                    trial,
                                )
                            except Exception as exc:  # noqa: BLE001 - any failure of the store's writes
                                raise health.record("case results write", exc) from exc
                            if trial == repeats:
                                # Cases, not trials: a case counts once its last trial is
                                # stored (a resume redoes a case short of trials whole).
                                evaluated += evaluation.cases
                            failures += evaluation.case_failures
                            statuses.update(evaluation.status_counts())
                            adapter_calls.update(evaluation.adapter_calls)
                            first_failures += [
                                f"- `{case_id}`{_trial_note(trial, repeats)}: {error}"
                                for case_id, error in evaluation.failures(
                                    FIRST_FAILURES - len(first_failures)
                                )
                            ]
                            status = evaluation.status
                            del evaluation
                        if status in (*STOPPED_STATUSES, INTERRUPTED):
                            break
                    if status in (*STOPPED_STATUSES, INTERRUPTED):
                        break
                if status in (*STOPPED_STATUSES, INTERRUPTED):
                    break
    except StoreWriteError as exc:
        raise _store_fault(exc) from exc
    finally:

        async def shut_down() -> None:
            await close_adapter(adapter)
            if judge is not None:
                # LiteLLM queues bookkeeping on this event loop; let it finish here.
                await judge.drain()

        try:
            runner.run(shut_down())
        finally:
            runner.close()
            progress.close()
            if judge is not None:
                try:
                    judge.close()
                except StoreWriteError as exc:  # the cache's last flush
                    raise _store_fault(exc) from exc

    ledger = judge_ledger(judge, use_cache=manifest.use_cache)
    report = ShardReport(
        shard=index,
        cases=evaluated,
        case_failures=failures,
        status=status,
        ledger=ledger.to_dict(),
        statuses=dict(statuses),
        first_failures=first_failures,
        attempt=token,
        outputs_from_recording=outputs_as_recorded,
        result_groups=writer.result_groups(),
        masked_strings=masker.masked,
        adapter_calls=dict(adapter_calls),
    )
    run_store.write_document(run_id, report_name(index), report.to_dict())
    yield dg.Output(
        None,
        metadata={
            "shard": f"{index + 1} of {shards}",
            "cases": f"{start}..{end - 1}" if end > start else "none",
            "dagster/row_count": evaluated,
            "case_failures": failures,
            "judge_requests": ledger.requests,
            "judge_cache_hits": ledger.cache_hits,
            "status": status,
        },
    )


def _trial_note(trial: int, repeats: int) -> str:
    """Which trial a failure listed in the summary was (nothing without repeats)."""
    return "" if repeats == 1 else f" (trial {trial})"


def _evaluate_rows(
    rows: RunBatch,
    answering: object,
    settings,
    registry,
    judge,
    progress,
    runner: asyncio.Runner,
    interruption: Interruption,
    masker: Masker,
):
    """One batch's evaluation. A stored recording and metrics scored from columns (every
    default one when there is no judge): no object per case at all (evaluate_recorded);
    otherwise the cases are replayed or answered by ``answering``, its outputs masked
    by ``masker`` (stored rows were masked as the recording was staged)."""
    if rows.recorded is not None:
        evaluation = evaluate_recorded(
            rows.dataset,
            rows.recorded,
            settings,
            registry,
            has_judge=judge is not None,
            full_rows=rows.whole,
        )
        if evaluation is not None:
            progress.update(evaluation.cases)
            return evaluation
    recorded = rows.recorded_outputs()
    if recorded is not None:
        answering.replay(recorded)
    return runner.run(
        evaluate(
            rows.cases(),
            answering,
            settings,
            judge,
            on_case_done=progress.update,
            registry=registry,
            as_columns=True,
            dataset=rows.dataset,
            masker=NO_SECRETS if recorded is not None else masker,
            interruption=interruption,
        )
    )


def resume_parts(
    rows: RunBatch, to_judge: dict[str, CaseOutput], adapter: object
) -> Iterator[tuple[RunBatch, object]]:
    """The batch's cases with a stored output to judge, replayed from it, then the rest,
    answered by ``adapter`` (the whole batch, when the run stored none)."""
    if not to_judge:
        yield rows, adapter
        return
    stored = pc.is_in(rows.dataset.column("id"), pa.array(sorted(to_judge), pa.string()))
    replayed = _part(rows, stored)
    if replayed.rows:
        replayer = RecordedAdapter.stored("the run's stored outputs")
        replayer.replay(to_judge[case_id] for case_id in replayed.dataset.column("id").to_pylist())
        yield replayed, replayer
    left = _part(rows, pc.invert(stored))
    if left.rows:
        yield left, adapter


def _part(rows: RunBatch, keep: pa.ChunkedArray) -> RunBatch:
    recorded = None if rows.recorded is None else rows.recorded.filter(keep)
    return RunBatch(rows.dataset.filter(keep), recorded, rows.start, None)


def left_to_do(rows: RunBatch, done: set[str]) -> RunBatch:
    """The batch's rows without the cases a resumed run keeps from before."""
    keep = pc.invert(pc.is_in(rows.dataset.column("id"), pa.array(sorted(done), pa.string())))
    return _part(rows, keep)


def _store_fault(exc: StoreWriteError) -> dg.Failure:
    # The first fault of the step (StoreHealth keeps it), whichever write reports it.
    return dg.Failure(
        description=f"{STORE_FAULT}: {exc}; the run sent no judge request after it",
        allow_retries=False,
    )


@dataclass(frozen=True, slots=True)
class GatheredShards:
    """The shards' reports added up: what the three assets' outputs and the summary show."""

    shards: int
    totals: RunTotals
    # Summed over calls and shards, its cost rounded once: for the run record and displays.
    ledger: JudgeLedger
    statuses: Counter[str]
    first_failures: list[str]
    unfinished: int
    tally: ResultTally


def gather_shards(run_store: RunStore, run_id: str) -> GatheredShards:
    """Add the shards' reports up and make the run's ``outputs`` table; the results'
    tally (``UnknownStatus``, naming the file, row and case, for a status it does not
    know) is what the distributions, the summaries and the report count from."""
    shards = run_store.run_manifest(run_id).run.shards
    reports = [_shard_report(run_store, run_id, i, shards) for i in range(shards)]
    reported = {(r.shard, r.attempt) for r in reports}
    unfinished = unfinished_attempts(run_store.read_documents(run_id, ATTEMPT_PREFIX), reported)
    staged = run_store.read_documents(run_id, STAGED_SECRETS_DOCUMENT)
    totals = merge_reports(reports, unfinished, sum(d["masked_strings"] for d in staged))
    prior = run_store.read_documents(run_id, PRIOR_DOCUMENT)
    if prior:
        # A resumed run: what it kept from before counts in its totals too.
        totals = replace(
            totals,
            cases=totals.cases + prior[0]["cases"],
            case_failures=totals.case_failures + prior[0]["case_failures"],
        )
    if all(report.outputs_from_recording for report in reports):
        run_store.outputs_from_recording(run_id)
    run_store.write_document(run_id, EVALUATION_DOCUMENT, totals.evaluation.to_dict())
    statuses: Counter[str] = Counter()
    for report in reports:
        statuses.update(report.statuses)
    return GatheredShards(
        shards=shards,
        totals=totals,
        ledger=totals.ledger.with_rounded_cost(),
        statuses=statuses,
        first_failures=[line for r in reports for line in r.first_failures][:FIRST_FAILURES],
        unfinished=len(unfinished),
        # What the shards grouped of their results, added up; the stored files grouped
        # again only when a shard kept no groups.
        tally=(None if prior else tally_shard_groups([r.result_groups for r in reports]))
        or run_store.tally_case_results(run_id),
    )


def shard_outputs(
    run_store: RunStore, run_id: str, gathered: GatheredShards
) -> Iterator[dg.Output]:
    """The run's outputs, judge ledger and case scores: the three assets' outputs."""
    totals, ledger, statuses = gathered.totals, gathered.ledger, gathered.statuses
    yield dg.Output(
        run_store.table_handle(run_id, "outputs", totals.cases),
        output_name="adapter_outputs",
        metadata={
            "dagster/row_count": totals.cases,
            "case_failures": totals.case_failures,
            "first_failures": dg.MetadataValue.md("\n".join(gathered.first_failures) or "none"),
            "shards": gathered.shards,
            "unfinished_shard_attempts": gathered.unfinished,
        },
    )
    yield dg.Output(
        ledger,
        output_name="judge_verdicts",
        metadata={
            "judge_model": ledger.model or "none configured",
            "requests": ledger.requests,
            "repairs": ledger.repairs,
            "cache_hits": ledger.cache_hits,
            "judge_errors": ledger.judge_errors,
            "input_tokens": ledger.input_tokens,
            "output_tokens": ledger.output_tokens,
            "cost_usd": dg.MetadataValue.float(ledger.cost_usd),
        },
    )
    yield dg.Output(
        run_store.table_handle(run_id, "case_results", sum(statuses.values())),
        output_name="case_scores",
        metadata={
            "dagster/row_count": sum(statuses.values()),
            "status": totals.status,
            "by_status": dg.MetadataValue.json(dict(statuses)),
            # Counted from the stored results' columns: never the results as objects.
            "distributions": dg.MetadataValue.md(
                distributions_table(gathered.tally.metrics, gathered.tally.values)
            ),
        },
    )


def summarize_run(
    context: dg.OpExecutionContext,
    shape: EvaluationShape,
    store: StoreResource,
    checks: CheckSettings,
):
    """The summary step: the shards gathered, the run summarized, its checks evaluated."""
    # One step after the shards, not three (gather, summary, checks): each step is a
    # process to hand off, launch and set up on the run's critical path.
    run_store = store.store()
    run_id = context.partition_key
    with run_store.heartbeat(run_id):
        yield from _summarize_run(context, shape, run_store, run_id, checks)


def _summarize_run(
    context: dg.OpExecutionContext,
    shape: EvaluationShape,
    run_store: RunStore,
    run_id: str,
    checks: CheckSettings,
):
    gathered = gather_shards(run_store, run_id)
    # The distributions' tally is the summary's and the report's too: one pass over the results.
    summary = prepare_summary(run_store, run_id, gathered.ledger, gathered.totals, gathered.tally)
    # The report, the step's longest work, is built on a thread from here while this one
    # hands Dagster the three assets' outputs and records the run; the views' check and
    # the three checks join it there.
    with ThreadPoolExecutor(max_workers=3, thread_name_prefix="ragproof-summary") as pool:
        report = pool.submit(write_report, run_store, summary)
        yield from shard_outputs(run_store, run_id, gathered)
        yield from run_summary(context, shape, run_store, summary, checks, report, pool)


OUTS = {
    "adapter_outputs": dg.AssetOut(
        kinds={"parquet"},
        description="What the pipeline under test returned for each case: answer, "
        "citations, retrieved chunks, or the case failure.",
        metadata={"dagster/column_schema": OUTPUTS_COLUMNS},
    ),
    "judge_verdicts": dg.AssetOut(
        description="The judge's work in this run: model, prompt hashes, requests, cache "
        "hits and cost. Verdicts themselves are cached by (model, prompt hash, input hash).",
    ),
    "case_scores": dg.AssetOut(
        kinds={"parquet"},
        description="One row per case and metric: status, value, reason, raw judge reply.",
        metadata={"dagster/column_schema": CASE_RESULTS_COLUMNS},
    ),
    "run_summary": dg.AssetOut(
        kinds={"parquet", "duckdb"},
        description="One row per metric: mean, nearest-rank p50 and p95, and the counts; plus "
        "the run record. Query history with the `runs`, `case_results` and `metric_summaries` "
        "views of RAGPROOF_STORE/ragproof.duckdb.",
        metadata={"dagster/column_schema": METRIC_SUMMARIES_COLUMNS},
    ),
}


def evaluation_assets(shape: EvaluationShape) -> dg.AssetsDefinition:
    """adapter_outputs, judge_verdicts, case_scores and run_summary (with its checks) of
    ``shape``: one graph-backed asset definition (the module's docstring draws it)."""
    keys = shape.resource_keys
    name = shape.node_name
    check_specs = run_summary_check_specs(shape.key(RUN_SUMMARY), blocking=shape.blocking_checks)

    @dg.op(
        name=name("plan_shards"),
        out=dg.DynamicOut(dg.Nothing),
        required_resource_keys={keys.store},
        description="One dynamic output per shard of the run (run.shards of its launch form).",
    )
    def plan_shards_op(context: dg.OpExecutionContext):
        yield from plan_shards(context, shape, getattr(context.resources, keys.store))

    @dg.op(
        name=name("evaluate_shard"),
        ins={"planned": dg.In(dg.Nothing)},
        out=dg.Out(dg.Nothing),
        required_resource_keys={keys.judge},
        description="Evaluate one shard's cases; write its outputs, case results and report.",
    )
    def evaluate_shard_op(context: dg.OpExecutionContext, eval_dataset: StoredTable):
        yield from evaluate_shard(
            context, shape, eval_dataset, getattr(context.resources, keys.judge)
        )

    @dg.op(
        name=name("summarize_run"),
        ins={"shards_done": dg.In(dg.Nothing)},
        out={
            "adapter_outputs": dg.Out(StoredTable, io_manager_key=keys.tables),
            "judge_verdicts": dg.Out(io_manager_key=keys.ledger),
            "case_scores": dg.Out(StoredTable, io_manager_key=keys.tables),
            # Written to the store by the step itself: nothing for an IO manager.
            "run_summary": dg.Out(dg.Nothing),
            **{spec.get_python_identifier(): dg.Out(dg.Nothing) for spec in check_specs},
        },
        required_resource_keys={keys.store, keys.checks},
        description="Add the shards' reports up (the run's outputs, judge ledger and case "
        "scores), then summarize the run and evaluate run_summary's checks.",
    )
    def summarize_run_op(context: dg.OpExecutionContext):
        yield from summarize_run(
            context,
            shape,
            getattr(context.resources, keys.store),
            getattr(context.resources, keys.checks),
        )

    @dg.graph(
        name=name("evaluate_cases"),
        out={output: dg.GraphOut() for output in summarize_run_op.output_dict},
    )
    def evaluate_cases(eval_dataset):
        """Evaluate the run's cases, split into run.shards steps the executor runs in
        parallel, then gather and summarize them."""
        planned = plan_shards_op()
        done = planned.map(
            lambda shard: evaluate_shard_op(planned=shard, eval_dataset=eval_dataset)
        ).collect()
        return dict(zip(summarize_run_op.output_dict, summarize_run_op(done), strict=True))

    dataset = shape.key("eval_dataset")
    return dg.AssetsDefinition.from_graph(
        evaluate_cases,
        keys_by_input_name={"eval_dataset": dataset},
        keys_by_output_name={output: shape.key(output) for output in OUTS},
        # The summary reads the case scores and the ledger, as its lineage in the UI shows;
        # without this every output would hang off eval_dataset alone.
        internal_asset_deps={
            "adapter_outputs": {dataset},
            "judge_verdicts": {dataset},
            "case_scores": {dataset},
            "run_summary": {shape.key("case_scores"), shape.key("judge_verdicts")},
        },
        partitions_def=shape.partitions,
        group_name=shape.group,
        descriptions_by_output_name={output: out.description for output, out in OUTS.items()},
        metadata_by_output_name={output: out.metadata for output, out in OUTS.items()},
        tags_by_output_name={output: out.tags for output, out in OUTS.items()},
        # Evaluated by summarize_run once the run record they read is written.
        check_specs=check_specs,
    )
