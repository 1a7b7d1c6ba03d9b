"""Pausing Python's cyclic garbage collector while a run builds objects in bulk.

Loading and scoring 100,000 cases builds millions of small objects (chunks,
cases, results) that hold no reference cycles. With the collector on, every
full collection rescans all of them; measured on the retrieval benchmark, that
was two thirds of the scoring time. Reference counting still frees everything
while the collector is paused; only garbage in cycles waits until it resumes.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Disable the cyclic collector inside the block; nesting is safe."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextmanager
def imports_paused() -> Iterator[None]:
    """Pause the collector while a process imports modules (objects it keeps to its end).

    In a process that freezes its objects (the `ragproof` script and the step
    forkserver do, so that no collection rescans its modules), what the block
    built is frozen before the collector resumes: resumed first, the collector's
    next run would scan every object built while it was paused, as it counts
    allocations while disabled (0.2 to 0.6 s of CPU after a command's imports).
    Elsewhere (a test calling the command line in-process) nothing is frozen.
    """
    with collector_paused():
        yield
        if gc.get_freeze_count():
            gc.freeze()
