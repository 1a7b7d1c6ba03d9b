"""What an adapter may throw, made safe to carry and to print.

An adapter is user code: it may ``sys.exit()``, raise an exception whose
``__str__`` itself raises, or raise something that cannot travel through an
asyncio future (``SystemExit`` ends an event loop's thread). Each is the
failure of the call that raised it, never of the run: ``AdapterEscape`` carries
it as an ordinary ``Exception`` and ``exception_text`` describes it without
trusting its ``__str__``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

# How much of an exception's text is kept: error texts end up in the store and the
# terminal, and a 50 kB traceback-in-a-message from some library should not.
MAX_ERROR_CHARS = 1000


class AdapterEscape(Exception):
    """A ``BaseException`` (``SystemExit``, ``GeneratorExit``, ...) an adapter raised,
    carried as an ``Exception`` so it fails one call and nothing more."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(type(original).__name__)
        self.original = original


def must_propagate(exc: BaseException) -> bool:
    """Ctrl-C stops the run; a cancellation is ragproof's own (a timeout, a stop)."""
    return isinstance(exc, KeyboardInterrupt | asyncio.CancelledError)


def exception_text(exc: BaseException, mask: Callable[[str], str] | None = None) -> str:
    """``Kind: text`` (just ``Kind`` when the text is empty), bounded in length;
    an exception whose ``str()`` raises is described by its type alone. ``mask``: the
    run's secret values masked (``masking.Masker.text``) before the text is cut, so no
    part of a secret survives the cut."""
    if isinstance(exc, AdapterEscape):
        exc = exc.original
    kind = type(exc).__name__
    try:
        text = str(exc)
    except BaseException as broken:  # noqa: BLE001 - user code's __str__ may do anything
        if must_propagate(broken):
            raise
        text = f"<str() raised {type(broken).__name__}>"
    if mask is not None:
        text = mask(text)
    if len(text) > MAX_ERROR_CHARS:
        text = text[:MAX_ERROR_CHARS] + "..."
    return f"{kind}: {text}" if text else kind
