"""Launching an evaluation from the Dagster UI without inventing a partition key.

Evaluation runs are dynamic partitions named by run id, and the UI's
Materialize button on a dynamically partitioned asset asks for a partition
that does not exist yet. So the UI path is a plain job:

1. Jobs -> ``launch_evaluation`` -> Launchpad: the form is ``EvalRunConfig``
   (the dataset defaults to the shipped demo), then Launch Run.
2. Its one op validates the dataset and config (bad input fails *this* run with
   the reason, and creates nothing), picks a fresh run id, adds it to the
   ``evaluation_runs`` partitions and tags its own Dagster run with it.
3. The ``launch_evaluation_sensor`` (running by default under ``dagster dev``)
   sees the finished launch and requests the partitioned ``evaluate`` run,
   tagged with the launch's Dagster run id (``run_tags``); once it starts, the
   launch is tagged with the ``evaluate`` run's id in return.

The sensor looks at recent successful launches on every tick and dedupes by
``run_key`` (the launch's Dagster run id), so a launch is evaluated exactly
once even across daemon restarts, and none is missed before the first tick.
"""

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import dagster as dg
from pydantic import Field

from ragproof_assets.evaluation.config import EvalRunConfig, evaluate_run_config
from ragproof_assets.evaluation.jobs import evaluate_job
from ragproof_assets.evaluation.partitions import evaluation_runs
from ragproof_assets.evaluation.run_tags import LAUNCHED_BY_TAG, RUN_ID_TAG, SOURCE_TAG
from ragproof_core.config import ConfigError, check_environment
from ragproof_core.data.dataset import DatasetError, load_dataset
from ragproof_core.judge import judge_environment
from ragproof_core.run import check_judge_credentials
from ragproof_core.store import new_run_id

LAUNCH_JOB = "launch_evaluation"
LAUNCH_OP = "request_evaluation"  # an op may not share its job's name
DEMO_DATASET = "data/demo/cases.jsonl"
# Launches older than this are not picked up by a sensor that was off meanwhile.
LOOKBACK = timedelta(days=1)


class LaunchConfig(EvalRunConfig):
    """The launch form: the evaluation's own config, with the demo dataset as default."""

    dataset: str = Field(
        default=DEMO_DATASET,
        description="Dataset file (JSON Lines or Parquet), relative to the folder `dagster dev` "
        f"runs in (default: the demo, {DEMO_DATASET}).",
    )


@dg.op(
    name=LAUNCH_OP,
    description="Validate the form, then create the evaluation run's partition; the "
    "launch_evaluation_sensor starts the `evaluate` run for it.",
)
def launch_evaluation_op(context: dg.OpExecutionContext, config: LaunchConfig) -> str:
    try:
        # The judge's environment too: a budget nothing can price is refused here,
        # before a partition exists, as `ragproof run` refuses it.
        resolved = config.resolve()
        # Every ${NAME} it names set (CONTRACT section 28): an unset one is refused here.
        check_environment(resolved)
        # Its credentials too (CONTRACT section 24): a key not set is refused here.
        check_judge_credentials(resolved, judge_environment(resolved.judge))
        cases = load_dataset(config.dataset_file())
    except (DatasetError, ConfigError, ValueError) as exc:
        raise dg.Failure(description=str(exc), allow_retries=False) from exc
    run_id = new_run_id()
    context.instance.add_dynamic_partitions(evaluation_runs.name, [run_id])
    context.instance.add_run_tags(context.run_id, {RUN_ID_TAG: run_id})
    context.log.info(
        f"evaluation run {run_id} requested ({len(cases)} cases); the launch_evaluation_sensor "
        f"starts it within seconds (Runs shows it as `evaluate`, partition {run_id})"
    )
    return run_id


@dg.job(
    name=LAUNCH_JOB,
    description="Start an evaluation from the UI: fill the form in the Launchpad and launch. "
    "A new run id (= partition) is created for you.",
    tags={SOURCE_TAG: "ui"},
    # One small op (a partition and a tag): a step process of its own would cost its
    # imports (seconds) for milliseconds of work, whatever executor the evaluation uses.
    executor_def=dg.in_process_executor,
)
def launch_evaluation_job() -> None:
    launch_evaluation_op()


def evaluation_config(launch_run_config: dict[str, Any]) -> dict[str, Any]:
    """The `evaluate` job's run config from a launch run's config."""
    fields = dict(launch_run_config.get("ops", {}).get(LAUNCH_OP, {}).get("config", {}) or {})
    fields.setdefault("dataset", DEMO_DATASET)
    # Launches recorded before progress left the form (a run tag now) may still carry it.
    fields.pop("progress", None)
    return evaluate_run_config(EvalRunConfig(**fields))


def launch_requests(runs: Iterable[dg.DagsterRun]) -> list[dg.RunRequest]:
    """One `evaluate` run request per finished launch that recorded its run id."""
    requests = []
    for run in runs:
        run_id = run.tags.get(RUN_ID_TAG)
        if not run_id:
            continue
        requests.append(
            dg.RunRequest(
                run_key=run.run_id,
                partition_key=run_id,
                run_config=evaluation_config(run.run_config),
                # The launch carries the run id tag too: clicking it lists both runs.
                tags={SOURCE_TAG: "ui", LAUNCHED_BY_TAG: run.run_id, RUN_ID_TAG: run_id},
            )
        )
    return requests


@dg.sensor(
    job=evaluate_job,
    minimum_interval_seconds=5,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Starts the `evaluate` run for each successful launch_evaluation run.",
)
def launch_evaluation_sensor(context: dg.SensorEvaluationContext):
    runs = context.instance.get_runs(
        filters=dg.RunsFilter(
            job_name=LAUNCH_JOB,
            statuses=[dg.DagsterRunStatus.SUCCESS],
            created_after=datetime.now(UTC) - LOOKBACK,
        ),
        limit=100,
    )
    requests = launch_requests(runs)
    return requests or dg.SkipReason("no new launch_evaluation run")
