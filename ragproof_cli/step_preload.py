"""What the forkserver of `ragproof run --shards N` imports once, for every step
process forked from it: the modules a step imports before its step's first line
(``execution.step_preload_modules``), imported with the collector paused, then
frozen, so no step process's collections rescan them (nor copy their pages by
touching them, as a collection would after the fork)."""

from __future__ import annotations

import gc
import importlib

from ragproof_core.gc_pause import collector_paused


def preload() -> None:
    with collector_paused():
        # Inside the pause: this import alone brings Dagster and the code location.
        from ragproof_cli import execution

        for name in execution.step_preload_modules():
            try:
                importlib.import_module(name)
            except ImportError:
                # As the forkserver's own preload does: the step imports it and says why not.
                continue
        # Before the collector resumes: its first run would scan every object above.
        gc.freeze()


preload()
