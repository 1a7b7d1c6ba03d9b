"""Running conversations (CONTRACT section 16): each turn in order with its history, the
adapter's own answers included; a failed turn ends its conversation; an adapter without
``history`` fails every turn; conversations run side by side, turns never do."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path

import pytest

from ragproof_core.adapters.history import accepts_history, stored_histories
from ragproof_core.adapters.isolation import IsolatedAdapter
from ragproof_core.adapters.loading import AdapterLoadError
from ragproof_core.adapters.recorded import RecordedAdapter
from ragproof_core.adapters.runner import run_adapter
from ragproof_core.config.settings import RunSettings
from ragproof_core.data.dataset import load_dataset
from ragproof_core.model import Case, Message, TurnOf

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "conversations"


def conversation(cid: str, *questions: str) -> list[Case]:
    total = len(questions)
    return [Case(f"{cid}#{t}", q, turn=TurnOf(cid, t, total)) for t, q in enumerate(questions, 1)]


def run(cases, adapter, **settings):
    return asyncio.run(run_adapter(cases, adapter, RunSettings(**settings)))


class Recording:
    """Answers "A<n>" and records every call with the history it received."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, list[dict] | None]] = []

    def retrieve(self, question, history=None):
        self.calls.append(("retrieve", question, history))
        return [{"id": f"k-{question}", "text": question}]

    def answer(self, question, history=None):
        self.calls.append(("answer", question, history))
        return {"text": f"A({question})"}


def test_each_turn_gets_the_earlier_turns_with_the_adapters_own_answers() -> None:
    adapter = Recording()
    cases = [Case("s1", "single"), *conversation("c1", "q1", "q2", "q3")]
    outputs = run(cases, adapter, concurrency=1)
    h2 = [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "A(q1)"}]
    h3 = [*h2, {"role": "user", "content": "q2"}, {"role": "assistant", "content": "A(q2)"}]
    assert adapter.calls == [
        # A single case is called as always: no history keyword at all.
        ("retrieve", "single", None),
        ("answer", "single", None),
        ("retrieve", "q1", []),
        ("answer", "q1", []),
        ("retrieve", "q2", h2),
        ("answer", "q2", h2),
        ("retrieve", "q3", h3),
        ("answer", "q3", h3),
    ]
    assert [o.case_id for o in outputs] == ["s1", "c1#1", "c1#2", "c1#3"]
    assert outputs[0].history is None
    assert outputs[3].history == tuple(Message(m["role"], m["content"]) for m in h3)
    assert len(outputs[3].history) == 2 * (3 - 1)


class FailsAt:
    def __init__(self, question: str) -> None:
        self.question = question
        self.asked: list[str] = []

    def answer(self, question, history):
        self.asked.append(question)
        if question == self.question:
            raise RuntimeError("upstream down")
        return {"text": "ok"}


def test_a_failing_turn_ends_its_conversation_and_no_other() -> None:
    adapter = FailsAt("c1 q2")
    cases = [*conversation("c1", "c1 q1", "c1 q2", "c1 q3", "c1 q4"), *conversation("c2", "c2 q1")]
    outputs = run(cases, adapter)
    assert [(o.case_id, o.error) for o in outputs] == [
        ("c1#1", None),
        ("c1#2", "RuntimeError: upstream down (in answer())"),
        ("c1#3", "an earlier turn failed"),
        ("c1#4", "an earlier turn failed"),
        ("c2#1", None),
    ]
    # The turns after the failure were never put to the pipeline.
    assert sorted(adapter.asked) == ["c1 q1", "c1 q2", "c2 q1"]


class NoHistory:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def answer(self, question):
        self.asked.append(question)
        return {"text": "ok"}


def test_an_adapter_without_history_fails_every_turn_and_still_answers_single_cases() -> None:
    adapter = NoHistory()
    outputs = run([*conversation("c1", "q1", "q2"), Case("s1", "single")], adapter)
    assert [(o.case_id, o.error) for o in outputs] == [
        ("c1#1", "adapter does not accept history"),
        ("c1#2", "adapter does not accept history"),
        ("s1", None),
    ]
    assert adapter.asked == ["single"]


def test_history_is_offered_by_name_or_through_kwargs_only() -> None:
    def named(question, history=None): ...
    def keywords(question, **options): ...
    def positional_only(question, history, /): ...
    def plain(question): ...

    assert [accepts_history(f) for f in (named, keywords, positional_only, plain)] == [
        True,
        True,
        False,
        False,
    ]


class SlowAsync:
    """Async: each call sleeps; records when each question started and ended."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.spans: dict[str, tuple[float, float]] = {}
        self.in_flight = 0
        self.most = 0

    async def answer(self, question, history):
        start = time.perf_counter()
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        await asyncio.sleep(self.delay)
        self.in_flight -= 1
        self.spans[question] = (start, time.perf_counter())
        return {"text": question}


def test_conversations_run_side_by_side_and_each_in_strict_order() -> None:
    adapter = SlowAsync(0.05)
    cases = [
        *conversation("a", "a1", "a2", "a3"),
        *conversation("b", "b1", "b2", "b3"),
        *conversation("c", "c1", "c2", "c3"),
    ]
    outputs = run(cases, adapter, concurrency=3)
    assert all(o.error is None for o in outputs)
    # Three conversations in flight at once, never two turns of one conversation.
    assert adapter.most == 3
    for cid in "abc":
        spans = [adapter.spans[f"{cid}{t}"] for t in (1, 2, 3)]
        assert spans[0][1] <= spans[1][0] and spans[1][1] <= spans[2][0]


def test_the_timeout_bounds_each_turn_and_a_timed_out_turn_ends_the_conversation() -> None:
    class SlowSecond:
        async def answer(self, question, history):
            if question == "q2":
                await asyncio.sleep(5)
            return {"text": question}

    outputs = run(conversation("c1", "q1", "q2", "q3"), SlowSecond(), timeout_s=0.2)
    assert [o.error for o in outputs] == [
        None,
        "timeout after 0.2s in answer()",
        "an earlier turn failed",
    ]


def test_an_isolated_async_adapter_keeps_its_history_keyword() -> None:
    class Own:
        async def answer(self, question, history):
            return {"text": f"{question} after {len(history)}"}

    isolated = IsolatedAdapter(Own())
    try:
        outputs = run(conversation("c1", "q1", "q2"), isolated)
    finally:
        asyncio.run(isolated.aclose())
    assert [o.answer.text for o in outputs] == ["q1 after 0", "q2 after 2"]


def test_a_recorded_conversation_replays_turn_by_turn_with_its_history() -> None:
    cases = load_dataset(FIXTURES / "mixed.jsonl")
    adapter = RecordedAdapter(str(FIXTURES / "outputs.jsonl"))
    try:
        outputs = run(cases, adapter)
    finally:
        adapter.close()
    assert [(o.case_id, o.answer.text) for o in outputs] == [
        ("s1", "Two years."),
        ("c1#1", "Within 30 days."),
        ("c1#2", "Also 30 days."),
        ("c1#3", "I cannot do that."),
        ("c2#1", "Yes, to the EU and the UK."),
    ]
    assert [c.id for c in outputs[2].retrieved] == ["policy-3", "policy-1"]
    assert outputs[3].history == (
        Message("user", "What is the refund window?"),
        Message("assistant", "Within 30 days."),
        Message("user", "And for opened items?"),
        Message("assistant", "Also 30 days."),
    )
    # Nothing is kept once a conversation's last turn is replayed.
    assert adapter._conversations == {}


def test_a_recorded_conversation_with_fewer_turns_fails_the_missing_ones(tmp_path) -> None:
    recording = tmp_path / "outputs.jsonl"
    recording.write_text('{"case_id": "c1", "turns": [{"answer": {"text": "one"}}]}\n')
    adapter = RecordedAdapter(str(recording))
    outputs = run(conversation("c1", "q1", "q2", "q3"), adapter)
    assert [o.error for o in outputs] == [
        None,
        "no recorded output for case c1#2",
        "an earlier turn failed",
    ]


def test_a_bad_recorded_turn_names_the_file_line_and_turn() -> None:
    path = FIXTURES / "bad_recorded_turn.jsonl"
    with pytest.raises(AdapterLoadError) as caught:
        RecordedAdapter(str(path))
    assert str(caught.value).startswith(f"{path}:1: turn 2: answer: ")


def test_a_stored_runs_histories_are_rebuilt_as_the_runner_built_them() -> None:
    cases = [
        *conversation("c1", "c1 q1", "c1 q2", "c1 q3"),
        *conversation("c2", "c2 q1", "c2 q2", "c2 q3", "c2 q4"),
    ]
    outputs = run(cases, FailsAt("c2 q2"))
    stored = [replace(o, history=None) for o in outputs]  # the store keeps no history
    rebuilt = stored_histories(cases, {o.case_id: o for o in stored})
    # Exactly what each turn received; none for a turn that never ran.
    assert rebuilt == {o.case_id: o.history for o in outputs if o.history is not None}
    assert sorted(rebuilt) == ["c1#1", "c1#2", "c1#3", "c2#1", "c2#2"]
    assert rebuilt["c1#3"] == (
        Message("user", "c1 q1"),
        Message("assistant", "ok"),
        Message("user", "c1 q2"),
        Message("assistant", "ok"),
    )
