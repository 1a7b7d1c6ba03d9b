"""How `ragproof run` executes the evaluation job.

One shard: ``execute_in_process`` (one process, the quickest start). Several:
``execute_job`` on the reconstructable job with the multiprocess executor,
so every shard step runs in its own process at the same time, recorded in
the persistent instance like a run launched from the UI. The executor forks
its step processes from a forkserver that has imported the code location
once, so a step starts without re-importing Dagster and ragproof.
"""

from __future__ import annotations

from typing import Any

import dagster as dg

from ragproof_assets.definitions import defs

JOB_NAME = "evaluate"


def evaluate_job_def() -> dg.JobDefinition:
    """The job, built where ``dg.reconstructable`` can find it again in a step process."""
    return defs.resolve_job_def(JOB_NAME)


def multiprocess_config(shards: int) -> dict[str, Any]:
    """The job's executor config for ``shards`` steps at once."""
    return {
        "config": {
            "multiprocess": {
                "max_concurrent": shards,
                "start_method": {
                    "forkserver": {"preload_modules": ["ragproof_assets.definitions"]}
                },
            }
        }
    }


def execute_evaluation(
    instance: dg.DagsterInstance,
    run_id: str,
    run_config: dict[str, Any],
    shards: int,
    tags: dict[str, str],
):
    """Run the evaluation job for partition ``run_id``; returns Dagster's result."""
    if shards <= 1:
        return evaluate_job_def().execute_in_process(
            run_config=run_config,
            instance=instance,
            partition_key=run_id,
            raise_on_error=False,
            tags=tags,
        )
    if evaluate_job_def().executor_def.name == "multi_or_in_process_executor":
        run_config = {**run_config, "execution": multiprocess_config(shards)}
    # Otherwise RAGPROOF_EXECUTOR chose an executor whose settings live in the deployment.
    return dg.execute_job(
        dg.reconstructable(evaluate_job_def),
        instance=instance,
        run_config=run_config,
        tags={**tags, "dagster/partition": run_id},
        raise_on_error=False,
    )
