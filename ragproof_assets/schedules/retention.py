"""A suite's ``keep_last`` (``suites.toml``, CONTRACT section 31), applied after each of
its runs: the suite's runs beyond the newest N leave the store and Dagster together,
as ``ragproof gc --keep-last N --suite NAME`` removes them (``collect_garbage``, runs
somebody labelled, calibrated or probed kept).

Two run status sensors, running by default, watch the evaluation's job: one for the
runs that succeed, one for those that fail (a run of bad input is a stored run too).
A run of a suite without ``keep_last``, or of no suite, is left alone.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import dagster as dg

from ragproof_assets.evaluation.factory import Evaluation
from ragproof_assets.evaluation.partitions import forget_run_partition
from ragproof_assets.evaluation.resources import StoreResource
from ragproof_assets.evaluation.run_tags import SUITE_TAG
from ragproof_core.config import Suite
from ragproof_core.store.retention import Retention, collect_garbage

KEEP_LAST_SENSOR = "ragproof_keep_last"
# The run statuses after which a suite's keep_last is applied, and their sensors' names.
AFTER = {
    dg.DagsterRunStatus.SUCCESS: KEEP_LAST_SENSOR,
    dg.DagsterRunStatus.FAILURE: f"{KEEP_LAST_SENSOR}_after_failure",
}


def keep_last_sensors(
    suites: Sequence[Suite], evaluation: Evaluation
) -> list[dg.RunStatusSensorDefinition]:
    """The sensors applying each suite's ``keep_last``; none when no suite sets it. The
    store is the evaluation's own ``store`` resource (ragproof's own location's key)."""
    kept = {suite.name: suite.keep_last for suite in suites if suite.keep_last is not None}
    if not kept:
        return []
    listed = ", ".join(f"{name} ({n})" for name, n in kept.items())
    sensors = []
    for status, name in AFTER.items():

        @dg.run_status_sensor(
            run_status=status,
            name=name,
            monitored_jobs=[evaluation.job],
            default_status=dg.DefaultSensorStatus.RUNNING,
            description=f"After each run of a suite that sets keep_last ({listed}) ends in "
            f"{status.value}: the suite's runs beyond the newest keep_last removed from the "
            "store and from Dagster.",
        )
        def apply_keep_last(context: dg.RunStatusSensorContext, store: StoreResource):
            suite = context.dagster_run.tags.get(SUITE_TAG)
            if suite not in kept:
                return dg.SkipReason(f"run {context.dagster_run.run_id}: no suite with keep_last")
            report = collect_garbage(
                store.store(),
                Retention(keep_last=kept[suite], suite=suite),
                forget=functools.partial(
                    forget_run_partition, context.instance, evaluation.shape.partitions
                ),
            )
            context.log.info(
                f"suite {suite}, keep_last {kept[suite]}: {len(report.removed)} run(s) removed, "
                f"{report.bytes_freed} bytes freed"
                + "".join(f"; kept {run.run_id}: {run.kept_because}" for run in report.kept)
            )
            return None

        sensors.append(apply_keep_last)
    return sensors
