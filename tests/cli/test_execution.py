"""How `ragproof run` starts its step processes (ragproof_cli/execution.py)."""

from __future__ import annotations

import gc
import multiprocessing
import subprocess
import sys

import dagster as dg
import pytest

from ragproof_cli.execution import STEP_PRELOAD_MODULE, evaluate_job_def
from ragproof_cli.instance import ensure_dagster_home
from tests.support.cli import REPO, cli_env

# What a step process used to import for itself before its step's first line.
HEAVY = ("dagster", "sqlalchemy", "alembic", "upath", "fsspec", "ragproof_")


def _open_instance(ref, queue) -> None:
    """In a step process: open the instance and reconstruct the job as Dagster's step
    worker does; report the modules that took importing, how many objects the
    forkserver froze, and the memory blocks the job's reconstruction left allocated
    (its first build leaves over a thousand, a built job none)."""
    before = set(sys.modules)
    with dg.DagsterInstance.from_ref(ref) as instance:
        instance.get_runs(limit=1)
    blocks = sys.getallocatedblocks()
    evaluate_job_def()
    built = sys.getallocatedblocks() - blocks
    queue.put((sorted(set(sys.modules) - before), gc.get_freeze_count(), built))


def _fork_a_step_process(dagster_home: str, queue) -> None:
    """In a fresh interpreter (so no other test's forkserver is reused): the command's
    forkserver, and one process forked from it opening the instance."""
    import os

    os.environ["DAGSTER_HOME"] = dagster_home
    ensure_dagster_home()
    with dg.DagsterInstance.get() as instance:
        ref = instance.get_ref()
    context = multiprocessing.get_context("forkserver")
    # What `ragproof run --shards N` preloads (start_step_server).
    context.set_forkserver_preload([STEP_PRELOAD_MODULE])
    reply = context.Queue()
    step = context.Process(target=_open_instance, args=(ref, reply))
    step.start()
    queue.put(reply.get(timeout=120))
    step.join()


@pytest.mark.slow
def test_a_step_process_opens_the_instance_and_its_job_without_importing_or_building_them(
    tmp_path,
):
    spawn = multiprocessing.get_context("spawn")
    queue = spawn.Queue()
    command = spawn.Process(target=_fork_a_step_process, args=(str(tmp_path), queue))
    command.start()
    imported, frozen, built = queue.get(timeout=300)
    command.join()

    assert command.exitcode == 0
    assert [name for name in imported if name.startswith(HEAVY)] == []
    # The preloaded modules' objects, out of every collection a step runs.
    assert frozen > 100_000
    # The job was built in the forkserver, not again in the step.
    assert built < 100


def _probe(code: str, tmp_path) -> subprocess.CompletedProcess:
    """``code`` run in a fresh interpreter from the repository, its Dagster home under
    ``tmp_path``."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=cli_env(DAGSTER_HOME=str(tmp_path / "dh")),
        capture_output=True,
        text=True,
        timeout=300,
    )


# In a fresh interpreter: whether pandas is imported once `ragproof run` has imported
# what it runs (the command line, the Dagster layer), then once the forkserver's
# preload has run.
PANDAS_PROBE = (
    "import sys\n"
    "import ragproof_cli.run, ragproof_cli.execution\n"
    "print('pandas' in sys.modules)\n"
    "import ragproof_cli.step_preload\n"
    "print('pandas' in sys.modules)\n"
)


@pytest.mark.slow
def test_the_command_imports_no_pandas_before_its_run_and_the_forkserver_preloads_it(tmp_path):
    done = _probe(PANDAS_PROBE, tmp_path)
    assert done.stdout.split() == ["False", "True"], done.stderr


# In a fresh interpreter that freezes its imports, as the `ragproof` script does: whether
# opening the run's instance left its objects frozen, and how many objects the
# collector's next run would scan (a few hundred at most if they were frozen).
INSTANCE_PROBE = (
    "import gc\n"
    "from ragproof_cli import execution\n"
    "gc.freeze()\n"
    "before = gc.get_freeze_count()\n"
    "instance = execution.open_run_instance('run-1')\n"
    "print(gc.get_freeze_count() - before > 10_000, gc.get_count()[0] < 1_000, gc.isenabled())\n"
    "print(instance.get_dynamic_partitions('evaluation_runs'))\n"
)


@pytest.mark.slow
def test_the_run_instance_opens_frozen_with_its_partition(tmp_path):
    done = _probe(INSTANCE_PROBE, tmp_path)
    assert done.stdout.splitlines() == ["True True True", "['run-1']"], done.stderr
