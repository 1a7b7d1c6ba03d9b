"""Read OpenTelemetry spans from OTLP/JSON files (CONTRACT section 18).

A file holds ``{"resourceSpans": [...]}`` documents, one a line (what the
OpenTelemetry SDK's file exporter and the Collector's file exporter write) or
one a file (pretty-printed or not). Each span is checked as it is read: it
needs ``traceId``, ``spanId`` and both times, and every attribute value must be
an OTLP ``AnyValue`` object; anything else is bad input naming the file, the
line and the span id.

Only what ragproof reads is kept of a span (``Span``): its ids, times, status and
the OpenInference attributes of ``semconv``, decoded to plain Python values. A
span that is neither a root nor a retriever, tool or LLM span keeps nothing but
its ids and times, so a million spans fit in memory.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openinference.semconv.trace import (
    DocumentAttributes,
    OpenInferenceSpanKindValues,
    SpanAttributes,
    ToolAttributes,
)

from ragproof_core.data.dataset import DatasetError

ROOT_KEYS = frozenset(
    {
        SpanAttributes.INPUT_VALUE,
        SpanAttributes.INPUT_MIME_TYPE,
        SpanAttributes.OUTPUT_VALUE,
        SpanAttributes.OUTPUT_MIME_TYPE,
        SpanAttributes.SESSION_ID,
    }
)
KIND_KEYS: dict[str, frozenset[str]] = {
    OpenInferenceSpanKindValues.RETRIEVER.value: frozenset(
        {SpanAttributes.INPUT_VALUE, SpanAttributes.INPUT_MIME_TYPE}
    ),
    OpenInferenceSpanKindValues.TOOL.value: frozenset(
        {
            ToolAttributes.TOOL_NAME,
            SpanAttributes.TOOL_PARAMETERS,
            SpanAttributes.INPUT_VALUE,
            SpanAttributes.INPUT_MIME_TYPE,
            SpanAttributes.OUTPUT_VALUE,
        }
    ),
    OpenInferenceSpanKindValues.LLM.value: frozenset(
        {
            SpanAttributes.LLM_TOKEN_COUNT_PROMPT,
            SpanAttributes.LLM_TOKEN_COUNT_COMPLETION,
            SpanAttributes.LLM_COST_TOTAL,
        }
    ),
}
# retrieval.documents.N.document.{id,content,score,metadata}
DOCUMENT_KEY = re.compile(
    re.escape(SpanAttributes.RETRIEVAL_DOCUMENTS)
    + r"\.(\d+)\.("
    + "|".join(
        re.escape(key)
        for key in (
            DocumentAttributes.DOCUMENT_ID,
            DocumentAttributes.DOCUMENT_CONTENT,
            DocumentAttributes.DOCUMENT_SCORE,
            DocumentAttributes.DOCUMENT_METADATA,
        )
    )
    + r")$"
)
_ANY_VALUE_KEYS = frozenset(
    {
        "stringValue",
        "boolValue",
        "intValue",
        "doubleValue",
        "arrayValue",
        "kvlistValue",
        "bytesValue",
    }
)
STATUS_ERROR = 2  # OTLP's STATUS_CODE_ERROR
_STATUS_NAMES = {"STATUS_CODE_ERROR": STATUS_ERROR, "STATUS_CODE_OK": 1, "STATUS_CODE_UNSET": 0}


@dataclass(slots=True)
class Span:
    """One span as ragproof reads it; ``attributes`` holds only the keys it uses."""

    trace_id: str
    span_id: str
    parent_id: str | None
    start_ns: int
    end_ns: int
    kind: str | None
    attributes: dict[str, Any]
    # {N: {"id"|"content"|"score"|"metadata": value}} of a retriever span.
    documents: dict[int, dict[str, Any]] | None
    error: str | None  # the status message of a span whose status is ERROR
    path: str
    line: int

    @property
    def is_root(self) -> bool:
        return not self.parent_id


class SpanError(ValueError):
    """A span ragproof cannot read; the reader adds the file and line."""


def iter_spans(path: str | Path) -> Iterator[Span]:
    """Every span of one OTLP/JSON file, checked, in file order."""
    path_text = str(path)
    for line, document in _documents(path_text):
        if not isinstance(document, dict) or "resourceSpans" not in document:
            raise DatasetError(path_text, line, "expected an OTLP/JSON object with resourceSpans")
        try:
            raws = list(_raw_spans(document))
        except SpanError as exc:
            raise DatasetError(path_text, line or 1, str(exc)) from None
        for raw in raws:
            try:
                yield _span(raw, path_text, line)
            except SpanError as exc:
                at = line if line else _line_of(path_text, raw)
                raise DatasetError(path_text, at, f"span {_span_name(raw)}: {exc}") from None


def _documents(path: str) -> Iterator[tuple[int, Any]]:
    """``(line, document)`` for a file of one document a line, read a line at a time;
    ``(0, document)`` for a file holding one document over many lines (its spans'
    lines are found on error)."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise DatasetError(path, 0, f"cannot read file ({exc.strerror or exc})") from None
    with handle:
        number, first = 0, b""
        for number, first in enumerate(handle, start=1):  # noqa: B007 - the first content line
            if first.strip():
                break
        if not first.strip():
            raise DatasetError(path, 1, "file holds no OTLP/JSON document")
        try:
            head = json.loads(first)
        except (ValueError, UnicodeDecodeError):
            handle.seek(0)
            yield 0, _whole(path, handle.read())
            return
        yield number, head
        for line, raw in enumerate(handle, start=number + 1):
            if not raw.strip():
                continue
            try:
                yield line, json.loads(raw)
            except json.JSONDecodeError as exc:
                raise DatasetError(path, line, f"not valid JSON ({exc.msg})") from None
            except UnicodeDecodeError:
                raise DatasetError(path, line, "not UTF-8 text") from None


def _whole(path: str, data: bytes) -> Any:
    try:
        return json.loads(data)
    except json.JSONDecodeError as exc:
        raise DatasetError(path, exc.lineno, f"not valid JSON ({exc.msg})") from None
    except UnicodeDecodeError:
        raise DatasetError(path, 1, "not UTF-8 text") from None


def _raw_spans(document: dict) -> Iterator[Any]:
    for resource in _list(document.get("resourceSpans"), "resourceSpans"):
        if not isinstance(resource, dict):
            raise SpanError("resourceSpans: expected objects")
        # scopeSpans; instrumentationLibrarySpans in OTLP before 0.15.
        scopes = resource.get("scopeSpans", resource.get("instrumentationLibrarySpans"))
        for scope in _list(scopes, "scopeSpans"):
            if not isinstance(scope, dict):
                raise SpanError("scopeSpans: expected objects")
            yield from _list(scope.get("spans"), "spans")


def _list(value: Any, name: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise SpanError(f"{name}: expected a list")
    return value


def _span(raw: Any, path: str, line: int) -> Span:
    if not isinstance(raw, dict):
        raise SpanError("expected a span object")
    trace_id = _id(raw, "traceId")
    span_id = _id(raw, "spanId")
    parent = raw.get("parentSpanId")
    if parent is not None and not isinstance(parent, str):
        raise SpanError("parentSpanId: expected a hex string")
    start, end = _time(raw, "startTimeUnixNano"), _time(raw, "endTimeUnixNano")
    if end < start:
        raise SpanError("endTimeUnixNano is before startTimeUnixNano")
    decoded = _attributes(_list(raw.get("attributes"), "attributes"))
    kind = decoded.get(SpanAttributes.OPENINFERENCE_SPAN_KIND)
    kind = kind.upper() if isinstance(kind, str) else None
    wanted = KIND_KEYS.get(kind or "", frozenset())
    if not parent:
        wanted = wanted | ROOT_KEYS
    kept = {key: decoded[key] for key in wanted if key in decoded}
    documents: dict[int, dict[str, Any]] | None = None
    if kind == OpenInferenceSpanKindValues.RETRIEVER.value:
        for key, value in decoded.items():
            found = DOCUMENT_KEY.match(key)
            if found is not None:
                documents = {} if documents is None else documents
                field = found.group(2).removeprefix("document.")
                documents.setdefault(int(found.group(1)), {})[field] = value
    if kind == OpenInferenceSpanKindValues.TOOL.value and isinstance(raw.get("name"), str):
        kept["span.name"] = raw["name"]  # the tool's name when tool.name is absent
    return Span(
        trace_id,
        span_id,
        parent or None,
        start,
        end,
        kind,
        kept,
        documents,
        _error(raw.get("status")),
        path,
        line,
    )


def _id(raw: dict, key: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise SpanError(f"lacks {key}")
    return value


def _time(raw: dict, key: str) -> int:
    value = raw.get(key)
    # OTLP/JSON writes 64-bit integers as decimal strings; some writers use numbers.
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if type(value) is int and value >= 0:
        return value
    raise SpanError(f"lacks {key}" if value is None else f"{key}: expected an integer")


def _attributes(attributes: list) -> dict[str, Any]:
    """Every attribute decoded, used or not: a malformed value is bad input wherever it is.
    A plain string value (most of them) takes the short way."""
    decoded: dict[str, Any] = {}
    for attribute in attributes:
        key = attribute.get("key") if type(attribute) is dict else None
        if type(key) is not str:
            raise SpanError("attributes: expected {key, value} objects")
        value = attribute.get("value")
        if type(value) is dict and len(value) == 1 and type(value.get("stringValue")) is str:
            decoded[key] = value["stringValue"]
        else:
            decoded[key] = any_value(key, value)
    return decoded


def _error(status: Any) -> str | None:
    if not isinstance(status, dict):
        return None
    code = status.get("code")
    code = _STATUS_NAMES.get(code, code) if isinstance(code, str) else code
    if code != STATUS_ERROR:
        return None
    message = status.get("message")
    return message if isinstance(message, str) and message.strip() else "span status ERROR"


def _check_any_value(key: str, value: Any) -> None:
    """The value is an AnyValue object: an object with at most one of its fields (none: empty)."""
    if not isinstance(value, dict) or len(value) > 1 or not value.keys() <= _ANY_VALUE_KEYS:
        raise SpanError(f"attribute {key!r}: value is not an OTLP AnyValue object")


def any_value(key: str, value: Any) -> Any:
    """An OTLP/JSON AnyValue as a plain Python value (an empty AnyValue is None)."""
    _check_any_value(key, value)
    if not value:
        return None
    ((field, inner),) = value.items()
    if field == "stringValue" or field == "bytesValue":
        if not isinstance(inner, str):
            raise SpanError(f"attribute {key!r}: {field} must be a string")
        return inner
    if field == "boolValue":
        if not isinstance(inner, bool):
            raise SpanError(f"attribute {key!r}: boolValue must be true or false")
        return inner
    if field == "intValue":
        if isinstance(inner, str) and inner.lstrip("-").isdigit():
            return int(inner)
        if type(inner) is int:
            return inner
        raise SpanError(f"attribute {key!r}: intValue must be an integer")
    if field == "doubleValue":
        if isinstance(inner, bool) or not isinstance(inner, int | float | str):
            raise SpanError(f"attribute {key!r}: doubleValue must be a number")
        try:
            return float(inner)  # "NaN", "Infinity" are how JSON spells them
        except ValueError:
            raise SpanError(f"attribute {key!r}: doubleValue must be a number") from None
    values = inner.get("values", []) if isinstance(inner, dict) else None
    if not isinstance(values, list):
        raise SpanError(f"attribute {key!r}: {field} must hold a list of values")
    if field == "arrayValue":
        return [any_value(key, item) for item in values]
    out = {}
    for item in values:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise SpanError(f"attribute {key!r}: kvlistValue must hold {{key, value}} objects")
        out[item["key"]] = any_value(key, item.get("value"))
    return out


def _span_name(raw: Any) -> str:
    span_id = raw.get("spanId") if isinstance(raw, dict) else None
    if isinstance(span_id, str) and span_id.strip():
        return span_id
    name = raw.get("name") if isinstance(raw, dict) else None
    return f"(no spanId{f', name {name!r}' if isinstance(name, str) else ''})"


def _line_of(path: str, raw: Any) -> int:
    """The line of a span in a one-document file: where its ``"spanId"`` (else
    ``"traceId"``, else ``"name"``) key holds its value; 1 when none is found."""
    patterns = []
    if isinstance(raw, dict):
        for key in ("spanId", "traceId", "name"):
            value = raw.get(key)
            if isinstance(value, str) and value:
                patterns.append(re.compile(rf'"{key}"\s*:\s*{re.escape(json.dumps(value))}'))
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 1
    for pattern in patterns:
        found = pattern.search(text)
        if found is not None:
            return text.count("\n", 0, found.start()) + 1
    return 1
