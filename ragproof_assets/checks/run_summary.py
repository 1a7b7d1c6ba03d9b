"""Asset checks on a run summary: did this run regress against the last
completed run of the same dataset, adapter and scoring settings (k,
source_match, metrics), and did too many cases fail?"""

import dagster as dg

from ragproof_assets.evaluation.assets import run_summary
from ragproof_assets.evaluation.resources import CheckSettings, StoreResource
from ragproof_core.compare import MixedJudgesError, compare_stored_runs
from ragproof_core.store import stored_run_settings


@dg.asset_check(
    asset=run_summary,
    description="Compares this run with the last completed run of the same dataset, adapter "
    "and scoring settings (run.k, run.source_match, run.metrics) (paired, over the cases both "
    "scored) and fails when a metric got significantly worse by "
    "more than the tolerance.",
)
def no_regression(
    context: dg.AssetCheckExecutionContext, store: StoreResource, checks: CheckSettings
) -> dg.AssetCheckResult:
    run_store = store.store()
    run_id = context.partition_key if context.has_partition_key else None
    if run_id is None:
        return dg.AssetCheckResult(passed=True, metadata={"note": "no partition"})
    current = run_store.get_run(run_id)
    baseline = run_store.last_completed_run(
        current.dataset,
        current.adapter,
        before_run_id=run_id,
        run_settings=stored_run_settings(current),
    )
    if baseline is None:
        return dg.AssetCheckResult(
            passed=True,
            metadata={
                "baseline": "none: first completed run of this dataset and adapter "
                "with these settings (k, source_match, metrics)"
            },
        )
    try:
        # From the stored files a metric at a time: a second million-case run's check
        # never holds both runs' results frames.
        comparison = compare_stored_runs(run_store, baseline, current)
    except MixedJudgesError as exc:
        return dg.AssetCheckResult(
            passed=True,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={"baseline": baseline.run_id, "not_compared": str(exc)},
        )
    worse = [
        m
        for m in comparison.metrics
        if m.verdict == "worse"
        and m.delta is not None
        and abs(m.delta) > checks.regression_tolerance
    ]
    return dg.AssetCheckResult(
        passed=not worse,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "baseline": baseline.run_id,
            "regressed": ", ".join(m.metric for m in worse) or "none",
            "comparison": dg.MetadataValue.md(f"```\n{comparison.render_table()}\n```"),
            "tolerance": checks.regression_tolerance,
        },
    )


@dg.asset_check(
    asset=run_summary,
    description="Fails when the share of cases with a case failure or a judge error is above "
    "the configured maximum.",
)
def failure_rate(
    context: dg.AssetCheckExecutionContext, store: StoreResource, checks: CheckSettings
) -> dg.AssetCheckResult:
    run_store = store.store()
    run_id = context.partition_key
    # Two columns of the results, never a million result objects.
    failed_cases, cases = run_store.failed_case_share(run_id)
    share = failed_cases / cases if cases else 0.0
    return dg.AssetCheckResult(
        passed=share <= checks.max_failure_share,
        metadata={
            "failed_cases": failed_cases,
            "cases": cases,
            "share": dg.MetadataValue.float(share),
            "max_share": checks.max_failure_share,
        },
    )
