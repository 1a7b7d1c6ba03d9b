"""Read OpenTelemetry spans from OTLP/JSON files (CONTRACT section 18).

A file holds ``{"resourceSpans": [...]}`` documents, one a line (what the
OpenTelemetry SDK's file exporter and the Collector's file exporter write) or
one a file (pretty-printed or not). Each span is checked as it is read: it
needs ``traceId``, ``spanId`` and both times (unsigned 64-bit integers, ASCII
digits), and every attribute value must be an OTLP ``AnyValue`` object (an
``intValue`` a signed 64-bit integer, a ``doubleValue`` finite, nested at most
``MAX_DEPTH`` levels, no text with half a surrogate pair); anything else is bad
input naming the file, the line and the span id. The text is strict JSON read
within ``json_limits``' bounds: ``NaN``, a 5,000-digit number or a document nested
thousands deep is bad input too, naming the span it is in.

Only what ragproof reads is kept of a span (``Span``): its ids, times, status and
the OpenInference attributes of ``semconv``, decoded to plain Python values. A
span that is neither a root nor a retriever, tool or LLM span keeps nothing but
its ids and times, so a million spans fit in memory.
"""

from __future__ import annotations

import json
import math
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
from ragproof_core.json_limits import (
    MAX_DEPTH,
    MAX_INT_DIGITS,
    STRICT_DECODING,
    JsonLimitError,
    check_value,
    has_surrogate_escape,
    scan_depth,
)

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
_UINT64_MAX = 2**64 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# The tokens that place an offset in a document: strings (a key with its colon) and brackets.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"(?:\s*:)?|[\[\]{}]', re.DOTALL)
_WIDE_INT = re.compile(rf"[0-9]{{{MAX_INT_DIGITS + 1}}}")
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
    for line, document, surrogates in _documents(path_text):
        if not isinstance(document, dict) or "resourceSpans" not in document:
            raise DatasetError(path_text, line, "expected an OTLP/JSON object with resourceSpans")
        try:
            raws = list(_raw_spans(document))
        except SpanError as exc:
            raise DatasetError(path_text, line or 1, str(exc)) from None
        for raw in raws:
            try:
                if surrogates:  # only a document holding such an escape is walked
                    _check_text(raw)
                yield _span(raw, path_text, line)
            except SpanError as exc:
                at = line if line else _line_of(path_text, raw)
                raise DatasetError(path_text, at, f"span {_span_name(raw)}: {exc}") from None


def _check_text(raw: Any) -> None:
    """No text of the span holds half a surrogate pair; the message names the attribute."""
    attributes = raw.get("attributes") if isinstance(raw, dict) else None
    for attribute in attributes if isinstance(attributes, list) else ():
        key = attribute.get("key") if isinstance(attribute, dict) else None
        _check_json_text(attribute, f"attribute {key!r}" if isinstance(key, str) else "attributes")
    _check_json_text(raw, "span")


def _check_json_text(value: Any, what: str) -> None:
    try:
        check_value(value, what, json_only=True, max_depth=MAX_DEPTH)
    except JsonLimitError as exc:
        reason = str(exc).rpartition(": ")[2]
        raise SpanError(reason if what == "span" else f"{what}: {reason}") from None


def _documents(path: str) -> Iterator[tuple[int, Any, bool]]:
    """``(line, document, has a surrogate escape)`` for a file of one document a line,
    read a line at a time; line 0 for a file holding one document over many lines (its
    spans' lines are found on error)."""
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
            head = _text(first)
            document = _decode(head)
        except (json.JSONDecodeError, UnicodeDecodeError):
            handle.seek(0)
            yield _whole(path, handle.read())
            return
        except _Undecodable as exc:
            raise DatasetError(path, number, exc.message) from None
        yield number, document, has_surrogate_escape(head)
        for line, raw in enumerate(handle, start=number + 1):
            if not raw.strip():
                continue
            try:
                text = _text(raw)
                yield line, _decode(text), has_surrogate_escape(text)
            except json.JSONDecodeError as exc:
                raise DatasetError(path, line, f"not valid JSON ({exc.msg})") from None
            except UnicodeDecodeError:
                raise DatasetError(path, line, "not UTF-8 text") from None
            except _Undecodable as exc:
                raise DatasetError(path, line, exc.message) from None


def _whole(path: str, data: bytes) -> tuple[int, Any, bool]:
    try:
        text = _text(data)
        return 0, _decode(text), has_surrogate_escape(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(path, exc.lineno, f"not valid JSON ({exc.msg})") from None
    except UnicodeDecodeError:
        raise DatasetError(path, 1, "not UTF-8 text") from None
    except _Undecodable as exc:
        raise DatasetError(path, text.count("\n", 0, exc.offset) + 1, exc.message) from None


def _text(raw: bytes) -> str:
    return raw.decode("utf-8-sig")


class _Undecodable(Exception):
    """JSON text past a bound (``json_limits``): ``message`` names the span it is in."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


def _decode(text: str) -> Any:
    """The JSON document ``text``, strict and bounded (the module's docstring); a bound
    passed raises ``_Undecodable``, bad JSON ``json.JSONDecodeError``."""
    try:
        return json.loads(text, **STRICT_DECODING)
    except RecursionError:
        # Nested thousands deep: the scan finds where (and raises), else decoding failed
        # for a depth below the scan's bound and the decoder's own error stands.
        try:
            scan_depth(text, MAX_DEPTH)
        except JsonLimitError as exc:
            raise _undecodable(text, str(exc), exc.offset) from None
        raise
    except JsonLimitError as exc:
        raise _undecodable(text, str(exc), _offset_of(text, str(exc))) from None


def _offset_of(text: str, reason: str) -> int:
    """Where in ``text`` the value a decoding callback refused is (the decoder does not say)."""
    if "digits" in reason:
        found = _WIDE_INT.search(text)
    else:
        word = reason.split(" ", 1)[0].removesuffix("...")
        found = re.search(re.escape(word), text)
    return found.start() if found is not None else 0


def _undecodable(text: str, reason: str, offset: int) -> _Undecodable:
    span = _span_id_around(text, offset)
    return _Undecodable(f"span {span}: {reason}" if span else reason, offset)


def _span_id_around(text: str, offset: int) -> str | None:
    """The ``spanId`` of the span object (an element of a ``spans`` list) that holds
    ``offset``, read from the text alone; None outside a span or without one."""
    stack: list[tuple[str, str | None, int]] = []  # (bracket, the key it is under, start)
    key: str | None = None
    span_start = None
    for match in _TOKEN.finditer(text):
        if match.start() >= offset:
            break
        token = match.group()
        if token[0] == '"':
            key = token if token.endswith(":") else None
            continue
        if token in "[{":
            stack.append((token, key, match.start()))
        elif stack:
            stack.pop()
        key = None
    for depth, (bracket, _, start) in enumerate(stack):
        if bracket == "{" and depth and stack[depth - 1][:2] == ("[", '"spans":'):
            span_start = start
            break
    if span_start is None:
        return None
    depth = 0
    tokens = _TOKEN.finditer(text, span_start)
    for match in tokens:
        token = match.group()
        if token in "[{":
            depth += 1
        elif token in "]}":
            depth -= 1
            if depth == 0:
                return None
        elif depth == 1 and token.startswith('"spanId"') and token.endswith(":"):
            value = next(tokens, None)
            if value is not None and value.group()[0] == '"' and not value.group().endswith(":"):
                return json.loads(value.group())
    return None


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
    if isinstance(value, str) and _is_decimal(value):
        value = int(value)
    if type(value) is int and 0 <= value <= _UINT64_MAX:
        return value
    raise SpanError(
        f"lacks {key}" if value is None else f"{key}: expected an unsigned 64-bit integer"
    )


def _is_decimal(text: str) -> bool:
    """ASCII digits, at most 20 (a 64-bit integer's): OTLP/JSON's spelling of its fixed64
    and int64 numbers. ``str.isdigit`` alone takes "²", which ``int`` refuses."""
    return 0 < len(text) <= 20 and text.isascii() and text.isdigit()


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


def any_value(key: str, value: Any, depth: int = 0) -> Any:
    """An OTLP/JSON AnyValue as a plain Python value (an empty AnyValue is None), nested
    at most ``MAX_DEPTH`` arrays and kvlists deep."""
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
        if isinstance(inner, str) and _is_decimal(inner.removeprefix("-")):
            inner = int(inner)
        if type(inner) is int and _INT64_MIN <= inner <= _INT64_MAX:
            return inner
        raise SpanError(f"attribute {key!r}: intValue must be a signed 64-bit integer")
    if field == "doubleValue":
        # OTLP/JSON may spell a double as a string ("1.5", "NaN"); ragproof writes only
        # strict JSON, so a NaN or an infinity is refused here, not written out.
        if isinstance(inner, bool) or not isinstance(inner, int | float | str):
            raise SpanError(f"attribute {key!r}: doubleValue must be a number")
        try:
            number = float(inner)
        except (ValueError, OverflowError):
            raise SpanError(f"attribute {key!r}: doubleValue must be a number") from None
        if not math.isfinite(number):
            raise SpanError(f"attribute {key!r}: doubleValue must be a finite number")
        return number
    values = inner.get("values", []) if isinstance(inner, dict) else None
    if not isinstance(values, list):
        raise SpanError(f"attribute {key!r}: {field} must hold a list of values")
    if depth >= MAX_DEPTH:
        raise SpanError(f"attribute {key!r}: nested deeper than {MAX_DEPTH} levels")
    if field == "arrayValue":
        return [any_value(key, item, depth + 1) for item in values]
    out = {}
    for item in values:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise SpanError(f"attribute {key!r}: kvlistValue must hold {{key, value}} objects")
        out[item["key"]] = any_value(key, item.get("value"), depth + 1)
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
