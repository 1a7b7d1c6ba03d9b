"""What the forkserver of `ragproof run --shards N` imports once, for every step
process forked from it: the modules a step imports before its step's first line
(``execution.step_preload_modules``) and the job it reconstructs, imported and
built with the collector paused, then frozen, so no step process's collections
rescan them (nor copy their pages by touching them, as a collection would after
the fork).

The forkserver ends with the command that started it (``end_with_parent``): the
command starts it before it has validated its input (``step_server.py``), and a
refused run must leave no process behind, where Python's forkserver would finish
its seconds of imports before it noticed that its command had gone.
"""

from __future__ import annotations

import ctypes
import gc
import importlib
import signal
import sys

from ragproof_core.gc_pause import collector_paused

# prctl(2): deliver a signal to this process when its parent ends.
PR_SET_PDEATHSIG = 1


def end_with_parent() -> None:
    """Have the kernel end this process when the process that started it ends (Linux;
    elsewhere the forkserver ends after its imports, at its closed pipe). Its step
    processes, forked later, do not inherit this."""
    if sys.platform != "linux":
        return
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def preload() -> None:
    end_with_parent()
    with collector_paused():
        # Inside the pause: this import alone brings Dagster and the code location.
        from ragproof_cli import execution

        for name in execution.step_preload_modules():
            try:
                importlib.import_module(name)
            except ImportError:
                # As the forkserver's own preload does: the step imports it and says why not.
                continue
        # The job as every step reconstructs it: its repository, resources and asset job
        # built once here and inherited, where each step process built them for itself
        # (about a tenth of a step's own time before its body; docs/benchmarks.md).
        execution.evaluate_job_def()
        # Before the collector resumes: its first run would scan every object above.
        gc.freeze()


preload()
