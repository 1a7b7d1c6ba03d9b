"""How `ragproof run` executes the evaluation job.

The run is created the way a run launched from the UI is: with the job's
origin in the code location `dagster dev -w workspace.yaml` serves, so the
UI's Overview timeline and the job's run history (which place runs by that
origin and its repository tag) show command-line runs beside UI runs.
``execute_in_process`` and ``execute_job`` record no such origin.

One shard runs in this process with the in-process executor (the quickest
start). Several run with the multiprocess executor, every step in its own
process, the shards at the same time; the executor forks its step processes
from a forkserver that has imported once what every step imports (the code
location, the instance's storages, the command line itself), so a step starts
without importing anything. The command starts that forkserver early
(``step_server.py``): its imports run beside the command's own, the opening of
the instance and the creation of the run, not after them.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any

import dagster as dg

# Dagster has no public way to give a run created outside a code location
# server the origin the UI groups runs by; these are what the webserver records.
from dagster._core.definitions.repository_definition.valid_definitions import (
    SINGLETON_REPOSITORY_NAME,
)
from dagster._core.execution.api import execute_run
from dagster._core.remote_origin import (
    ManagedGrpcPythonEnvCodeLocationOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

from ragproof_assets.definitions import defs
from ragproof_assets.evaluation.config import (
    EVAL_OP,
    PRECHECKED_TAG,
    PROGRESS_NOTEBOOK,
    PROGRESS_TAG,
    PROGRESS_TERMINAL,
    RESUME_TAG,
    EvalRunConfig,
    evaluate_run_config,
)
from ragproof_assets.evaluation.partitions import evaluation_runs, forget_run_partition
from ragproof_assets.evaluation.run_tags import RUN_ID_TAG, SOURCE_TAG
from ragproof_cli import step_server
from ragproof_cli.errors import FAULT_ERRNOS, UsageError, one_line, store_fault_line
from ragproof_cli.instance import instance_modules, open_instance_with_partition, use_dagster_home
from ragproof_cli.interrupts import Interrupts
from ragproof_cli.step_server import STEP_PRELOAD_MODULE
from ragproof_core.config import RUN_KEYS, store_root
from ragproof_core.gc_pause import collector_paused, imports_paused
from ragproof_core.store import RunStore, new_run_id
from ragproof_core.store_health import STORE_FAULT

JOB_NAME = "evaluate"
# workspace.yaml's one code location: its module and its location_name.
DEFINITIONS_MODULE = "ragproof_assets.definitions"
CODE_LOCATION = "ragproof"
# The multiprocess executor imports its own module first in the forkserver (and puts
# it first when missing); named here so the list started early is the executor's own.
EXECUTOR_MODULE = "dagster._core.executor.multiprocess"
# Where a step process opens the instance from the reference it is handed.
INSTANCE_FACTORY_MODULE = "dagster._core.instance.factory"
CLI_PACKAGE = "ragproof_cli"
# Imported by a step's first ``pa.array`` of a list (pyarrow looks for pandas' types):
# every step builds Arrow columns, and the code location no longer imports pandas.
PANDAS = "pandas"


def evaluate_job_def() -> dg.JobDefinition:
    """The job, built where ``dg.reconstructable`` can find it again in a step process."""
    return defs.resolve_job_def(JOB_NAME)


def evaluate_in_process_job_def() -> dg.JobDefinition:
    """The job with every step in the run's own process, whatever RAGPROOF_EXECUTOR says."""
    return evaluate_job_def().with_executor_def(dg.in_process_executor)


def uses_step_processes(shards: int) -> bool:
    """Whether the run's steps run in processes forked from this command's forkserver:
    several shards, and the multiprocess executor (RAGPROOF_EXECUTOR unset)."""
    return shards > 1 and evaluate_job_def().executor_def.name == "multi_or_in_process_executor"


def step_preload_modules() -> list[str]:
    """What every step process imports before its step's first line, imported once in
    the forkserver instead: the executor, the instance's storages (opened from the
    instance reference each step gets), the code location, pandas, and the command
    line, which the `ragproof` script imports and multiprocessing runs that script
    again in every process it starts (Python 3.11's forkserver ignores ``__main__``
    here)."""
    return [
        EXECUTOR_MODULE,
        INSTANCE_FACTORY_MODULE,
        *instance_modules(use_dagster_home()),
        DEFINITIONS_MODULE,
        PANDAS,
        CLI_PACKAGE,
    ]


def start_step_server(shards: int, *, debug: bool = False) -> None:
    """Start the forkserver the run's step processes fork from, if the run has them and
    the command line did not start it already (``step_server.py``).

    Its imports (``step_preload.py``) take seconds; started now, they run while this
    process opens the instance and creates the run. The executor finds it running and
    uses it (its preload list, ``multiprocess_config``'s, is the same but for the
    executor's own module, which it puts first).
    """
    if uses_step_processes(shards):
        step_server.start(debug=debug)


def multiprocess_config(shards: int) -> dict[str, Any]:
    """The job's executor config for ``shards`` steps at once."""
    return {
        "config": {
            "multiprocess": {
                "max_concurrent": shards,
                "start_method": {"forkserver": {"preload_modules": [STEP_PRELOAD_MODULE]}},
            }
        }
    }


def workspace_job_origin(job_name: str) -> RemoteJobOrigin:
    """The job as the workspace's code location serves it to the UI."""
    location = ManagedGrpcPythonEnvCodeLocationOrigin(
        loadable_target_origin=LoadableTargetOrigin(
            executable_path=sys.executable,
            module_name=DEFINITIONS_MODULE,
            working_directory=os.getcwd(),
        ),
        location_name=CODE_LOCATION,
    )
    return RemoteJobOrigin(
        repository_origin=RemoteRepositoryOrigin(
            code_location_origin=location, repository_name=SINGLETON_REPOSITORY_NAME
        ),
        job_name=job_name,
    )


def execute_evaluation(
    instance: dg.DagsterInstance,
    run_id: str,
    run_config: dict[str, Any],
    shards: int,
    tags: dict[str, str],
):
    """Run the evaluation job for partition ``run_id``; returns Dagster's result."""
    if shards <= 1:
        job = dg.reconstructable(evaluate_in_process_job_def)
    else:
        job = dg.reconstructable(evaluate_job_def)
        if uses_step_processes(shards):
            run_config = {**run_config, "execution": multiprocess_config(shards)}
        # Otherwise RAGPROOF_EXECUTOR chose an executor whose settings live in the deployment.
    # The run's plan and snapshots are built in bulk; the collector resumes after.
    with collector_paused():
        job_def = job.get_definition()
        run = instance.create_run_for_job(
            job_def=job_def,
            run_config=run_config,
            tags={**job_def.run_tags, **tags, "dagster/partition": run_id},
            remote_job_origin=workspace_job_origin(JOB_NAME),
            job_code_origin=job.get_python_origin(),
        )
    return execute_run(job, run, instance, raise_on_error=False)


def launch_form(args: argparse.Namespace) -> EvalRunConfig:
    """The evaluation's launch form filled from the command line: the form the UI's
    Launchpad and the schedule fill, resolved into settings the same way."""
    return EvalRunConfig(
        dataset=args.dataset,
        config_file=args.config,
        adapter=args.adapter,
        no_cache=args.no_cache,
        judge_repeats=args.judge_repeats,
        # Lists, as the form's run config is stored as JSON; None is "not given".
        **{name: _listed(getattr(args, name)) for name in RUN_KEYS},
    )


def _listed(value: Any) -> Any:
    if isinstance(value, list):  # a repeated flag's (key, value) pairs: a table
        return dict(value)
    return list(value) if isinstance(value, tuple) else value


def open_run_instance(run_id: str) -> dg.DagsterInstance:
    """The persistent instance, with partition ``run_id`` added for the run."""
    # Opening the instance imports SQLAlchemy, Alembic and the storages, objects the
    # collector would only rescan as they load (about a quarter of its CPU time); frozen
    # before it resumes, or its first run scans all of them once more (0.05 s of CPU
    # before the run starts, for a few thousand objects it would free).
    with imports_paused():
        return open_instance_with_partition(evaluation_runs.name, run_id)


# The statuses `run --resume` continues (CONTRACT section 29).
RESUMABLE = ("interrupted", "aborted:budget", "aborted:judge")


def resume_form(run_id: str, config_file: str | None) -> EvalRunConfig:
    """The launch form run ``run_id`` was started with (its Dagster run's config), with
    ``config_file`` given anew if any; refused (``UsageError``, exit 1) unless the run is
    interrupted or aborted."""
    store = RunStore(store_root())
    found = store.catalog_files(run_id)
    if found is None or not store.run_exists(run_id):
        raise UsageError(f"run --resume {run_id}: no such run in the store")
    status = found[0]
    if status not in RESUMABLE:
        raise UsageError(
            f"run --resume {run_id}: the run is {status}; only an interrupted or aborted "
            "run can be resumed"
        )
    manifest = store.read_manifest(run_id)
    run = dg.DagsterInstance.get().get_run_by_id(manifest.get("dagster_run_id") or "")
    fields = (
        dict(run.run_config["ops"][EVAL_OP]["config"])
        if run is not None
        else {"dataset": manifest["dataset_path"]}
    )
    if config_file is not None:
        fields["config_file"] = config_file
    return EvalRunConfig(**fields)


def progress_where(*, notebook: bool, terminal: bool) -> str | None:
    """Where a person watches the run (``run_evaluation``'s ``progress``): a notebook's
    kernel first (its stderr may look like a terminal), else a terminal, else nowhere."""
    if notebook:
        return PROGRESS_NOTEBOOK
    return PROGRESS_TERMINAL if terminal else None


def run_evaluation(
    form: EvalRunConfig,
    shards: int,
    *,
    debug: bool,
    progress: str | None,
    resume: str | None = None,
) -> tuple[str, Any]:
    """A new partition for the run and the evaluate job run on it: the run id and
    Dagster's result. ``progress``: where a person watches the run, so its progress bar
    is drawn there (``PROGRESS_TERMINAL``, ``PROGRESS_NOTEBOOK``), or None. A
    signal stops the run and keeps it (``interrupts.py``; ``RunStore.stop_signal``
    then says which)."""
    # Its imports run while this process opens the instance and creates the run.
    start_step_server(shards, debug=debug)
    run_id = resume or new_run_id()
    tags = {
        SOURCE_TAG: "cli",
        RUN_ID_TAG: run_id,
        # The command has just built a live adapter: the dataset step need not.
        PRECHECKED_TAG: "true",
    }
    if progress is not None:
        tags[PROGRESS_TAG] = progress
    if resume is not None:
        tags[RESUME_TAG] = "true"
    instance = open_run_instance(run_id)
    # One shard runs in this process; more run as parallel step processes.
    store = RunStore(store_root())
    interrupts = Interrupts(lambda signum: store.request_stop(run_id, signum))

    def execute():
        # The command beats for the run between its steps too (CONTRACT section 29):
        # killed, it stops, and the run is listed interrupted 15 s later.
        with store.heartbeat(run_id, once_started=True):
            return execute_evaluation(
                instance,
                run_id,
                run_config=evaluate_run_config(
                    form,
                    # Dagster's own step-failure dump is for the UI's logs; the command
                    # prints one line per failure (--debug shows Dagster's log too).
                    loggers={
                        "console": {"config": {"log_level": "ERROR" if debug else "CRITICAL"}}
                    },
                ),
                shards=shards,
                tags=tags,
            )

    result = interrupts.run(execute)
    stopped = interrupts.signum is not None and (
        not store.is_finished(run_id) or store.get_run(run_id).status == "interrupted"
    )
    if stopped:
        # The run ended on a signal: Dagster records it CANCELED, never left STARTED.
        run = instance.get_run_by_id(result.run_id)
        if run is not None and run.status != dg.DagsterRunStatus.CANCELED:
            instance.report_run_canceled(run, message="ragproof run interrupted by a signal")
    return run_id, result


def forget_run(run_id: str, result) -> None:
    """Remove a run that failed on its input before storing anything (its dataset step
    validates the dataset and the recording): its Dagster run, logs and partition, so
    the UI lists no run the store does not hold (CONTRACT section 14)."""
    instance = dg.DagsterInstance.get()
    instance.delete_run(result.run_id)
    instance.compute_log_manager.delete_logs(prefix=[result.run_id])
    instance.delete_dynamic_partition(evaluation_runs.name, run_id)


def forget_partition(run_id: str) -> None:
    """Remove a run's partition and every Dagster run of it (``ragproof gc``): the store's
    run and Dagster's go together. Through Dagster's public API only."""
    forget_run_partition(dg.DagsterInstance.get(), evaluation_runs, run_id)


# An OSError as a step's failure reports it: ``[Errno N] ERROR: 'FILE'``.
_OS_ERROR = re.compile(r"\[Errno (\d+)\] (.*?)(?:: '(.*)')?$")
_OS_ERRORS = ("OSError", "PermissionError", "FileNotFoundError", "IOError")


def disk_fault(cls_name: str, message: str) -> str | None:
    """``the store could not be written: FILE: ERROR`` (the file relative to the store
    or DAGSTER_HOME) when a step failed on a disk's fault (full, read-only, quota, I/O)
    the store's writers did not report themselves (CONTRACT section 29: exit 5)."""
    match = _OS_ERROR.match(message.removeprefix(f"{cls_name}: "))
    if cls_name not in _OS_ERRORS or match is None:
        return None
    exc = OSError(int(match.group(1)), match.group(2), match.group(3))
    if exc.errno not in FAULT_ERRNOS:
        return None
    line = store_fault_line(exc)
    if line is not None and line.startswith("the store: "):
        return f"{STORE_FAULT}: {line.removeprefix('the store: ')}"
    return line


def step_failures(result) -> tuple[list[str], bool]:
    """The failed steps' messages, and whether any failure was a bug rather than bad input.

    Input problems are raised as ``dg.Failure`` with a one-line description; any
    other exception in a step is an internal error.
    """
    messages, internal = [], False
    for event in result.all_events:
        if not event.is_step_failure:
            continue
        data = event.step_failure_data
        if data.user_failure_data is not None and data.user_failure_data.description:
            messages.append(data.user_failure_data.description)
        elif data.error is not None:
            # Dagster wraps the step's exception; the innermost cause is the bug itself.
            error = data.error
            while error.cause is not None:
                error = error.cause
            text = one_line(error.message)
            fault = disk_fault(error.cls_name, text)
            if fault is not None:  # a disk's fault met by a step: the store's, not a bug
                messages.append(fault)
                continue
            internal = True
            messages.append(
                text if text.startswith(f"{error.cls_name}") else f"{error.cls_name}: {text}"
            )
    if not messages:
        internal = True
        messages.append("the evaluation run failed; see the Dagster UI for its logs")
    return messages, internal
