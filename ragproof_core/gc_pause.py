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
