"""Evaluation runs launched by time or by the project's own assets.

Both request one new run partition of an evaluation's job (``factory.py``) with the
run config of one launch form, so a run launched this way is the run ``ragproof
run`` makes of the same form:

- ``scheduled_evaluation``: on a cron schedule (a suite of ``suites.toml``, or a
  suite whose ``automation`` is a cron string);
- ``evaluation_on_deps``: a sensor, running by default, that launches one run at
  its first tick after any of the suite's deps was materialized (``automation:
  on_deps``). Declarative automation cannot create the run's partition, a
  sensor can: it adds the partition with the request. Every materialization
  since the last run requested is one reason for one run, so two in one tick
  launch one run; the cursor is the newest materialization's storage id, and
  the run key is that id too, so a cursor lost with a restart does not launch it
  twice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import dagster as dg

from ragproof_assets.evaluation.config import LaunchForm
from ragproof_assets.evaluation.factory import Evaluation
from ragproof_assets.evaluation.run_tags import RUN_ID_TAG, SOURCE_TAG
from ragproof_core.store import new_run_id

# How often the daemon evaluates an on_deps sensor at most: a run starts within about
# this long of the dep's materialization (plus the daemon's own loop).
ON_DEPS_INTERVAL_S = 5


def _request(
    evaluation: Evaluation, form: LaunchForm, run_id: str, run_key: str, tags: Mapping[str, str]
) -> dg.RunRequest:
    return dg.RunRequest(
        run_key=run_key,
        partition_key=run_id,
        run_config=evaluation.shape.run_config(form),
        tags={**tags, RUN_ID_TAG: run_id},
    )


def scheduled_evaluation(
    name: str,
    evaluation: Evaluation,
    form: LaunchForm,
    *,
    cron: str,
    timezone: str,
    running: bool,
    tags: Mapping[str, str],
    description: str,
) -> dg.ScheduleDefinition:
    """A schedule launching one run of ``form`` each tick; ``running``: on by default."""

    @dg.schedule(
        name=name,
        job=evaluation.job,
        cron_schedule=cron,
        execution_timezone=timezone,
        default_status=dg.DefaultScheduleStatus.RUNNING
        if running
        else dg.DefaultScheduleStatus.STOPPED,
        description=description,
    )
    def launch(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
        run_id = new_run_id()
        # Schedules cannot request dynamic partitions the way sensors can, so the
        # partition is added before the run request that names it.
        context.instance.add_dynamic_partitions(evaluation.shape.partitions.name, [run_id])
        return _request(evaluation, form, run_id, run_id, {SOURCE_TAG: "schedule", **tags})

    return launch


def newest_materialization(
    instance: dg.DagsterInstance, deps: Sequence[dg.AssetKey], after: int
) -> int | None:
    """The storage id of the newest materialization of any of ``deps`` after ``after``."""
    newest = None
    for key in deps:
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, after_storage_id=after), limit=1
        ).records
        if records and (newest is None or records[0].storage_id > newest):
            newest = records[0].storage_id
    return newest


def evaluation_on_deps(
    name: str,
    evaluation: Evaluation,
    form: LaunchForm,
    *,
    tags: Mapping[str, str],
    description: str,
) -> dg.SensorDefinition:
    """A sensor, running by default, launching one run of ``form`` after any of the
    evaluation's deps is materialized."""
    deps = evaluation.shape.deps

    @dg.sensor(
        name=name,
        job=evaluation.job,
        minimum_interval_seconds=ON_DEPS_INTERVAL_S,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=description,
    )
    def launch(context: dg.SensorEvaluationContext):
        seen = json.loads(context.cursor)["storage_id"] if context.cursor else 0
        newest = newest_materialization(context.instance, deps, seen)
        if newest is None:
            named = ", ".join(key.to_user_string() for key in deps)
            return dg.SkipReason(
                f"no materialization of {named} since the last evaluation it launched"
                if seen
                else f"{named}: not materialized yet"
            )
        run_id = new_run_id()
        return dg.SensorResult(
            run_requests=[
                _request(evaluation, form, run_id, f"deps-{newest}", {SOURCE_TAG: "deps", **tags})
            ],
            dynamic_partitions_requests=[evaluation.shape.partitions.build_add_request([run_id])],
            cursor=json.dumps({"storage_id": newest}),
        )

    return launch
