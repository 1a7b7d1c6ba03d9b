"""The adapter runner: sync and async adapters, case failures, timeouts, the concurrency
bound, stopping early, and daemon threads for hung sync calls."""

from __future__ import annotations

import asyncio
import concurrent.futures
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from ragproof_core.adapters.runner import (
    DaemonThreadPool,
    at_once,
    call_adapter,
    close_adapter,
    run_adapter,
)
from ragproof_core.config.settings import RunSettings
from ragproof_core.interruption import Interruption
from ragproof_core.model import Answer, Case, CaseOutput, Chunk, TurnOf

REPO = Path(__file__).resolve().parents[3]


def cases(n: int) -> list[Case]:
    return [Case(f"c{i}", f"q{i}") for i in range(n)]


def run(case_list, adapter, **settings):
    return asyncio.run(run_adapter(case_list, adapter, RunSettings(**settings)))


class SyncRAG:
    def __init__(self):
        self.calls: list[tuple[str, str]] = []

    def retrieve(self, question):
        self.calls.append(("retrieve", question))
        return [Chunk(f"{question}#0", "context")]

    def answer(self, question):
        self.calls.append(("answer", question))
        return Answer(f"answer to {question}", citations=(f"{question}#0",))


class AsyncDictRAG:
    async def retrieve(self, question):
        return [{"id": "k1", "text": "context", "score": 2}]

    async def answer(self, question):
        return {"text": question.upper(), "retrieved_chunks": [{"id": "k1", "text": "context"}]}


class AnswerOnly:
    def answer(self, question):
        return {"text": "only"}


def test_sync_adapter_with_retrieve():
    adapter = SyncRAG()
    outputs = run(cases(2), adapter, concurrency=1)
    assert [(o.case_id, o.answer, o.retrieved, o.error) for o in outputs] == [
        ("c0", Answer("answer to q0", None, ("q0#0",)), (Chunk("q0#0", "context"),), None),
        ("c1", Answer("answer to q1", None, ("q1#0",)), (Chunk("q1#0", "context"),), None),
    ]
    assert adapter.calls == [
        ("retrieve", "q0"),
        ("answer", "q0"),
        ("retrieve", "q1"),
        ("answer", "q1"),
    ]
    assert all(o.latency_s > 0 for o in outputs)


def test_async_adapter_returning_dicts():
    (output,) = run(cases(1), AsyncDictRAG())
    assert output == CaseOutput(
        "c0",
        answer=Answer("Q0", (Chunk("k1", "context"),), None),
        retrieved=(Chunk("k1", "context", 2.0),),
        latency_s=output.latency_s,
    )


def test_adapter_without_retrieve_leaves_retrieved_none():
    (output,) = run(cases(1), AnswerOnly())
    assert output.retrieved is None
    assert output.answer == Answer("only")


class Raises:
    def __init__(self, where):
        self.where = where
        self.answered = False

    def retrieve(self, question):
        if self.where == "retrieve":
            raise ValueError("boom")
        return []

    async def answer(self, question):
        self.answered = True
        if self.where == "answer":
            raise RuntimeError("index offline")
        if self.where == "empty":
            raise KeyError()
        return {"text": "fine"}


def test_exception_in_retrieve_is_a_case_failure_and_skips_answer():
    adapter = Raises("retrieve")
    (output,) = run(cases(1), adapter)
    assert output.error == "ValueError: boom (in retrieve())"
    assert output.answer is None and output.retrieved is None
    assert not adapter.answered


def test_exception_in_async_answer_is_a_case_failure():
    assert run(cases(1), Raises("answer"))[0].error == "RuntimeError: index offline (in answer())"


def test_exception_without_message():
    assert run(cases(1), Raises("empty"))[0].error == "KeyError (in answer())"


def test_malformed_outputs_are_case_failures():
    class Bad:
        def __init__(self, retrieve_result, answer_result):
            self.retrieve_result, self.answer_result = retrieve_result, answer_result

        def retrieve(self, question):
            return self.retrieve_result

        def answer(self, question):
            return self.answer_result

    assert run(cases(1), Bad(None, {"text": "x"}))[0].error == "retrieve() returned None"
    assert run(cases(1), Bad([{"id": 1, "text": "t"}], {"text": "x"}))[0].error == (
        "invalid output from retrieve(): chunk 0: chunk 'id' must be a string, got int"
    )
    assert run(cases(1), Bad([], "plain string"))[0].error == (
        "invalid output from answer(): expected an Answer or a dict with 'text', "
        "got a bare string; wrap it as {'text': ...}"
    )


def test_sync_hang_past_timeout_fails_that_case_and_the_run_finishes():
    release = threading.Event()

    class HangsOnQ1:
        def answer(self, question):
            if question == "q1":
                release.wait()
            return {"text": question}

    try:
        # 2 s: a good call never takes that long, even on a loaded 2-core machine.
        outputs = run(cases(5), HangsOnQ1(), concurrency=2, timeout_s=2.0)
    finally:
        release.set()
    assert [o.error for o in outputs] == [None, "timeout after 2.0s in answer()", None, None, None]
    assert outputs[1].latency_s >= 2.0
    assert [o.answer.text for o in outputs if o.answer] == ["q0", "q2", "q3", "q4"]


def test_async_hang_past_timeout_fails_that_case():
    class HangsInRetrieve:
        async def retrieve(self, question):
            if question == "q0":
                await asyncio.Event().wait()
            return []

        async def answer(self, question):
            return {"text": "ok"}

    outputs = run(cases(3), HangsInRetrieve(), concurrency=3, timeout_s=2.0)
    assert [o.error for o in outputs] == ["timeout after 2.0s in retrieve()", None, None]


def test_adapter_raising_its_own_timeout_error_is_not_our_timeout():
    class SocketTimeout:
        async def answer(self, question):
            raise TimeoutError("read timed out")

    assert run(cases(1), SocketTimeout(), timeout_s=30)[0].error == (
        "TimeoutError: read timed out (in answer())"
    )


class AsyncCounter:
    """Tracks calls in flight; yielding a few times lets every worker start a call."""

    def __init__(self):
        self.in_flight = 0
        self.max_in_flight = 0

    async def answer(self, question):
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        for _ in range(5):
            await asyncio.sleep(0)
        self.in_flight -= 1
        return {"text": question}


def test_concurrency_bound_async():
    adapter = AsyncCounter()
    outputs = run(cases(20), adapter, concurrency=3)
    assert len(outputs) == 20
    assert adapter.max_in_flight == 3


def test_concurrency_bound_sync_threads():
    lock = threading.Lock()
    # The first three calls meet at the barrier: proof that three run at once.
    barrier = threading.Barrier(3, timeout=20)
    state = {"in_flight": 0, "max": 0, "calls": 0}

    class ThreadCounter:
        def answer(self, question):
            with lock:
                state["in_flight"] += 1
                state["max"] = max(state["max"], state["in_flight"])
                state["calls"] += 1
                first_round = state["calls"] <= 3
            if first_round:
                barrier.wait()
            with lock:
                state["in_flight"] -= 1
            return {"text": question}

    outputs = run(cases(12), ThreadCounter(), concurrency=3, timeout_s=30)
    assert [o.error for o in outputs] == [None] * 12
    assert state["max"] == 3


def test_outputs_come_back_in_dataset_order_and_on_output_sees_completion_order():
    class SecondFinishesFirst:
        def __init__(self):
            self.second_done = asyncio.Event()

        async def answer(self, question):
            if question == "q0":
                await self.second_done.wait()
            else:
                self.second_done.set()
            return {"text": question}

    seen = []

    async def on_output(case, output):
        await asyncio.sleep(0)
        seen.append((case.id, output.answer.text))

    async def main():
        return await run_adapter(
            cases(2), SecondFinishesFirst(), RunSettings(concurrency=2), on_output=on_output
        )

    outputs = asyncio.run(main())
    assert [o.case_id for o in outputs] == ["c0", "c1"]
    assert seen == [("c1", "q1"), ("c0", "q0")]


def test_sync_on_output_callback():
    seen = []
    asyncio.run(
        run_adapter(
            cases(3),
            AnswerOnly(),
            RunSettings(concurrency=1),
            on_output=lambda case, output: seen.append(case.id),
        )
    )
    assert seen == ["c0", "c1", "c2"]


def test_should_stop_stops_taking_new_cases():
    done = []
    outputs = asyncio.run(
        run_adapter(
            cases(10),
            AnswerOnly(),
            RunSettings(concurrency=1),
            on_output=lambda case, output: done.append(case.id),
            should_stop=lambda: len(done) >= 2,
        )
    )
    assert [o.case_id for o in outputs] == ["c0", "c1"]


class StoppedMidCase:
    """Its retrieve() is in flight when the signal comes; records every call."""

    def __init__(self, signal: list[bool]) -> None:
        self.signal = signal
        self.calls: list[str] = []

    async def retrieve(self, question):
        self.calls.append(f"retrieve {question}")
        self.signal.append(True)  # the signal arrives while this call is in flight
        await asyncio.sleep(0.05)
        return [{"id": "k1", "text": "context"}]

    async def answer(self, question, history=None):
        self.calls.append(f"answer {question}")
        if question == "turn 1":
            self.signal.append(True)
        return {"text": "an answer"}


def test_after_a_signal_no_call_is_made_not_even_the_answer_after_a_retrieve():
    signal: list[bool] = []
    adapter = StoppedMidCase(signal)
    outputs = asyncio.run(
        run_adapter(
            cases(5),
            adapter,
            RunSettings(concurrency=1),
            interruption=Interruption(lambda: bool(signal)),
        )
    )
    # The retrieve in flight finished; its case's answer() was never asked.
    assert adapter.calls == ["retrieve q0"]
    assert outputs == []


def test_a_conversation_stops_between_its_turns_after_a_signal():
    signal: list[bool] = []
    adapter = StoppedMidCase(signal)
    turns = [Case(f"conv#{t}", f"turn {t}", turn=TurnOf("conv", t, 3)) for t in (1, 2, 3)]
    outputs = asyncio.run(
        run_adapter(
            turns,
            adapter,
            RunSettings(concurrency=1),
            interruption=Interruption(lambda: bool(signal)),
            methods={"answer"},
        )
    )
    assert adapter.calls == ["answer turn 1"]
    assert [o.case_id for o in outputs] == ["conv#1"]


def test_calls_in_flight_at_a_signal_get_the_allowance_then_are_cancelled():
    class Hangs:
        def __init__(self) -> None:
            self.started = 0

        async def answer(self, question):
            self.started += 1
            await asyncio.sleep(3600)

    adapter = Hangs()
    # The signal as soon as both calls are in flight; an allowance of a tenth of a second.
    stop = Interruption(lambda: adapter.started >= 2, in_flight_s=0.1)
    outputs = asyncio.run(
        run_adapter(
            cases(6), adapter, RunSettings(concurrency=2, timeout_s=3600), interruption=stop
        )
    )
    assert (outputs, adapter.started) == ([], 2)


def test_on_output_exception_stops_the_run_and_propagates():
    started = []

    class Tracks:
        async def answer(self, question):
            started.append(question)
            return {"text": question}

    def explode(case, output):
        raise RuntimeError(f"store full at {case.id}")

    with pytest.raises(RuntimeError, match="store full at c0"):
        asyncio.run(run_adapter(cases(50), Tracks(), RunSettings(concurrency=1), on_output=explode))
    assert started == ["q0"]


def test_run_case_hook_is_preferred_sync_or_async():
    class AsyncHook:
        async def run_case(self, case):
            return CaseOutput(case.id, answer=Answer(f"hook {case.id}"))

        def answer(self, question):
            raise AssertionError("answer() must not be called when run_case exists")

    class SyncHook(AsyncHook):
        def run_case(self, case):
            return CaseOutput(case.id, error=f"recorded failure for {case.id}")

    async_out = run(cases(2), AsyncHook())
    assert [o.answer.text for o in async_out] == ["hook c0", "hook c1"]
    sync_out = run(cases(1), SyncHook())
    assert sync_out[0].error == "recorded failure for c0"


def test_run_case_hook_output_is_checked():
    class WrongType:
        async def run_case(self, case):
            return {"text": "not a CaseOutput"}

        def answer(self, question): ...

    class WrongCase(WrongType):
        async def run_case(self, case):
            return CaseOutput("someone-else")

    assert run(cases(1), WrongType())[0].error == (
        "invalid output from run_case(): expected a CaseOutput, got dict"
    )
    assert run(cases(1), WrongCase())[0].error == (
        "invalid output from run_case(): case_id 'someone-else' for case 'c0'"
    )


def test_free_adapter_sharing_the_loop_is_called_without_a_deadline_and_fails_alike():
    """A free adapter on the run's loop (the recorded replay) returns without suspending,
    so the runner sets it no deadline (``at_once``); its failures read as any adapter's."""

    class Replay:
        shares_event_loop = True
        free_to_call = True
        reports_latency = True

        async def run_case(self, case):
            if case.id == "c1":
                raise ValueError("boom")
            return CaseOutput(case.id, answer=Answer(f"replayed {case.id}"), latency_s=0.25)

        def answer(self, question): ...

    class Timed(Replay):
        free_to_call = False

    assert at_once(Replay()) and not at_once(Timed())
    for adapter in (Replay(), Timed()):
        outputs = run(cases(3), adapter, timeout_s=0.001)
        assert [(o.answer and o.answer.text, o.error, o.latency_s) for o in outputs] == [
            ("replayed c0", None, 0.25),
            (None, "ValueError: boom (in run_case())", outputs[1].latency_s),
            ("replayed c2", None, 0.25),
        ]


def test_call_adapter_alone_with_and_without_an_executor():
    assert asyncio.run(call_adapter(SyncRAG(), Case("x", "q"), 5)).answer.text == "answer to q"

    async def with_pool():
        pool = DaemonThreadPool(2)
        try:
            return await call_adapter(AnswerOnly(), Case("y", "q"), 5, executor=pool)
        finally:
            pool.shutdown()

    assert asyncio.run(with_pool()).answer == Answer("only")

    with concurrent.futures.ThreadPoolExecutor(1) as executor:
        output = asyncio.run(call_adapter(AnswerOnly(), Case("z", "q"), 5, executor=executor))
    assert output.answer == Answer("only")


def test_pool_threads_are_daemons():
    before = set(threading.enumerate())
    pool = DaemonThreadPool(3, name="ragproof-test-pool")
    try:
        started = [t for t in threading.enumerate() if t not in before]
        assert sorted(t.name for t in started) == [
            "ragproof-test-pool-0",
            "ragproof-test-pool-1",
            "ragproof-test-pool-2",
        ]
        assert all(t.daemon for t in started)
    finally:
        pool.shutdown()


def test_runner_does_not_close_the_adapter_but_close_adapter_does():
    class Closable:
        def __init__(self):
            self.closed = []

        def answer(self, question):
            return {"text": "x"}

        async def aclose(self):
            self.closed.append("aclose")

        def close(self):
            self.closed.append("close")

    adapter = Closable()
    run(cases(2), adapter)
    assert adapter.closed == []
    asyncio.run(close_adapter(adapter))
    assert adapter.closed == ["aclose"]

    class SyncClose:
        def __init__(self):
            self.closed = False

        def close(self):
            self.closed = True

    sync_adapter = SyncClose()
    asyncio.run(close_adapter(sync_adapter))
    assert sync_adapter.closed
    asyncio.run(close_adapter(AnswerOnly()))  # nothing to close is fine


def test_empty_case_list():
    assert run([], AnswerOnly()) == []


HANG_SCRIPT = textwrap.dedent(
    """
    import asyncio, threading
    from ragproof_core.adapters.runner import run_adapter
    from ragproof_core.model import Case
    from ragproof_core.config.settings import RunSettings

    class HangsForever:
        def answer(self, question):
            threading.Event().wait()

    cases = [Case("c1", "q1"), Case("c2", "q2"), Case("c3", "q3")]
    outputs = asyncio.run(
        run_adapter(cases, HangsForever(), RunSettings(concurrency=2, timeout_s=0.2))
    )
    print([o.error for o in outputs])
    """
)


@pytest.mark.slow
def test_hung_sync_adapter_does_not_keep_the_process_alive():
    result = subprocess.run(
        [sys.executable, "-c", HANG_SCRIPT],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(["timeout after 0.2s in answer()"] * 3)
