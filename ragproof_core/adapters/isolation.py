"""An async adapter on its own event loop, in its own thread.

An async method that blocks (``time.sleep`` where it meant ``asyncio.sleep``, a
sync client called from a coroutine) would block the run's event loop: no
timeout could fire, and the judge would stall with it. ``IsolatedAdapter``
runs the adapter's coroutines on a loop of their own, so the run's loop awaits
them like any other future, times them out (``run.timeout_s``) and moves on;
a blocked adapter then delays only its own calls. The adapter's ``aclose`` runs
on that loop too, so resources it bound to the loop are released there.

ragproof's own async adapters, which never block, say so with
``shares_event_loop = True`` and are not wrapped (a recorded replay of a
million cases would otherwise pay a thread hop per case).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from ragproof_core.adapters.escapes import AdapterEscape, must_propagate

# The methods the runner calls; others pass through untouched.
_CALLED = ("run_case", "retrieve", "answer")


def is_async_method(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
    )


def needs_isolation(adapter: object) -> bool:
    if getattr(adapter, "shares_event_loop", False):
        return False
    return any(is_async_method(getattr(adapter, name, None)) for name in _CALLED)


class IsolatedAdapter:
    """``adapter`` with its async methods run on a private loop thread; every other
    attribute is the adapter's own."""

    def __init__(self, adapter: object) -> None:
        self.adapter = adapter
        self._loop = asyncio.new_event_loop()
        threading.Thread(
            target=self._loop.run_forever, name="ragproof-adapter-loop", daemon=True
        ).start()
        for name in _CALLED:
            fn = getattr(adapter, name, None)
            if callable(fn):
                setattr(self, name, self._on_own_loop(fn) if is_async_method(fn) else fn)

    def __getattr__(self, name: str) -> Any:  # only for names not set above
        return getattr(self.adapter, name)

    def __repr__(self) -> str:
        return repr(self.adapter)

    def _on_own_loop(self, fn: Callable[..., Coroutine[Any, Any, Any]]):
        # wraps: the runner reads the method's signature (does it take ``history``?).
        @functools.wraps(fn)
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await self._run(fn, *args, **kwargs)

        return call

    async def _run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        # Cancelling the awaiting task (a timeout) cancels the coroutine on its loop
        # as soon as that loop runs again.
        future = asyncio.run_coroutine_threadsafe(_guarded(fn, *args, **kwargs), self._loop)
        return await asyncio.wrap_future(future)

    async def aclose(self) -> None:
        try:
            close = getattr(self.adapter, "aclose", None)
            if callable(close):
                await self._run(close)
            elif callable(getattr(self.adapter, "close", None)):
                self.adapter.close()
        finally:
            # Not joined: a loop still blocked by the adapter ends with the process.
            self._loop.call_soon_threadsafe(self._loop.stop)


async def _guarded(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return await fn(*args, **kwargs)
    except BaseException as exc:
        # SystemExit inside a task would end this loop's thread, and every later
        # call would wait forever: it fails this call instead.
        if must_propagate(exc):
            raise
        if isinstance(exc, Exception):
            raise
        raise AdapterEscape(exc) from None
