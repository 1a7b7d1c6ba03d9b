"""`ragproof import otlp` (CONTRACT section 18) on the hand-written traces of
tests/fixtures/otlp: exact cases and recordings, bad spans, and the sampling rule
against a reference computed here."""

from __future__ import annotations

import asyncio
import hashlib
import json

import pytest

from ragproof_core.adapters.recorded import RecordedAdapter
from ragproof_core.adapters.runner import run_adapter
from ragproof_core.config.settings import RunSettings
from ragproof_core.data.dataset import DatasetError, load_dataset
from ragproof_core.data.importers.otlp import import_otlp, sampled
from ragproof_core.data.importers.writer import write_files
from tests.conftest import FIXTURES
from tests.support.otlp import attribute, document, root_span, trace_id, write_traces

OTLP = FIXTURES / "otlp"
FILES = [OTLP / "traces_a.jsonl", OTLP / "traces_b.json"]
T1, T2, T3, T4, T5, T6, T7 = (str(n) * 32 for n in range(1, 8))

POLICY_3 = {
    "id": "policy-3",
    "text": "Refunds are accepted within 30 days.",
    "score": 0.91,
    "metadata": {"document_id": "policy"},
}
POLICY_9 = {"id": "policy-9", "text": "Gift cards cannot be refunded.", "score": 0.42}
POLICY_4 = {"id": "policy-4", "text": "Opened items: 14 days."}
ORDERS_1 = {"id": "orders-1", "text": "Orders ship from Leeds.", "score": 3.0}
SHIP_2 = {"id": "ship-2", "text": "Standard shipping takes 3 days."}
WARRANTY = {"id": "warranty-1", "text": "Two-year warranty on electronics."}


@pytest.fixture(scope="module")
def imported():
    return import_otlp(FILES)


def test_cases_are_traces_and_sessions_in_start_order(imported):
    assert imported.cases == [
        {
            "id": "session-a",
            "kind": "conversation",
            "turns": [
                {"question": "What is the refund window?"},
                {"question": "And for opened items?"},
            ],
            "metadata": {"session_id": "session-a", "trace_ids": [T1, T2]},
        },
        {"id": T3, "question": "Where is my order A-17?", "metadata": {"trace_id": T3}},
        {"id": T4, "question": "Cancel my subscription", "metadata": {"trace_id": T4}},
        {"id": T5, "question": "How long is the warranty?", "metadata": {"trace_id": T5}},
        {
            "id": "session-b",
            "kind": "conversation",
            # Turns in start order: "Hello" started first though listed second.
            "turns": [{"question": "Hello"}, {"question": "Do you ship to Norway?"}],
            "metadata": {"session_id": "session-b", "trace_ids": [T7, T6]},
        },
    ]
    assert imported.notes == []


def test_recordings_hold_answers_retrievals_steps_tokens_and_latency(imported):
    by_id = {line["case_id"]: line for line in imported.outputs}
    assert by_id["session-a"] == {
        "case_id": "session-a",
        "turns": [
            {
                "retrieve": [POLICY_3, POLICY_9],
                "answer": {
                    "text": "30 days [policy-3].",
                    "steps": [
                        {
                            "type": "retrieve",
                            "query": "refund window",
                            "chunks": [POLICY_3, POLICY_9],
                        }
                    ],
                    "usage": {"input_tokens": 410, "output_tokens": 12, "cost_usd": 0.00123},
                },
                "latency_s": 1.2,
            },
            {
                "retrieve": [POLICY_4],
                "answer": {
                    "text": "14 days.",
                    "steps": [
                        {"type": "retrieve", "query": "opened items refund", "chunks": [POLICY_4]}
                    ],
                    "usage": {"input_tokens": 520, "output_tokens": 9},
                },
                "latency_s": 0.9,
            },
        ],
    }
    # The first retrieval (by start time) is the case's; every retriever and tool span is
    # a step in start order; tokens summed over both LLM spans.
    assert by_id[T3] == {
        "case_id": T3,
        "retrieve": [ORDERS_1, {**SHIP_2, "score": 0.5}],
        "answer": {
            "text": "Order A-17 has shipped [ship-2].",
            "steps": [
                {
                    "type": "retrieve",
                    "query": "order A-17",
                    "chunks": [ORDERS_1, {**SHIP_2, "score": 0.5}],
                },
                {"type": "retrieve", "query": "shipping times", "chunks": [SHIP_2]},
                {
                    "type": "tool",
                    "name": "order_status",
                    "arguments": {"order_id": "A-17"},
                    "output": "shipped",
                },
            ],
            "usage": {"input_tokens": 1000, "output_tokens": 55},
        },
        "latency_s": 2.5,
    }
    assert by_id[T4] == {"case_id": T4, "error": "upstream timeout", "latency_s": 0.25}
    # Split over the two files: one case, its retrieval from the first, its root from the second.
    assert by_id[T5] == {
        "case_id": T5,
        "retrieve": [WARRANTY],
        "answer": {
            "text": "Two years.",
            "steps": [{"type": "retrieve", "query": "warranty", "chunks": [WARRANTY]}],
        },
        "latency_s": 0.4,
    }
    assert by_id["session-b"]["turns"] == [
        {"answer": {"text": "Hi! How can I help?", "steps": []}, "latency_s": 0.1},
        {"answer": {"text": "Yes, in 5 days.", "steps": []}, "latency_s": 0.3},
    ]


def test_files_in_either_order_give_the_same_import():
    forward, backward = import_otlp(FILES), import_otlp(list(reversed(FILES)))
    assert (forward.cases, forward.outputs) == (backward.cases, backward.outputs)


def test_the_written_files_run_as_a_dataset_and_a_recording(imported, tmp_path):
    cases_path, outputs_path = tmp_path / "cases.jsonl", tmp_path / "outputs.jsonl"
    write_files([(cases_path, imported.cases), (outputs_path, imported.outputs)])
    cases = load_dataset(cases_path)
    assert [c.id for c in cases] == [
        "session-a#1",
        "session-a#2",
        T3,
        T4,
        T5,
        "session-b#1",
        "session-b#2",
    ]
    adapter = RecordedAdapter(str(outputs_path))
    outputs = {o.case_id: o for o in asyncio.run(run_adapter(cases, adapter, RunSettings()))}
    adapter.close()
    assert outputs["session-a#2"].latency_s == 0.9
    assert outputs["session-a#1"].answer.usage.cost_usd == 0.00123
    assert [c.id for c in outputs[T3].retrieved] == ["orders-1", "ship-2"]
    assert [s.type for s in outputs[T3].answer.steps] == ["retrieve", "retrieve", "tool"]
    assert outputs[T4].error == "upstream timeout" and outputs[T4].latency_s == 0.25


def test_a_malformed_span_is_bad_input_naming_file_line_and_span():
    with pytest.raises(DatasetError) as raised:
        import_otlp([OTLP / "malformed.jsonl"])
    assert str(raised.value) == (
        f"{OTLP / 'malformed.jsonl'}:2: span 8a00000000000002: attribute "
        "'retrieval.documents.0.document.content': value is not an OTLP AnyValue object"
    )


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda s: s.pop("traceId"), "lacks traceId"),
        (lambda s: s.pop("spanId"), "span (no spanId, name 'rag'): lacks spanId"),
        (lambda s: s.pop("endTimeUnixNano"), "lacks endTimeUnixNano"),
        (
            lambda s: s.update(startTimeUnixNano="soon"),
            "startTimeUnixNano: expected an unsigned 64-bit integer",
        ),
        (
            lambda s: s["attributes"].append(
                {"key": "x", "value": {"stringValue": "a", "intValue": "1"}}
            ),
            "attribute 'x': value is not an OTLP AnyValue object",
        ),
        (
            lambda s: s["attributes"].append({"key": "x", "value": {"intValue": "ten"}}),
            "attribute 'x': intValue must be a signed 64-bit integer",
        ),
    ],
)
def test_unreadable_spans(tmp_path, change, reason):
    good = root_span(trace_id(1), "q?", "a")
    bad = root_span(trace_id(2), "q2?", "a2")
    change(bad)
    path = write_traces(tmp_path / "t.jsonl", [good, bad])
    with pytest.raises(DatasetError, match=r"t\.jsonl:2: ") as raised:
        import_otlp([path])
    assert reason in str(raised.value)


def test_a_span_in_a_pretty_printed_file_is_reported_at_its_own_line(tmp_path):
    spans = [root_span(trace_id(n), f"q{n}?", "a") for n in (1, 2)]
    spans[1]["attributes"].append(attribute("bad", {"boolValue": "yes"}))
    path = tmp_path / "one.json"
    path.write_text(json.dumps(document(spans), indent=2))
    with pytest.raises(DatasetError) as raised:
        import_otlp([path])
    line = path.read_text().splitlines().index(f'              "spanId": "{trace_id(2)[16:]}",') + 1
    assert str(raised.value).startswith(f"{path}:{line}: span {trace_id(2)[16:]}: ")


def test_a_repeated_span_is_bad_input(tmp_path):
    span = root_span(trace_id(1), "q?", "a")
    first = write_traces(tmp_path / "a.jsonl", [span])
    again = write_traces(tmp_path / "b.jsonl", [span])
    with pytest.raises(
        DatasetError, match=r"b\.jsonl:1: span .*repeats a span of trace .* read earlier"
    ):
        import_otlp([first, again])


def test_traces_that_cannot_be_cases_are_left_out_and_counted(tmp_path):
    orphan = root_span(trace_id(1), "q?", "a") | {"parentSpanId": "ffffffffffffffff"}
    silent = root_span(trace_id(2), "q?", "a")
    silent["attributes"] = [a for a in silent["attributes"] if a["key"] != "input.value"]
    kept = root_span(trace_id(3), "q?", "a")
    imported = import_otlp([write_traces(tmp_path / "t.jsonl", [orphan, silent, kept])])
    assert [c["id"] for c in imported.cases] == [trace_id(3)]
    assert imported.notes == [
        "left out 1 trace(s) without a root span (no span lacks a parent)",
        "left out 1 trace(s) whose root span has no input.value",
    ]


def _reference(key: str, rate: float, seed: str) -> bool:
    # CONTRACT section 18, written out again here rather than imported.
    return int(hashlib.sha256(f"{seed}:{key}".encode()).hexdigest(), 16) / 16**64 < rate


def _spans(numbers, session_every: int = 0):
    spans = []
    for n in numbers:
        session = f"s-{n // session_every}" if session_every else None
        spans.append(root_span(trace_id(n), f"q{n}?", f"a{n}", start_ms=n, session=session))
    return spans


@pytest.mark.parametrize(("rate", "seed"), [(0.3, "0"), (0.5, "7"), (0.05, "abc")])
def test_sampling_keeps_exactly_the_reference_traces(tmp_path, rate, seed):
    path = write_traces(tmp_path / "t.jsonl", _spans(range(1, 401)))
    imported = import_otlp([path], rate, seed)
    expected = [trace_id(n) for n in range(1, 401) if _reference(trace_id(n), rate, seed)]
    assert [c["id"] for c in imported.cases] == expected
    assert [o["case_id"] for o in imported.outputs] == expected
    assert 0 < len(expected) < 400
    assert imported.notes == [
        f"sampled {len(expected)} of 400 traces (rate {rate:g}, seed {seed}; sessions kept "
        "or dropped whole)"
    ]
    assert all(sampled(key, rate, seed) == _reference(key, rate, seed) for key in expected)


def test_the_same_seed_keeps_the_same_traces_across_two_files(tmp_path):
    first = write_traces(tmp_path / "a.jsonl", _spans(range(1, 201)))
    second = write_traces(tmp_path / "b.jsonl", _spans(range(201, 401)))
    apart = [c["id"] for p in (first, second) for c in import_otlp([p], 0.4, "3").cases]
    together = [c["id"] for c in import_otlp([first, second], 0.4, "3").cases]
    assert apart == together
    assert together == [t for t in map(trace_id, range(1, 401)) if _reference(t, 0.4, "3")]


def test_a_session_is_kept_or_dropped_whole_by_its_id(tmp_path):
    # 400 traces in 100 sessions of 4 (s-0 has 3: trace 0 does not exist).
    path = write_traces(tmp_path / "t.jsonl", _spans(range(1, 401), session_every=4))
    imported = import_otlp([path], 0.5, "1")
    kept = {c["id"]: len(c["turns"]) for c in imported.cases}
    sessions = {f"s-{n // 4}" for n in range(1, 401)}
    assert set(kept) == {s for s in sessions if _reference(s, 0.5, "1")}
    assert all(turns == (3 if sid == "s-0" else 4) for sid, turns in kept.items())


# --- hostile traces (issue 39, item 3) -------------------------------------------------------


def _with(key: str, value: dict) -> dict:
    span = root_span(trace_id(2), "q2?", "a2")
    span["attributes"].append(attribute(key, value))
    return span


def _nested_array(levels: int) -> str:
    value = '{"stringValue": "x"}'
    for _ in range(levels):
        value = '{"arrayValue": {"values": [' + value + "]}}"
    return value


def _line_with_attribute(raw_value: str) -> str:
    """A document line whose span's first attribute value is ``raw_value``, as written."""
    text = json.dumps(document([root_span(trace_id(2), "q2?", "a2")]))
    return text.replace(
        '"attributes": [', '"attributes": [{"key": "x", "value": ' + raw_value + "}, "
    )


def _tool_span(parameters: str) -> dict:
    return {
        "traceId": trace_id(2),
        "spanId": "c" * 16,
        "parentSpanId": trace_id(2)[16:],
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": [
            attribute("openinference.span.kind", {"stringValue": "TOOL"}),
            attribute("tool.name", {"stringValue": "lookup"}),
            attribute("tool.parameters", {"stringValue": parameters}),
        ],
    }


SPAN_2 = trace_id(2)[16:]
HOSTILE_SPANS = {
    "superscript time": (
        [root_span(trace_id(2), "q2?", "a2") | {"startTimeUnixNano": "\u00b2"}],
        f"2: span {SPAN_2}: startTimeUnixNano: expected an unsigned 64-bit integer",
    ),
    "double minus time": (
        [root_span(trace_id(2), "q2?", "a2") | {"endTimeUnixNano": "--5"}],
        f"2: span {SPAN_2}: endTimeUnixNano: expected an unsigned 64-bit integer",
    ),
    "time past 64 bits": (
        [root_span(trace_id(2), "q2?", "a2") | {"endTimeUnixNano": str(2**64)}],
        f"2: span {SPAN_2}: endTimeUnixNano: expected an unsigned 64-bit integer",
    ),
    "superscript intValue": (
        [_with("x", {"intValue": "\u00b2"})],
        f"2: span {SPAN_2}: attribute 'x': intValue must be a signed 64-bit integer",
    ),
    "double minus intValue": (
        [_with("x", {"intValue": "--5"})],
        f"2: span {SPAN_2}: attribute 'x': intValue must be a signed 64-bit integer",
    ),
    "5,000-digit intValue text": (
        [_with("x", {"intValue": "9" * 5000})],
        f"2: span {SPAN_2}: attribute 'x': intValue must be a signed 64-bit integer",
    ),
    "NaN doubleValue text": (
        [_with("x", {"doubleValue": "NaN"})],
        f"2: span {SPAN_2}: attribute 'x': doubleValue must be a finite number",
    ),
    "Infinity doubleValue text": (
        [_with("x", {"doubleValue": "Infinity"})],
        f"2: span {SPAN_2}: attribute 'x': doubleValue must be a finite number",
    ),
    "tool.parameters nested 100,000 deep": (
        [root_span(trace_id(2), "q2?", "a2"), _tool_span("[" * 100_000 + "]" * 100_000)],
        "3: span cccccccccccccccc: attribute 'tool.parameters': nested deeper than 64 levels",
    ),
    "tool.parameters with NaN": (
        [root_span(trace_id(2), "q2?", "a2"), _tool_span('{"limit": NaN}')],
        "3: span cccccccccccccccc: attribute 'tool.parameters': NaN is not a JSON number",
    ),
    "tool.parameters with a lone surrogate": (
        [root_span(trace_id(2), "q2?", "a2"), _tool_span('{"q": "\\udc00"}')],
        "3: span cccccccccccccccc: attribute 'tool.parameters': q: a lone surrogate",
    ),
}
HOSTILE_LINES = {
    "5,000-digit integer": (
        _line_with_attribute('{"intValue": ' + "9" * 5000 + "}"),
        f"2: span {SPAN_2}: an integer of more than 4300 digits",
    ),
    "10,000 nested arrayValues": (
        _line_with_attribute(_nested_array(10_000)),
        f"2: span {SPAN_2}: nested deeper than 64 levels",
    ),
    "bare NaN doubleValue": (
        _line_with_attribute('{"doubleValue": NaN}'),
        f"2: span {SPAN_2}: NaN is not a JSON number",
    ),
    "bare Infinity doubleValue": (
        _line_with_attribute('{"doubleValue": -Infinity}'),
        f"2: span {SPAN_2}: -Infinity is not a JSON number",
    ),
    "1e400 doubleValue": (
        _line_with_attribute('{"doubleValue": 1e400}'),
        f"2: span {SPAN_2}: 1e400 is out of range",
    ),
    "lone surrogate": (
        _line_with_attribute('{"stringValue": "a\\ud800b"}'),
        f"2: span {SPAN_2}: attribute 'x': a lone surrogate is not valid text",
    ),
    "lone surrogate in the question": (
        json.dumps(document([root_span(trace_id(2), "\ud83d?", "a2")])),
        f"2: span {SPAN_2}: attribute 'input.value': a lone surrogate is not valid text",
    ),
}


@pytest.mark.parametrize("name", list(HOSTILE_SPANS) + list(HOSTILE_LINES))
def test_hostile_traces_are_bad_input_naming_file_line_and_span(tmp_path, name):
    good = json.dumps(document([root_span(trace_id(1), "q?", "a")]))
    if name in HOSTILE_SPANS:
        spans, expected = HOSTILE_SPANS[name]
        lines = [good] + [json.dumps(document([span])) for span in spans]
    else:
        line, expected = HOSTILE_LINES[name]
        lines = [good, line]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as raised:
        import_otlp([path])
    assert str(raised.value).startswith(f"{path}:{expected}")
    assert "\n" not in str(raised.value)


def test_a_surrogate_pair_is_text_and_imports(tmp_path):
    line = json.dumps(document([root_span(trace_id(2), "\ud83d\ude00?", "a2")]))
    path = tmp_path / "t.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    assert import_otlp([path]).cases[0]["question"] == "\U0001f600?"


def test_a_deep_value_in_a_pretty_printed_file_names_its_line_and_span(tmp_path):
    spans = [root_span(trace_id(n), f"q{n}?", "a") for n in (1, 2)]
    text = json.dumps(document(spans), indent=2)
    marker = f'"spanId": "{SPAN_2}",'
    # A value nested 20,000 deep on the line after span 2's id.
    text = text.replace(marker, marker + '\n"links": ' + "[" * 20_000 + "]" * 20_000 + ",")
    path = tmp_path / "one.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DatasetError) as raised:
        import_otlp([path])
    line = text.splitlines().index(" " * 14 + marker) + 2
    assert str(raised.value) == f"{path}:{line}: span {SPAN_2}: nested deeper than 64 levels"


def test_a_trace_id_that_is_a_turns_id_is_bad_input(tmp_path):
    session_turn = root_span(trace_id(3), "q3?", "a3", session="s", start_ms=1)
    lookalike = root_span("s#1", "q4?", "a4", start_ms=2) | {"spanId": "d" * 16}
    path = write_traces(tmp_path / "t.jsonl", [session_turn, lookalike])
    with pytest.raises(DatasetError) as raised:
        import_otlp([path])
    assert str(raised.value) == (
        f"{path}:2: span {'d' * 16}: trace id 's#1' equals the id 's#1' of turn 1 of session 's'"
    )
