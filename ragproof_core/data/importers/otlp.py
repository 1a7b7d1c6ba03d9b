"""``ragproof import otlp``: production traces as cases and recorded outputs (CONTRACT section 18).

Spans (``otlp_spans``) may come in any order and across files: they are grouped
by trace id first, and a trace split over two files is one case. Per trace, the
root span (no ``parentSpanId``; the earliest if there are several) carries the
question (``input.value``), the answer (``output.value``), the session
(``session.id``) and the latency (its duration). ``RETRIEVER`` spans are
retrieve steps (``retrieval.documents.N.document.*``; the first, by start time,
is the case's retrieval), ``TOOL`` spans tool steps (``tool.name``,
``tool.parameters``), and ``llm.token_count.prompt`` / ``.completion`` (and
``llm.cost.total``) summed over ``LLM`` spans the answer's ``usage``. The
attribute names are read from the ``openinference-semantic-conventions``
package.

Traces sharing a ``session.id`` become one conversation (CONTRACT section 16)
whose id is the session id, its turns the traces in start order.

Sampling keeps a trace when ``int(sha256(f"{SEED}:{KEY}").hexdigest(), 16) /
16**64 < RATE``, KEY the trace id, or the session id for a trace in a session,
so a session is kept or dropped whole, and every tool that applies the rule
keeps the same traces.

A trace without a root span (its root is in a file not given) or whose root has
no ``input.value`` cannot be a case: it is left out and counted in a note.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openinference.semconv.trace import (
    DocumentAttributes,
    OpenInferenceMimeTypeValues,
    OpenInferenceSpanKindValues,
    SpanAttributes,
    ToolAttributes,
)

from ragproof_core.data.dataset import DatasetError
from ragproof_core.data.importers.otlp_spans import Span, iter_spans
from ragproof_core.data.importers.writer import Imported
from ragproof_core.gc_pause import collector_paused
from ragproof_core.json_limits import JsonLimitError, check_value, loads_bounded
from ragproof_core.model import turn_id

RETRIEVER = OpenInferenceSpanKindValues.RETRIEVER.value
TOOL = OpenInferenceSpanKindValues.TOOL.value
LLM = OpenInferenceSpanKindValues.LLM.value
JSON_MIME = OpenInferenceMimeTypeValues.JSON.value
# Keys whose string value is the text of a JSON input or output (LangChain's
# ``{"question": ...}``, LlamaIndex's ``{"query_str": ...}``), in order of preference.
TEXT_KEYS = ("question", "query", "query_str", "input", "answer", "output", "response", "text")
_SAMPLE_SCALE = 16**64
DOCUMENT_METADATA = f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.N.{DocumentAttributes.DOCUMENT_METADATA}"


def sampled(key: str, rate: float, seed: int | str = 0) -> bool:
    """CONTRACT section 18's sampling rule: ``int(sha256(SEED:KEY)) / 16**64 < RATE``."""
    if rate >= 1.0:
        return True
    digest = hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()
    return int(digest, 16) / _SAMPLE_SCALE < rate


@dataclass(slots=True)
class _Trace:
    """What one trace contributes, gathered as its spans arrive."""

    roots: list[Span] = field(default_factory=list)
    steps: list[Span] = field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None


@dataclass(frozen=True, slots=True)
class _Turn:
    """One trace that can be a case: its key for sampling and order, question and line."""

    trace_id: str
    session_id: str | None
    start_ns: int
    question: str
    line: dict[str, Any]
    root: Span


def import_otlp(paths: Sequence[str | Path], rate: float = 1.0, seed: int | str = 0) -> Imported:
    """Cases and recorded outputs from OTLP/JSON ``paths``, sampled at ``rate`` with ``seed``."""
    # A million spans build millions of small objects and no reference cycles.
    with collector_paused():
        traces = _gather(paths)
        turns, notes = _turns(traces)
        total_traces = len(turns)
        kept = [t for t in turns if sampled(t.session_id or t.trace_id, rate, seed)]
        cases, outputs = _rows(kept)
    if rate < 1.0:
        notes.append(
            f"sampled {len(kept)} of {total_traces} traces (rate {rate:g}, seed {seed}; "
            "sessions kept or dropped whole)"
        )
    return Imported(cases, outputs, notes)


def _gather(paths: Iterable[str | Path]) -> dict[str, _Trace]:
    traces: dict[str, _Trace] = {}
    # Each span's (trace id, span id) kept as its 64-bit hash: a million spans in tens of
    # MB rather than hundreds (two distinct spans share a hash with odds near 1e-8).
    seen: set[int] = set()
    for path in paths:
        for span in iter_spans(path):
            key = hash((span.trace_id, span.span_id))
            if key in seen:
                raise DatasetError(
                    span.path,
                    span.line,
                    f"span {span.span_id}: repeats a span of trace {span.trace_id} read earlier",
                )
            seen.add(key)
            trace = traces.get(span.trace_id)
            if trace is None:
                trace = traces[span.trace_id] = _Trace()
            _add(trace, span)
    return traces


def _add(trace: _Trace, span: Span) -> None:
    if span.is_root:
        trace.roots.append(span)
    if span.kind in (RETRIEVER, TOOL):
        trace.steps.append(span)
    elif span.kind == LLM:
        attributes = span.attributes
        prompt = _count(span, SpanAttributes.LLM_TOKEN_COUNT_PROMPT)
        completion = _count(span, SpanAttributes.LLM_TOKEN_COUNT_COMPLETION)
        if prompt is not None:
            trace.input_tokens = (trace.input_tokens or 0) + prompt
        if completion is not None:
            trace.output_tokens = (trace.output_tokens or 0) + completion
        cost = attributes.get(SpanAttributes.LLM_COST_TOTAL)
        if isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0:
            trace.cost_usd = (trace.cost_usd or 0.0) + float(cost)


def _count(span: Span, key: str) -> int | None:
    value = span.attributes.get(key)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if type(value) is not int or value < 0:
        raise DatasetError(
            span.path, span.line, f"span {span.span_id}: {key} must be a non-negative integer"
        )
    return value


def _turns(traces: dict[str, _Trace]) -> tuple[list[_Turn], list[str]]:
    turns: list[_Turn] = []
    rootless, questionless = 0, 0
    for trace_id, trace in traces.items():
        if not trace.roots:
            rootless += 1
            continue
        root = min(trace.roots, key=lambda span: (span.start_ns, span.span_id))
        question = _text(root, SpanAttributes.INPUT_VALUE, SpanAttributes.INPUT_MIME_TYPE)
        if question is None or not question.strip():
            questionless += 1
            continue
        session = root.attributes.get(SpanAttributes.SESSION_ID)
        session_id = None if session is None or str(session) == "" else str(session)
        turns.append(_Turn(trace_id, session_id, root.start_ns, question, _line(root, trace), root))
    notes = []
    if rootless:
        notes.append(f"left out {rootless} trace(s) without a root span (no span lacks a parent)")
    if questionless:
        notes.append(f"left out {questionless} trace(s) whose root span has no input.value")
    turns.sort(key=lambda turn: (turn.start_ns, turn.trace_id))
    return turns, notes


_NOT_JSON = object()


def _json_text(span: Span, key: str, text: str) -> Any:
    """The value of an attribute's JSON text, ``_NOT_JSON`` when it is not JSON. Text
    past ``json_limits``' bounds (nested thousands deep, a NaN, half a surrogate pair)
    is bad input naming the span: it would fail wherever it is next written."""
    try:
        value = loads_bounded(text)
        if "\\u" in text:  # an escape may decode to half a surrogate pair
            check_value(value, key, json_only=True)
    except JsonLimitError as exc:
        reason = str(exc).removeprefix(key).lstrip(".: ")
        raise DatasetError(
            span.path, span.line, f"span {span.span_id}: attribute {key!r}: {reason}"
        ) from None
    except ValueError:
        return _NOT_JSON
    return value


def _text(span: Span, value_key: str, mime_key: str) -> str | None:
    """An input or output value as text: a JSON object's text field when the value is
    JSON (``TEXT_KEYS``, or its only string value), else the value itself."""
    value = span.attributes.get(value_key)
    if value is None:
        return None
    if not isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if span.attributes.get(mime_key) != JSON_MIME:
        return value
    data = _json_text(span, value_key, value)
    if isinstance(data, str):
        return data
    if isinstance(data, dict):
        for key in TEXT_KEYS:
            if isinstance(data.get(key), str):
                return data[key]
        strings = [item for item in data.values() if isinstance(item, str)]
        if len(strings) == 1:
            return strings[0]
    return value


def _line(root: Span, trace: _Trace) -> dict[str, Any]:
    """The trace's recorded-output line (CONTRACT section 2), without its case id."""
    latency = (root.end_ns - root.start_ns) / 1e9
    if root.error is not None:
        return {"error": root.error, "latency_s": latency}
    ordered = sorted(trace.steps, key=lambda span: (span.start_ns, span.span_id))
    steps = [_retrieve_step(s) if s.kind == RETRIEVER else _tool_step(s) for s in ordered]
    line: dict[str, Any] = {}
    retrievals = [step for step in steps if step["type"] == "retrieve"]
    if retrievals:
        line["retrieve"] = retrievals[0]["chunks"]
    answer = _text(root, SpanAttributes.OUTPUT_VALUE, SpanAttributes.OUTPUT_MIME_TYPE)
    if answer is not None:
        line["answer"] = {"text": answer, "steps": steps}
        usage = {
            name: value
            for name, value in (
                ("input_tokens", trace.input_tokens),
                ("output_tokens", trace.output_tokens),
                ("cost_usd", trace.cost_usd),
            )
            if value is not None
        }
        if usage:
            line["answer"]["usage"] = usage
    elif not retrievals:
        line["error"] = "the trace's root span has no output.value"
    line["latency_s"] = latency
    return line


def _retrieve_step(span: Span) -> dict[str, Any]:
    query = _text(span, SpanAttributes.INPUT_VALUE, SpanAttributes.INPUT_MIME_TYPE)
    documents = span.documents or {}
    chunks = [_chunk(span, documents[index]) for index in sorted(documents)]
    return {"type": "retrieve", "query": query or "", "chunks": chunks}


def _chunk(span: Span, document: dict[str, Any]) -> dict[str, Any]:
    """A retrieved document as a chunk. Instrumentations often leave out
    ``document.id`` (LangChain's does): the id is then ``sha256:`` and the first 16 hex
    digits of the content's hash, the same for the same text in every trace."""
    content = document.get("content")
    text = content if isinstance(content, str) else ""
    chunk_id = document.get("id")
    if chunk_id is None or str(chunk_id) == "":
        chunk_id = "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]
    chunk: dict[str, Any] = {"id": str(chunk_id), "text": text}
    score = document.get("score")
    if isinstance(score, int | float) and not isinstance(score, bool):
        chunk["score"] = float(score)
    metadata = _object(span, DOCUMENT_METADATA, document.get("metadata"))
    if metadata:
        chunk["metadata"] = metadata
    return chunk


def _object(span: Span, key: str, value: Any) -> dict[str, Any] | None:
    """A JSON object given as an object or as JSON text; other values under ``value``."""
    if value is None:
        return None
    if isinstance(value, str):
        parsed = _json_text(span, key, value)
        value = {"value": value} if parsed is _NOT_JSON else parsed
    return value if isinstance(value, dict) else {"value": value}


def _tool_step(span: Span) -> dict[str, Any]:
    parameters = SpanAttributes.TOOL_PARAMETERS
    arguments = _object(span, parameters, span.attributes.get(parameters))
    if arguments is None or set(arguments) == {"value"}:
        # No JSON object in tool.parameters: the call's input is its arguments, a
        # JSON object as it is, any other input under "input".
        given = span.attributes.get(SpanAttributes.INPUT_VALUE)
        parsed = _object(span, SpanAttributes.INPUT_VALUE, given)
        if parsed is not None and set(parsed) != {"value"}:
            arguments = parsed
        elif given is not None:
            arguments = {"input": given}
        else:
            arguments = {}
    name = span.attributes.get(ToolAttributes.TOOL_NAME) or span.attributes.get("span.name")
    step: dict[str, Any] = {"type": "tool", "name": str(name or ""), "arguments": arguments}
    output = span.attributes.get(SpanAttributes.OUTPUT_VALUE)
    if output is not None:
        step["output"] = output if isinstance(output, str) else json.dumps(output)
    return step


def _rows(turns: Sequence[_Turn]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Cases and recorded lines: a trace alone is a case, a session a conversation placed
    where its first turn started."""
    sessions: dict[str, list[_Turn]] = {}
    order: list[tuple[str, str]] = []
    for turn in turns:
        if turn.session_id is None:
            order.append(("trace", turn.trace_id))
            continue
        if turn.session_id not in sessions:
            order.append(("session", turn.session_id))
        sessions.setdefault(turn.session_id, []).append(turn)
    by_trace = {turn.trace_id: turn for turn in turns if turn.session_id is None}
    cases, outputs = [], []
    ids: dict[str, str] = {}  # every case id so far (a session's turn ids too): what it is
    for what, key in order:
        # A trace id may look like a turn's id ("s#1", turn 1 of session "s"): the dataset
        # would hold that id twice, so the trace is refused here, not by the run.
        own = [(key, f"{what} id {key!r}")]
        if what == "session":
            own += [
                (turn_id(key, n), f"the id {turn_id(key, n)!r} of turn {n} of session {key!r}")
                for n in range(1, len(sessions[key]) + 1)
            ]
        for case_id, described in own:
            if case_id in ids:
                root = (by_trace.get(key) or sessions[key][0]).root
                raise DatasetError(
                    root.path,
                    root.line,
                    f"span {root.span_id}: {described} equals {ids[case_id]}",
                )
            ids[case_id] = described
        if what == "trace":
            turn = by_trace[key]
            cases.append({"id": key, "question": turn.question, "metadata": {"trace_id": key}})
            outputs.append({"case_id": key, **turn.line})
            continue
        members = sessions[key]
        cases.append(
            {
                "id": key,
                "kind": "conversation",
                "turns": [{"question": turn.question} for turn in members],
                "metadata": {"session_id": key, "trace_ids": [t.trace_id for t in members]},
            }
        )
        outputs.append({"case_id": key, "turns": [turn.line for turn in members]})
    return cases, outputs
