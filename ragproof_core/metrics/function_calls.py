"""A function metric's calls, each bounded in time and in what it may throw (CONTRACT 21).

The user's function is user code: it may sleep for ever, ``sys.exit()``, raise
``KeyboardInterrupt``, or raise an exception whose ``__str__`` raises. Each is that
metric's error on that case, never the run's failure and never a hung run.

A call runs on a daemon thread of the function's own and the caller waits at most
``timeout_s`` for it. Threads cannot be killed: a call that outlives its time keeps
its thread, which is abandoned (told to stop once the call returns) and the next
call gets a fresh thread, so one stuck call never delays the next case by more
than its own ``timeout_s``. Being daemons, abandoned threads do not keep the
process alive. One thread a function and one call at a time: the function is
called as a plain loop would call it, never from two threads at once.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ragproof_core.adapters.escapes import exception_text

DEFAULT_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class Returned:
    """The function returned ``value``."""

    value: Any


@dataclass(frozen=True, slots=True)
class Failed:
    """The function raised (anything) or outlived its time; ``reason`` says which."""

    reason: str


def timeout_reason(timeout_s: float) -> str:
    return f"took longer than timeout_s = {timeout_s:g} s"


class _Worker:
    """One daemon thread calling the function for whoever puts a call on ``calls``."""

    def __init__(self, function: Callable[..., Any], name: str) -> None:
        self.calls: queue.SimpleQueue[Mapping[str, Any] | None] = queue.SimpleQueue()
        self.replies: queue.SimpleQueue[Returned | Failed] = queue.SimpleQueue()
        self.pid = os.getpid()
        threading.Thread(target=self._work, args=(function,), name=name, daemon=True).start()

    def _work(self, function: Callable[..., Any]) -> None:
        while (arguments := self.calls.get()) is not None:
            try:
                outcome: Returned | Failed = Returned(function(**arguments))
            except BaseException as exc:  # noqa: BLE001 - SystemExit and the rest are the case's
                outcome = Failed(_raised(exc))
            self.replies.put(outcome)
            del arguments, outcome  # do not pin the last case while idle


def _raised(exc: BaseException) -> str:
    try:
        return exception_text(exc)
    except BaseException:  # noqa: BLE001 - a __str__ raising KeyboardInterrupt, say
        return type(exc).__name__


class BoundedFunction:
    """``function(**arguments)`` called with a time limit (module docstring)."""

    def __init__(self, function: Callable[..., Any], timeout_s: float, name: str) -> None:
        self.function = function
        self.timeout_s = timeout_s
        self.name = name
        self._worker: _Worker | None = None

    def __call__(self, arguments: Mapping[str, Any]) -> Returned | Failed:
        worker = self._worker
        if worker is None or worker.pid != os.getpid():  # none yet, or a fork's copy
            worker = self._worker = _Worker(self.function, f"ragproof-metric {self.name}")
        worker.calls.put(arguments)
        try:
            return worker.replies.get(timeout=self.timeout_s)
        except queue.Empty:
            worker.calls.put(None)  # the thread stops once the stuck call returns
            self._worker = None
            return Failed(timeout_reason(self.timeout_s))

    def __getstate__(self) -> dict[str, Any]:
        # A thread does not travel: a copy in another process starts its own.
        return {"function": self.function, "timeout_s": self.timeout_s, "name": self.name}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["function"], state["timeout_s"], state["name"])
