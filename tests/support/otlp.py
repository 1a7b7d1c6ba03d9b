"""Small OTLP/JSON documents for tests: traces of one root span (and an optional retriever),
as an OpenInference-instrumented pipeline would export them."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

T0_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z


def text(value: str) -> dict:
    return {"stringValue": value}


def attribute(key: str, value: dict) -> dict:
    return {"key": key, "value": value}


def root_span(
    trace_id: str,
    question: str,
    answer: str,
    *,
    start_ms: int = 0,
    duration_ms: int = 100,
    session: str | None = None,
) -> dict:
    attributes = [
        attribute("openinference.span.kind", text("CHAIN")),
        attribute("input.value", text(question)),
        attribute("output.value", text(answer)),
    ]
    if session is not None:
        attributes.append(attribute("session.id", text(session)))
    return {
        "traceId": trace_id,
        "spanId": trace_id[16:],
        "name": "rag",
        "startTimeUnixNano": str(T0_NS + start_ms * 1_000_000),
        "endTimeUnixNano": str(T0_NS + (start_ms + duration_ms) * 1_000_000),
        "attributes": attributes,
    }


def document(spans: Iterable[dict]) -> dict:
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": list(spans)}]}]}


def write_traces(path: Path, spans: Iterable[dict]) -> Path:
    """One OTLP/JSON document a line, one span a document."""
    path.write_text("".join(json.dumps(document([span])) + "\n" for span in spans))
    return path


def trace_id(number: int) -> str:
    return f"{number:032x}"
