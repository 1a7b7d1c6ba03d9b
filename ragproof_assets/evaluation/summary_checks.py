"""Asset checks on a run summary: did this run regress against the last
completed run of the same dataset, adapter and scoring settings (k,
source_match, metrics), did too many cases fail, and does it clear the floors
of its config's ``[gate]`` table (CONTRACT section 25)?

All three are check specs of ``run_summary`` (``RUN_SUMMARY_CHECKS``), evaluated by the
step that materializes it (``shards.summarize_run``): no step of their own to hand
off, launch and set up after the summary (issue 24, item 5), so they live in the
evaluation layer. Each function here is one check's result.
"""

from dataclasses import dataclass

import dagster as dg

from ragproof_assets.evaluation.resources import CheckSettings
from ragproof_core.compare import MixedJudgesError, broken, check_floors, compare_stored_runs
from ragproof_core.store import RunStore, stored_run_settings

RUN_SUMMARY = "run_summary"


@dataclass(frozen=True)
class SummaryCheck:
    """One check of ``run_summary``: its name and what it checks."""

    name: str
    description: str

    def spec(self, asset: dg.AssetKey, *, blocking: bool) -> dg.AssetCheckSpec:
        return dg.AssetCheckSpec(
            self.name, asset=asset, description=self.description, blocking=blocking
        )


NO_REGRESSION = SummaryCheck(
    "no_regression",
    "Compares this run with the last completed run of the same dataset, adapter "
    "and scoring settings (run.k, run.source_match, run.metrics) (paired, over the cases both "
    "scored) and fails when a metric got significantly worse by "
    "more than the tolerance.",
)
FAILURE_RATE = SummaryCheck(
    "failure_rate",
    "Fails when the share of cases with a case failure or a judge error is above "
    "the configured maximum.",
)
FLOORS = SummaryCheck(
    "floors",
    "Applies the floors of the run's [gate] table (CONTRACT section 25), as "
    "`ragproof check` does: fails when a metric's mean, or with every_case any scored case, "
    "is outside its bound, or fewer than min_scored cases were scored.",
)
RUN_SUMMARY_CHECKS = (NO_REGRESSION, FAILURE_RATE, FLOORS)


def run_summary_check_specs(asset: dg.AssetKey, *, blocking: bool) -> tuple[dg.AssetCheckSpec, ...]:
    """The checks' specs on ``asset`` (a suite's run_summary is prefixed). Blocking: a
    failed check fails the run and holds back what depends on the summary."""
    return tuple(check.spec(asset, blocking=blocking) for check in RUN_SUMMARY_CHECKS)


def no_regression(
    run_store: RunStore,
    run_id: str,
    checks: CheckSettings,
    severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.WARN,
) -> dg.AssetCheckResult:
    """``severity``: of a regression found (a blocking check blocks only with ERROR)."""
    current = run_store.get_run(run_id)
    baseline = run_store.last_completed_run(
        current.dataset,
        current.adapter,
        before_run_id=run_id,
        run_settings=stored_run_settings(current),
    )
    if baseline is None:
        return dg.AssetCheckResult(
            check_name=NO_REGRESSION.name,
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
            check_name=NO_REGRESSION.name,
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
        check_name=NO_REGRESSION.name,
        passed=not worse,
        severity=severity,
        metadata={
            "baseline": baseline.run_id,
            "regressed": ", ".join(m.metric for m in worse) or "none",
            "comparison": dg.MetadataValue.md(f"```\n{comparison.render_table()}\n```"),
            "tolerance": checks.regression_tolerance,
        },
    )


def failure_rate(run_store: RunStore, run_id: str, checks: CheckSettings) -> dg.AssetCheckResult:
    # Two columns of the results, never a million result objects.
    failed_cases, cases = run_store.failed_case_share(run_id)
    share = failed_cases / cases if cases else 0.0
    return dg.AssetCheckResult(
        check_name=FAILURE_RATE.name,
        passed=share <= checks.max_failure_share,
        metadata={
            "failed_cases": failed_cases,
            "cases": cases,
            "share": dg.MetadataValue.float(share),
            "max_share": checks.max_failure_share,
        },
    )


def floors(run_store: RunStore, run_id: str) -> dg.AssetCheckResult:
    gate = run_store.run_manifest(run_id).gate
    if not gate:
        return dg.AssetCheckResult(
            check_name=FLOORS.name,
            passed=True,
            metadata={"floors": "none: the run's config has no [gate] table"},
        )
    results = check_floors(run_store, run_id, gate)
    failed = broken(results)
    return dg.AssetCheckResult(
        check_name=FLOORS.name,
        passed=not failed,
        metadata={
            "broken": ", ".join(r.metric for r in failed) or "none",
            "floors": dg.MetadataValue.md("\n".join(f"- `{r.line()}`" for r in results)),
            "results": dg.MetadataValue.json([r.to_dict() for r in results]),
        },
    )
