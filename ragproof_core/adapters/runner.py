"""Call the pipeline under test for every case, bounded, timed, and never crashing on a case.

Adapter methods may be sync or async. Async ones are awaited on the event
loop; sync ones run on a ``DaemonThreadPool``. Daemon threads matter: a sync
adapter stuck forever in a call cannot be interrupted, and Python's
``ThreadPoolExecutor`` joins its (non-daemon) workers at interpreter exit, so
one hung call would keep the whole ``ragproof run`` process alive after the
run finished.

Per case, the runner uses the adapter's optional case-aware hook
``run_case(case) -> CaseOutput`` when present (the recorded adapter needs the
case id, not the question). Otherwise it calls ``retrieve(question)`` when the
adapter exposes it, then ``answer(question)``: of these, only the ``methods``
the run's metrics read (``metrics.spec.READS``), so a retrieval-only run never
pays the pipeline's generator, and an answer-only run never calls ``retrieve``.
A conversation's turns always call ``answer()``: each turn's history holds the
earlier answers. Every call made is counted by method (``calls``). Each call is bounded by
``timeout_s``. An exception, a timeout or malformed output becomes a case
failure (``CaseOutput.error``), e.g. ``timeout after 2.0s in answer()`` or
``ValueError: boom (in retrieve())``; metrics count it as an error and never
score it.

Conversations (CONTRACT section 16, ``adapters.history``): a conversation's
turns are one unit of work, run strictly in order by one worker while other
workers run other conversations and cases. Each turn's call gets
``history=[...]`` (the earlier turns, the pipeline's own answers included),
bounded by ``timeout_s`` like any call; the history a turn received is kept as
``CaseOutput.history``. A failed turn ends the conversation; an adapter without
``history`` fails every turn of a conversation.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import inspect
import queue
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from ragproof_core.adapters.coerce import AdapterOutputError, to_answer, to_chunks
from ragproof_core.adapters.escapes import AdapterEscape, exception_text, must_propagate
from ragproof_core.adapters.history import (
    EARLIER_TURN_FAILED,
    HISTORY_REFUSED,
    accepts_history,
    after_turn,
    history_dicts,
)
from ragproof_core.adapters.isolation import is_async_method
from ragproof_core.interruption import Interrupted, Interruption, finish
from ragproof_core.masking import NO_SECRETS, Masker
from ragproof_core.model import Case, CaseOutput, Message, units

OnOutput = Callable[[Case, CaseOutput], Awaitable[None] | None]
# The two methods of an adapter's interface (CONTRACT section 2), by name.
RETRIEVE, ANSWER = "retrieve", "answer"
BOTH_METHODS = frozenset({RETRIEVE, ANSWER})
# Called with a conversation's turns and their outputs once its last turn is done.
OnConversation = Callable[[Sequence[Case], Sequence[CaseOutput]], Awaitable[None] | None]


class DaemonThreadPool:
    """A fixed pool of daemon threads whose ``submit`` returns an asyncio future.

    A call that hangs keeps its thread busy until it returns (threads cannot be
    killed), so the adapter never sees more than ``size`` concurrent sync calls;
    later calls queue and their own timeouts still apply. A call whose future was
    cancelled (timed out) before a thread picked it up is skipped.
    ``shutdown()`` does not wait: hung threads are abandoned and, being daemons,
    do not keep the process alive.
    """

    def __init__(self, size: int, name: str = "ragproof-adapter") -> None:
        if size < 1:
            raise ValueError(f"pool size must be at least 1, got {size}")
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._size = size
        self._closed = False
        for index in range(size):
            threading.Thread(
                target=_work, args=(self._jobs,), name=f"{name}-{index}", daemon=True
            ).start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        """Run ``fn(*args)`` on a pool thread; must be called from a running event loop."""
        if self._closed:
            raise RuntimeError("DaemonThreadPool is shut down")
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._jobs.put((loop, future, fn, args))
        return future

    def shutdown(self) -> None:
        """Let idle threads exit; threads still inside a call finish it and then exit."""
        if self._closed:
            return
        self._closed = True
        for _ in range(self._size):
            self._jobs.put(None)


def _work(jobs: queue.SimpleQueue[Any]) -> None:
    while (job := jobs.get()) is not None:
        loop, future, fn, args = job
        # Reading the flag from this thread is a benign race: at worst a call
        # that just timed out runs anyway and its result is dropped.
        if future.cancelled():
            continue
        result = error = None
        try:
            result = fn(*args)
        except Exception as exc:
            error = exc
        except BaseException as exc:  # noqa: BLE001 - SystemExit would end this thread
            # SystemExit and friends cannot travel through an asyncio future.
            error = AdapterEscape(exc)
        # A closed loop raises RuntimeError: nobody is waiting for this result any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_settle, future, result, error)
        del job, future, result, error  # do not pin the last result while idle


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # cancelled by a timeout while the call ran
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


@dataclass(frozen=True, slots=True)
class _Method:
    name: str
    fn: Callable[..., Any]
    is_async: bool
    history: bool


@dataclass(frozen=True, slots=True)
class _Plan:
    """How to call one adapter, worked out once per run rather than per case."""

    run_case: _Method | None
    retrieve: _Method | None
    answer: _Method | None
    # A replaying adapter reports each case's latency itself (a recording's latency_s):
    # timing the replay would measure a file read, not the pipeline.
    reports_latency: bool = False
    # The adapter's async calls return without ever suspending (``at_once``): no
    # deadline could fire during one, so none is set.
    at_once: bool = False
    # The run's secret values, masked in every output and error as it comes back.
    masker: Masker = NO_SECRETS
    # Whether ``answer()`` is called (the run's metrics read the answer; ``retrieve`` is
    # None when they do not read its chunks).
    answers: bool = True

    @property
    def needs_threads(self) -> bool:
        called = (self.answer,) if self.answers else ()
        methods = (self.run_case,) if self.run_case else (self.retrieve, *called)
        return any(m is not None and not m.is_async for m in methods)

    @property
    def takes_history(self) -> bool:
        """Whether the adapter can run a conversation: the method that answers takes
        ``history`` (``retrieve`` gets it too when it takes it)."""
        method = self.run_case or self.answer
        return method is not None and method.history


def _plan(adapter: object, methods: Collection[str] = BOTH_METHODS) -> _Plan:
    """How to call ``adapter`` when a case needs ``methods`` of ``retrieve`` and ``answer``
    (a ``run_case`` hook, a replay, gives its whole output whatever they are)."""

    def method(name: str) -> _Method | None:
        fn = getattr(adapter, name, None)
        if not callable(fn):
            return None
        return _Method(name, fn, is_async_method(fn), accepts_history(fn))

    return _Plan(
        method("run_case"),
        method(RETRIEVE) if RETRIEVE in methods else None,
        method(ANSWER),
        bool(getattr(adapter, "reports_latency", False)),
        at_once(adapter),
        answers=ANSWER in methods,
    )


def at_once(adapter: object) -> bool:
    """Whether the adapter's async calls return without suspending: it shares the run's
    event loop (so it never blocks it) and is free to call (the recorded replay, which
    waits on nothing). Then a call's deadline can never fire, since an ``asyncio`` timeout
    only fires while the awaiting task is suspended, and the runner sets none: on a
    million replayed cases its bookkeeping cost more than the rest of the runner."""
    return bool(getattr(adapter, "shares_event_loop", False)) and bool(
        getattr(adapter, "free_to_call", False)
    )


class _CallFailed(Exception):
    """A case failure; the message is the text stored in ``CaseOutput.error``."""


def takes_history(adapter: object) -> bool:
    """Whether ``adapter`` can run a conversation (its answering method takes ``history``)."""
    return _plan(adapter).takes_history


async def call_adapter(
    adapter: object,
    case: Case,
    timeout_s: float,
    executor: DaemonThreadPool | concurrent.futures.Executor | None = None,
) -> CaseOutput:
    """Run one case through ``adapter``; a case problem becomes ``CaseOutput.error``.

    Sync adapter methods run on ``executor`` (a one-thread ``DaemonThreadPool``
    made for this call when None). ``run_adapter`` is the way to run many cases.
    """
    plan = _plan(adapter)
    own_pool = executor is None and plan.needs_threads
    pool = DaemonThreadPool(1) if own_pool else executor
    try:
        return await _run_case(plan, case, timeout_s, pool, Counter())
    finally:
        if own_pool:
            pool.shutdown()


class RunLimits(Protocol):
    """What the runner reads of the run settings (``config.settings.RunSettings``)."""

    @property
    def concurrency(self) -> int: ...

    @property
    def timeout_s(self) -> float: ...


async def run_adapter(
    cases: Sequence[Case],
    adapter: object,
    settings: RunLimits,
    on_output: OnOutput | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_conversation: OnConversation | None = None,
    masker: Masker = NO_SECRETS,
    methods: Collection[str] = BOTH_METHODS,
    calls: Counter[str] | None = None,
    interruption: Interruption | None = None,
) -> list[CaseOutput]:
    """Run every case with at most ``settings.concurrency`` cases or conversations in flight.

    ``on_output(case, output)`` is called (and awaited, if it returns an
    awaitable) as each case finishes, so judging can start at once; an
    exception from it cancels the run and propagates. Once ``should_stop()``
    returns true, no new case starts; cases never started are absent from the
    result (a conversation once started runs to its end, unless interrupted).
    Outputs come back in dataset order. ``on_conversation(turns, outputs)`` is
    called (and awaited) when a conversation's last turn is done, after that turn's
    ``on_output``. The adapter is not closed here: its owner calls
    ``close_adapter`` when done with it.
    ``methods``: which of ``retrieve`` and ``answer`` a single case calls (a turn always
    calls ``answer``); ``calls`` counts the calls made, by method.
    ``masker``: the run's secret values (CONTRACT section 28), written as ``***`` in
    each output and case failure as the adapter gives it, before anything else (the
    judge, the store, a later turn's history) sees it.
    """
    plan = replace(_plan(adapter, methods), masker=masker)
    turn_plan = replace(_plan(adapter, {*methods, ANSWER}), masker=masker)
    counted = Counter() if calls is None else calls
    outputs: list[CaseOutput | None] = [None] * len(cases)
    # A shared iterator is the work queue: workers run on one event loop, so
    # next() never races, and 100,000 cases cost no task or queue item each.
    # A unit is one case, or a conversation's turns in order.
    pending = units(cases)
    timeout_s = settings.timeout_s
    pool = DaemonThreadPool(settings.concurrency) if plan.needs_threads else None

    async def done(index: int, output: CaseOutput) -> None:
        outputs[index] = output
        if on_output is not None:
            reply = on_output(cases[index], output)
            if inspect.isawaitable(reply):
                await reply

    async def conversation(start: int, end: int) -> None:
        history: tuple[Message, ...] = ()
        failed = not plan.takes_history
        for index in range(start, end):
            case = cases[index]
            if failed:
                reason = EARLIER_TURN_FAILED if plan.takes_history else HISTORY_REFUSED
                await done(index, CaseOutput(case.id, error=reason))
                continue
            output = await _run_case(
                turn_plan, case, timeout_s, pool, counted, history, interruption
            )
            output.history = history
            failed = output.failed
            if not failed:
                history = after_turn(history, case.question, output.answer)
            await done(index, output)
        if on_conversation is not None:
            reply = on_conversation(cases[start:end], outputs[start:end])
            if inspect.isawaitable(reply):
                await reply

    async def worker() -> None:
        while should_stop is None or not should_stop():
            unit = next(pending, None)
            if unit is None:
                return
            start, end = unit
            try:
                if cases[start].turn is None:
                    output = await _run_case(
                        plan, cases[start], timeout_s, pool, counted, None, interruption
                    )
                    await done(start, output)
                else:
                    await conversation(start, end)
            except Interrupted:
                return  # the signal came before this unit's next call: left for the resume

    workers = [
        asyncio.ensure_future(worker()) for _ in range(min(settings.concurrency, len(cases)))
    ]
    try:
        await finish(workers, interruption)
    except BaseException:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        raise
    finally:
        if pool is not None:
            pool.shutdown()
    return [output for output in outputs if output is not None]


def planned_calls(
    adapter: object, cases: Sequence[Case], methods: Collection[str] = BOTH_METHODS
) -> Counter[str]:
    """The calls ``run_adapter`` would make of ``adapter`` for ``cases`` (every turn of a
    conversation counted, as if none failed), by method, without calling anything."""
    plan, turn_plan = _plan(adapter, methods), _plan(adapter, {*methods, ANSWER})
    calls: Counter[str] = Counter()
    for case in cases:
        chosen = plan if case.turn is None else turn_plan
        if chosen.run_case is not None:
            calls[chosen.run_case.name] += 1
            continue
        if chosen.retrieve is not None:
            calls[RETRIEVE] += 1
        if chosen.answers:
            calls[ANSWER] += 1
    return calls


def adapter_calls_dict(calls: Mapping[str, int]) -> dict[str, int]:
    """``run --json``'s ``adapter_calls``: each method's calls, 0 for one not called."""
    return {method: int(calls.get(method, 0)) for method in (RETRIEVE, ANSWER)}


def adapter_calls_line(calls: Mapping[str, int]) -> str | None:
    """``adapter: 10 retrieve, 0 answer calls``; None for a run that called neither (a
    recording replayed)."""
    if not any(calls.get(method) for method in (RETRIEVE, ANSWER)):
        return None
    counted = adapter_calls_dict(calls)
    return "adapter: " + ", ".join(f"{n} {m}" for m, n in counted.items()) + " calls"


async def close_adapter(adapter: object) -> None:
    """Release the adapter's resources: ``aclose()`` if it has one, else ``close()``."""
    for name in ("aclose", "close"):
        close = getattr(adapter, name, None)
        if callable(close):
            reply = close()
            if inspect.isawaitable(reply):
                await reply
            return


async def _run_case(
    plan: _Plan,
    case: Case,
    timeout_s: float,
    pool: Any,
    calls: Counter[str],
    history: tuple[Message, ...] | None = None,
    interruption: Interruption | None = None,
) -> CaseOutput:
    """One case, or one turn of a conversation given its ``history`` (then every method
    that takes ``history`` gets it), its secret values masked; each call made is counted
    in ``calls``. Before each call, ``interruption`` raises ``Interrupted`` once a signal
    stopped the run."""
    output = await _call_case(plan, case, timeout_s, pool, calls, history, interruption)
    if not plan.masker:
        return output
    return plan.masker.value(output, _OUTPUT_KEYS)


# What lines an output up with its case: never masked.
_OUTPUT_KEYS = frozenset({"case_id"})


async def _call_case(
    plan: _Plan,
    case: Case,
    timeout_s: float,
    pool: Any,
    calls: Counter[str],
    history: tuple[Message, ...] | None = None,
    interruption: Interruption | None = None,
) -> CaseOutput:
    start = time.perf_counter()
    check = _never if interruption is None else interruption.check

    def extra(method: _Method) -> dict[str, Any]:
        if history is None or not method.history:
            return {}
        return {"history": history_dicts(history)}

    try:
        if plan.run_case is not None:
            check()
            calls[plan.run_case.name] += 1
            output = await _invoke(plan.run_case, case, timeout_s, pool, extra(plan.run_case), plan)
            if not isinstance(output, CaseOutput):
                raise _CallFailed(
                    "invalid output from run_case(): expected a CaseOutput, "
                    f"got {type(output).__name__}"
                )
            if output.case_id != case.id:
                raise _CallFailed(
                    f"invalid output from run_case(): case_id {output.case_id!r} "
                    f"for case {case.id!r}"
                )
            latency = output.latency_s if plan.reports_latency else time.perf_counter() - start
            return CaseOutput(case.id, output.answer, output.retrieved, output.error, latency)
        retrieved = None
        if plan.retrieve is not None:
            check()
            calls[RETRIEVE] += 1
            raw = await _invoke(
                plan.retrieve, case.question, timeout_s, pool, extra(plan.retrieve), plan
            )
            if raw is None:
                raise _CallFailed("retrieve() returned None")
            retrieved = _coerce(to_chunks, raw, "retrieve")
        if not plan.answers:
            # The run's metrics read retrieve()'s chunks alone: the generator is not paid.
            return CaseOutput(case.id, None, retrieved, None, time.perf_counter() - start)
        if plan.answer is None:
            raise _CallFailed("adapter has no answer() method")
        check()
        calls[ANSWER] += 1
        raw = await _invoke(plan.answer, case.question, timeout_s, pool, extra(plan.answer), plan)
        answer = _coerce(to_answer, raw, "answer")
        return CaseOutput(case.id, answer, retrieved, None, time.perf_counter() - start)
    except _CallFailed as exc:
        return CaseOutput(case.id, error=str(exc), latency_s=time.perf_counter() - start)


def _never() -> None:
    """The check before each call of a run no signal can stop."""


async def _invoke(
    method: _Method, arg: Any, timeout_s: float, pool: Any, keywords: dict[str, Any], plan: _Plan
) -> Any:
    if plan.at_once and method.is_async:
        return await _invoke_at_once(method, arg, keywords, plan.masker)
    scope = asyncio.timeout(timeout_s)
    try:
        async with scope:
            if method.is_async:
                return await method.fn(arg, **keywords)
            call = functools.partial(method.fn, arg, **keywords) if keywords else method.fn
            future = pool.submit(call, *(() if keywords else (arg,)))
            if isinstance(future, concurrent.futures.Future):
                future = asyncio.wrap_future(future)
            result = await future
            if inspect.isawaitable(result):  # a sync-looking method that returned a coroutine
                result = await result
            return result
    except TimeoutError as exc:
        # Only our own deadline is "timeout after"; a TimeoutError raised by
        # the adapter (a socket timeout, say) is reported like any exception.
        if scope.expired():
            raise _CallFailed(f"timeout after {float(timeout_s)}s in {method.name}()") from None
        raise _CallFailed(_describe(exc, method.name, plan.masker)) from None
    except BaseException as exc:  # noqa: BLE001 - an adapter's sys.exit() fails its case only
        if must_propagate(exc):
            raise
        raise _CallFailed(_describe(exc, method.name, plan.masker)) from None


async def _invoke_at_once(
    method: _Method, arg: Any, keywords: dict[str, Any], masker: Masker
) -> Any:
    """``_invoke`` for an adapter whose calls never suspend (``at_once``): the same
    failures, without a deadline."""
    try:
        return await method.fn(arg, **keywords)
    except BaseException as exc:  # noqa: BLE001 - as in _invoke
        if must_propagate(exc):
            raise
        raise _CallFailed(_describe(exc, method.name, masker)) from None


def _coerce(convert: Callable[[Any], Any], raw: Any, name: str) -> Any:
    try:
        return convert(raw)
    except AdapterOutputError as exc:
        raise _CallFailed(f"invalid output from {name}(): {exc}") from None


def _describe(exc: BaseException, name: str, masker: Masker) -> str:
    return f"{exception_text(exc, masker.text if masker else None)} (in {name}())"
