"""The evaluation assets, one partition per run:

    eval_dataset -> adapter_outputs, judge_verdicts, case_scores -> run_summary

Each asset writes its own storage in the run store (Parquet under the run's
folder, streamed in batches; DuckDB only holds views over it) and hands the
next asset a ``StoredTable`` handle on it through the table IO manager, so the
lineage carries the data; ``judge_verdicts``' ledger goes through the judge IO
manager. Adapter outputs, judge verdicts, case scores and the run summary come
out of one graph-backed asset (``shards.py``) whose shard steps each run adapter
and judge together, so judge calls overlap adapter calls; its last step gathers
the shards and summarizes the run (``run_summary`` below) in one process. All
evaluation logic lives in ``ragproof_core``; this module only wires it.
"""

import os
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg

from ragproof_assets.evaluation.config import PRECHECKED_TAG, RESUME_TAG, EvalRunConfig
from ragproof_assets.evaluation.dataset_scores import dataset_scores, mean_metadata
from ragproof_assets.evaluation.resources import CheckSettings, StoreResource
from ragproof_assets.evaluation.run_tags import identity_tags, tag_launcher
from ragproof_assets.evaluation.shape import EvaluationShape
from ragproof_assets.evaluation.summary_checks import failure_rate, floors, no_regression
from ragproof_assets.evaluation.table_schemas import DATASET_COLUMNS
from ragproof_core.adapters.loading import AdapterLoadError
from ragproof_core.calibration import jury_agreement, stored_self_agreement, with_self_agreement
from ragproof_core.compare import stored_trial_statistics, with_trial_statistics
from ragproof_core.config import ConfigError, RunManifest
from ragproof_core.data.dataset import DatasetError, dataset_sha256
from ragproof_core.judge import JudgeLedger, judge_environment
from ragproof_core.metrics.aggregate import MetricSummary
from ragproof_core.present import (
    SERVE_URL_ENV,
    gather_report,
    judge_failures_line,
    judge_usage_markdown,
    latency_note,
    refusal_tradeoff,
    render_html,
    served_run_links,
    summary_markdown,
    worst_cases_markdown,
)
from ragproof_core.run import (
    STAGED_SECRETS_DOCUMENT,
    Staged,
    recording_path,
    staged_inputs,
)
from ragproof_core.run.shards import RunTotals
from ragproof_core.store import (
    ResultTally,
    RunRecord,
    RunStore,
    StoredTable,
    StoreLocked,
    summarize_run,
)
from ragproof_core.store.dataset_table import StagedDataset
from ragproof_core.store.recording import StagedRecording

# What a resumed run kept from before (``RunStore.set_aside_prior``), added to its totals.
PRIOR_DOCUMENT = "prior"


def _now() -> datetime:
    return datetime.now(UTC)


def _display_path(path: str) -> str:
    """The dataset as users name it: relative to the working folder when inside it."""
    resolved = Path(path).resolve()
    try:
        return str(resolved.relative_to(Path.cwd()))
    except ValueError:
        return str(resolved)


def eval_dataset_asset(shape: EvaluationShape) -> dg.AssetsDefinition:
    """The ``eval_dataset`` asset of ``shape`` (``factory.py``)."""
    store_key = shape.resource_keys.store

    @dg.asset(
        key=shape.key("eval_dataset"),
        deps=shape.deps,
        partitions_def=shape.partitions,
        group_name=shape.group,
        kinds={"parquet"},
        io_manager_key=shape.resource_keys.tables,
        required_resource_keys={store_key},
        description="The dataset of one evaluation run, validated as a whole before anything "
        "runs (CONTRACT section 1), with the run's configuration.",
        metadata={"dagster/column_schema": DATASET_COLUMNS},
    )
    def eval_dataset(
        context: dg.AssetExecutionContext, config: EvalRunConfig
    ) -> dg.Output[StoredTable]:
        return ingest_dataset(context, config, getattr(context.resources, store_key))

    return eval_dataset


def ingest_dataset(
    context: dg.AssetExecutionContext, config: EvalRunConfig, store: StoreResource
) -> dg.Output[StoredTable]:
    """The dataset step: every input validated, then the run's files stored."""
    run_id = context.partition_key
    # Before validating: an evaluation that fails on its input is linked from its launch too.
    tag_launcher(context)
    if context.run.tags.get(RESUME_TAG) == "true":
        resumed = _resume_dataset(context, config, store)
        if resumed is not None:
            return resumed
        # Killed before its dataset was stored: nothing to keep, the run starts afresh.
    with ExitStack() as inputs:
        try:
            # Config, dataset, judge environment, adapter and recording, all before the
            # manifest: bad input of any kind leaves the store unchanged.
            resolved = config.resolve()
            # A recording is validated as it is staged, not by building the adapter.
            checked, recording = inputs.enter_context(
                staged_inputs(
                    resolved,
                    config.dataset_file(),
                    run_id,
                    adapter_checked=context.run.tags.get(PRECHECKED_TAG) == "true"
                    or recording_path(resolved.adapter) is not None,
                    launched=config.path_secrets(),
                )
            )
        except (DatasetError, ConfigError, AdapterLoadError) as exc:
            raise dg.Failure(description=str(exc), allow_retries=False) from exc
        return _store_dataset(context, config, store, checked, recording)


# A result the resume redoes: not judged because the run stopped (its budget, its judge).
REDO_MARKER = "not judged"


def _refuse(run_id: str, why: str) -> dg.Failure:
    return dg.Failure(
        description=f"run --resume {run_id}: {why}; resume refused", allow_retries=False
    )


def _resume_dataset(
    context: dg.AssetExecutionContext, config: EvalRunConfig, store: StoreResource
) -> dg.Output[StoredTable] | None:
    """``ragproof run --resume R``: R's stored dataset and settings, checked against the
    dataset file and the config as they are now (CONTRACT section 29); its results so far
    set aside to be kept, and only the cases without results run by the shards. None when
    R never stored its dataset (killed that early): the run is then stored afresh."""
    run_id = context.partition_key
    run_store = store.store()
    stored = run_store.run_manifest(run_id)
    try:
        resolved = config.resolve()
        dataset = config.dataset_file()
    except ConfigError as exc:
        raise dg.Failure(description=str(exc), allow_retries=False) from exc
    if not Path(dataset).is_file():
        raise _refuse(run_id, f"the dataset {config.dataset} is gone")
    if dataset_sha256(dataset) != stored.dataset_sha256:
        raise _refuse(run_id, f"the dataset {config.dataset} changed since the run")
    env = judge_environment(resolved.judge)
    resumed = replace(
        stored,
        run=resolved.run,
        adapter=resolved.adapter,
        judge=resolved.judge,
        metrics=resolved.metrics,
        use_cache=not config.no_cache,
        judge_api_base=env.api_base,
        dagster_run_id=context.run.run_id,
    )
    if resumed.settings_sha256() != stored.config_sha256:
        raise _refuse(run_id, "its config (run, adapter, judge or metrics settings) changed")
    if run_store.is_finished(run_id):
        record = run_store.get_run(run_id)
        if record.judge_requests and set(record.judge_models) != set(env.models):
            raise _refuse(
                run_id, f"the judge model is not the run's ({record.judge_model or 'none'})"
            )
    if not run_store.files.is_file(run_store.layout.table_path(run_id, "dataset")):
        return None
    run_store.write_manifest(run_id, resumed.to_dict())
    kept = run_store.set_aside_prior(run_id, REDO_MARKER, stored.run.repeats)
    run_store.write_document(run_id, PRIOR_DOCUMENT, kept)
    rows = stored.cases
    return dg.Output(
        run_store.table_handle(run_id, "dataset", rows),
        metadata={"dagster/row_count": rows, "resumed": True, "kept_cases": kept["cases"]},
    )


def _store_dataset(
    context: dg.AssetExecutionContext,
    config: EvalRunConfig,
    store: StoreResource,
    checked: Staged,
    recording: StagedRecording | None,
) -> dg.Output[StoredTable]:
    """The run's manifest, dataset and recording, stored once every input is valid."""
    run_id = context.partition_key
    resolved, dataset = checked.config, checked.dataset
    run_store = store.store()
    # Views exist from the first run's start, so the store reads even if that run is
    # killed: before any of its files. Refreshed on a thread while the manifest is made
    # (the dataset hashed; DuckDB releases the GIL; on a fresh store it is a tenth of
    # the step).
    with ThreadPoolExecutor(1) as views:
        refreshed = views.submit(_refresh_views, context, run_store)
        manifest = _manifest(context, config, checked)
        # However the run was launched (command line, Launchpad, schedule, sensor), its
        # Dagster run carries its name, tags and digest: the UI's run list filters by them.
        context.instance.add_run_tags(context.run.run_id, identity_tags(manifest))
        refreshed.result()
    _write_run_files(run_store, run_id, manifest, dataset, recording, checked.secrets_masked)
    return dg.Output(
        run_store.table_handle(run_id, "dataset", dataset.rows),
        metadata={
            "dagster/row_count": dataset.rows,
            "dataset": manifest.dataset,
            "dataset_sha256": manifest.dataset_sha256,
            "adapter": resolved.adapter.target,
            "config_digest": manifest.config_digest,
            "cases_by_kind": dg.MetadataValue.json(dataset.kinds()),
        },
    )


def _manifest(
    context: dg.AssetExecutionContext, config: EvalRunConfig, checked: Staged
) -> RunManifest:
    """The run's manifest, its settings hashed from the real values."""
    resolved, dataset = checked.config, checked.dataset
    path = config.dataset_file()
    manifest = RunManifest(
        run_id=context.partition_key,
        # Named as written when it reads the environment (a suite's ${DATA_DIR}/...): what
        # ${NAME} read is a secret, and a resume reads it again.
        dataset=config.dataset if path != config.dataset else _display_path(path),
        dataset_path=config.dataset if path != config.dataset else str(Path(path).resolve()),
        dataset_sha256=dataset_sha256(path),
        cases=dataset.rows,
        started_at=_now(),
        run=resolved.run,
        adapter=resolved.adapter,
        judge=resolved.judge,
        use_cache=not config.no_cache,
        judge_api_base=checked.judge_env.api_base,
        dagster_run_id=context.run.run_id,
        metrics=resolved.metrics,
        gate=resolved.gate,
    )
    # Hashed here, from the real values: the stored manifest has its secrets masked.
    return replace(manifest, config_sha256=manifest.settings_sha256())


def _write_run_files(
    run_store: RunStore,
    run_id: str,
    manifest: RunManifest,
    dataset: StagedDataset,
    recording: StagedRecording | None,
    masked: int = 0,
) -> None:
    run_store.write_manifest(run_id, manifest.to_dict())
    # A restarted run may split into other shards: its old result files must go.
    run_store.clear_results(run_id)
    # Counted once, in the run's summary (a restarted run's count replaces this one).
    run_store.write_document(run_id, STAGED_SECRETS_DOCUMENT, {"masked_strings": masked})
    run_store.write_staged_dataset(run_id, dataset)
    if recording is None:
        # A restarted run may have replayed a recording before: the file must go.
        run_store.remove_recorded_outputs(run_id)
    else:
        run_store.write_recording_beside(
            run_id, recording, dataset.case_ids(), dataset.turn_cases()
        )


@dataclass(frozen=True, slots=True)
class PreparedSummary:
    """The run's summaries and record, computed before anything of them is shown."""

    manifest: RunManifest
    summaries: list[MetricSummary]
    tally: ResultTally
    record: RunRecord


@dataclass(frozen=True, slots=True)
class WrittenReport:
    location: str
    worst_cases: str


def prepare_summary(
    run_store: RunStore,
    run_id: str,
    judge_verdicts: JudgeLedger,
    totals: RunTotals,
    tally: ResultTally,
) -> PreparedSummary:
    """The run's summaries (written: only the run record makes them visible) and its
    record (not yet written), from the results' tally and the gathered shards."""
    manifest = run_store.run_manifest(run_id)
    # Counted column by column, batch by batch: never the run's results as objects.
    summaries, tally = summarize_run(run_store, run_id, manifest.run.metrics, tally)
    if manifest.run.repeats > 1:
        # CONTRACT section 27: each case counts once in a mean, whatever its trials.
        statistics = stored_trial_statistics(run_store, run_id, manifest.run.trials_k)
        summaries = with_trial_statistics(summaries, statistics)
    if manifest.judge.repeats > 1:
        summaries = with_self_agreement(summaries, stored_self_agreement(run_store, run_id))
    record = RunRecord(
        run_id=run_id,
        dataset=manifest.dataset,
        adapter=manifest.adapter.target,
        status=totals.status,
        started_at=manifest.started_at,
        finished_at=_now(),
        judge_model=judge_verdicts.model,
        prompt_hashes=judge_verdicts.prompt_hashes,
        config_json=manifest.to_json(),
        cost_usd=judge_verdicts.known_cost_usd,
        cases=totals.cases,
        case_failures=totals.case_failures,
        judge_requests=judge_verdicts.requests,
        cache_hits=judge_verdicts.cache_hits,
        judge_mode=judge_verdicts.mode if judge_verdicts.model else None,
        judge_repairs=judge_verdicts.repairs,
        judge_errors=judge_verdicts.judge_errors,
        judge_input_tokens=judge_verdicts.input_tokens,
        judge_output_tokens=judge_verdicts.output_tokens,
        judge_usage=judge_verdicts.known_usage,
        # Only a jury stores per-model scores; a single judge has no agreement to measure.
        judge_agreement=(
            jury_agreement(run_store.iter_case_results(run_id))
            if "," in (judge_verdicts.model or "")
            else {}
        ),
        judge_first_error=judge_verdicts.unavailable or judge_verdicts.first_error,
        judge_response_format=judge_verdicts.response_format,
        adapter_calls=totals.adapter_calls,
        name=manifest.run.name,
        tags=dict(manifest.run.tags),
        config_digest=manifest.config_digest,
        secrets_masked=totals.secrets_masked,
    )
    run_store.write_summaries(run_id, summaries)
    return PreparedSummary(manifest, summaries, tally, record)


def write_report(run_store: RunStore, summary: PreparedSummary) -> WrittenReport:
    """The run's HTML report, written beside its files from the summary about to be
    recorded (the record as it will be stored), and its worst cases for the UI."""
    run_id = summary.record.run_id
    report = gather_report(
        run_store, run_id, tally=summary.tally, record=RunStore.stored_run(summary.record)
    )
    location = run_store.write_report(run_id, render_html(report))
    return WrittenReport(location, worst_cases_markdown(report))


def run_summary(
    context: dg.OpExecutionContext,
    shape: EvaluationShape,
    run_store: RunStore,
    summary: PreparedSummary,
    checks: CheckSettings,
    report: Future[WrittenReport],
    pool: Executor,
) -> Iterator[dg.Output | dg.AssetCheckResult]:
    """The ``run_summary`` asset's output and its checks' results (``shards.py`` wires it
    into the step that gathers the shards, after their three assets): the run recorded,
    its checks run on ``pool`` beside its ``report`` being written."""
    run_id = context.partition_key
    manifest, summaries, tally, record = (
        summary.manifest,
        summary.summaries,
        summary.tally,
        summary.record,
    )
    # Written last: its presence is what makes the run visible in the views.
    run_store.write_run(record)
    # Opening the views' database to find them current (eval_dataset made them) costs
    # about 0.2 s: on the pool, beside the report, done before the materialization.
    refreshed = pool.submit(_refresh_views, context, run_store)
    # Both read the run record; their results follow the summary's materialization.
    # A blocking check blocks only when it fails with ERROR: a suite's regression does.
    regression = (
        dg.AssetCheckSeverity.ERROR if shape.blocking_checks else dg.AssetCheckSeverity.WARN
    )
    checked = [
        pool.submit(no_regression, run_store, run_id, checks, regression),
        pool.submit(failure_rate, run_store, run_id, checks),
        pool.submit(floors, run_store, run_id),
    ]

    metadata: dict[str, object] = {
        # The store's run (the partition key): a suite's run_summary is a Plots tab of them.
        "ragproof_run_id": run_id,
        "status": record.status,
        # The run's identity (CONTRACT section 25): its name, tags and config digest.
        "config_digest": record.config_digest,
        **({"name": record.name} if record.name else {}),
        **({"tags": dg.MetadataValue.json(record.tags)} if record.tags else {}),
        "summary": dg.MetadataValue.md(summary_markdown(summaries)),
        "cases": record.cases,
        "case_failures": record.case_failures,
        "judge_model": record.judge_model or "none configured",
        "judge_requests": record.judge_requests,
        "judge_repairs": record.judge_repairs,
        "judge_cache_hits": record.cache_hits,
        "judge_errors": record.judge_errors,
        "judge_input_tokens": record.judge_input_tokens,
        "judge_output_tokens": record.judge_output_tokens,
        "metrics_selected": dg.MetadataValue.json(list(manifest.run.metrics)),
        "store": run_store.layout.location,
    }
    failures = judge_failures_line(record)
    if failures is not None:
        metadata["judge_failures"] = failures
    if record.judge_response_format is not None:
        metadata["judge_response_format"] = record.judge_response_format
    if record.cost_usd is not None:
        # Left out when unknown: a plot of cost across runs must not show it as $0.
        metadata["cost_usd"] = dg.MetadataValue.float(record.cost_usd)
    metadata.update(mean_metadata(summaries))
    if record.judge_agreement:
        metadata["jury_agreement"] = dg.MetadataValue.json(record.judge_agreement)
    if record.judge_usage:
        metadata["judge_usage"] = dg.MetadataValue.md(judge_usage_markdown(record.judge_usage))
    tradeoff = refusal_tradeoff(summaries)
    if tradeoff:
        metadata["abstention_vs_overrefusal"] = dg.MetadataValue.md(tradeoff)
    metadata["run_concurrency"] = manifest.run.concurrency
    latency = latency_note(summaries, manifest.run.concurrency)
    if latency:
        metadata["latency"] = dg.MetadataValue.md(latency)
    skipped_reasons = _skip_reasons(tally.skip_reasons)
    if skipped_reasons:
        metadata["skip_reasons"] = dg.MetadataValue.md(skipped_reasons)
    if shape.by_dataset:
        context.log_event(dataset_scores(record, summaries))
    metadata.update(_report_metadata(context, run_id, report))
    refreshed.result()
    # The materialization is on record before the checks: a check that fails to run
    # fails the step, not the summary the UI shows.
    yield dg.Output(None, output_name="run_summary", metadata=metadata)
    for check in checked:
        yield check.result()


def _report_metadata(
    context: dg.OpExecutionContext, run_id: str, report: Future[WrittenReport]
) -> dict:
    """Point to the run's HTML report and show its worst cases.

    A report that could not be built is logged and noted, never a reason to fail a
    finished evaluation.
    """
    links = served_run_links(os.environ.get(SERVE_URL_ENV), run_id)
    # The run's page does not depend on the report being written.
    metadata: dict[str, object] = (
        {} if links is None else {"run_page": dg.MetadataValue.url(links.page)}
    )
    try:
        written = report.result()
    except Exception as exc:  # noqa: BLE001 - the evaluation itself succeeded
        context.log.error(f"the HTML report was not written: {type(exc).__name__}: {exc}")
        return {**metadata, "report": f"not written: {type(exc).__name__}: {exc}"}
    # The location as copyable text: the UI's browser opens neither file:// nor s3:// links.
    metadata["report"] = dg.MetadataValue.path(written.location)
    if links is not None:
        metadata["report_url"] = dg.MetadataValue.url(links.report)
    metadata["worst_cases"] = dg.MetadataValue.md(written.worst_cases)
    return metadata


def _refresh_views(context: dg.OpExecutionContext | dg.AssetExecutionContext, run_store) -> None:
    """Create or update the DuckDB views; a no-op read when they are current."""
    try:
        run_store.ensure_views(timeout_s=5)
    except StoreLocked:
        # Nothing is lost: the views glob every run folder, so stored runs show as
        # soon as the views exist; only a new or stale definition waits for a later run.
        context.log.warning(
            "ragproof.duckdb is held open for writing by another process; views not refreshed "
            "(open it with `duckdb -readonly` to avoid this)"
        )


def _skip_reasons(counts: Counter) -> str:
    """Why metrics were skipped, counted, so an all-skipped metric explains itself."""
    return "\n".join(f"- `{m}`: {reason} ({n})" for (m, reason), n in sorted(counts.items()))
