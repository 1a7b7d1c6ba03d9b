"""Turn whatever an adapter returned into ragproof's ``Chunk`` and ``Answer`` records.

Adapters may return the dataclasses from ``ragproof_core.model``, plain dicts
with the CONTRACT section 2 keys, or any object carrying those attributes
(a pydantic model, another library's dataclass). Validation is strict on
purpose: ids must be strings (an int id would silently fail to match the
dataset's string ids), and a bare string is not an answer, so a pipeline that
forgot to wrap its output is reported instead of half-scored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ragproof_core.json_limits import JsonLimitError, check_value, has_surrogate
from ragproof_core.model import Answer, Chunk, RetrieveStep, Step, ToolStep, Usage

_MISSING = object()
# Metadata values stored without a closer look (an int only within 64 bits).
_PLAIN = (str, float, bool, type(None))
_INT64 = range(-(2**63), 2**63)


class AdapterOutputError(ValueError):
    """An adapter returned something that is not a valid Chunk or Answer."""


def to_chunk(obj: Any) -> Chunk:
    """One retrieved chunk: a ``Chunk``, a dict with ``id``/``text``, or an object with them."""
    if type(obj) is dict:
        # Fast path for the common, well-formed case (a recorded replay parses
        # a million of these); anything unusual takes the careful path below.
        chunk_id, text = obj.get("id"), obj.get("text")
        score, metadata = obj.get("score"), obj.get("metadata")
        if (
            type(chunk_id) is str
            and type(text) is str
            and (score is None or type(score) is float)
            and (metadata is None or type(metadata) is dict)
            and _is_text(chunk_id)
            and _is_text(text)
            and (metadata is None or _plain_metadata(metadata))
        ):
            return Chunk(chunk_id, text, score, {} if metadata is None else metadata)
    if isinstance(obj, Chunk):
        # Re-checked: a Chunk built by user code is not type-checked at runtime.
        return _build_chunk(obj.id, obj.text, obj.score, obj.metadata, obj)
    get = _getter(obj, "chunk")
    return _build_chunk(get("id"), get("text"), get("score"), get("metadata"), obj)


def to_chunks(obj: Any) -> tuple[Chunk, ...]:
    """A list (or tuple, or other iterable) of chunks; the message names the bad item."""
    return _each(obj, to_chunk, "chunk")


def _each(obj: Any, convert: Callable[[Any], Any], noun: str) -> tuple[Any, ...]:
    """``convert`` applied to each item of a list (not a string or a mapping); an error
    names the item as ``NOUN INDEX: ...``."""
    if isinstance(obj, str | bytes | Mapping) or obj is None or not _iterable(obj):
        raise AdapterOutputError(f"expected a list of {noun}s, got {_type_name(obj)}")
    items = []
    for index, item in enumerate(obj):
        try:
            items.append(convert(item))
        except AdapterOutputError as exc:
            raise AdapterOutputError(f"{noun} {index}: {exc}") from None
    return tuple(items)


def to_step(obj: Any) -> Step:
    """One agent step (CONTRACT section 17): a ``RetrieveStep`` or ``ToolStep``, or a dict
    (or object) with ``type`` ``"retrieve"`` (``query``, ``chunks``) or ``"tool"``
    (``name``, ``arguments``, optional ``output``)."""
    if isinstance(obj, RetrieveStep):
        return RetrieveStep(_step_text(obj.query, "query"), _step_chunks(obj.chunks))
    if isinstance(obj, ToolStep):
        return _tool_step(obj.name, obj.arguments, obj.output)
    get = _getter(obj, "step")
    kind = get("type")
    if kind == "retrieve":
        return RetrieveStep(_step_text(get("query"), "query"), _step_chunks(get("chunks")))
    if kind == "tool":
        return _tool_step(get("name"), get("arguments"), get("output"))
    if kind is _MISSING:
        raise AdapterOutputError("step is missing 'type'")
    raise AdapterOutputError(f"step 'type' must be 'retrieve' or 'tool', got {kind!r}"[:120])


def to_steps(obj: Any) -> tuple[Step, ...]:
    """A list of steps, in the agent's order; the message names the bad step."""
    return _each(obj, to_step, "step")


def _step_text(value: Any, key: str) -> str:
    if value is _MISSING:
        raise AdapterOutputError(f"step is missing {key!r}")
    if not isinstance(value, str):
        raise AdapterOutputError(f"step {key!r} must be a string, got {_type_name(value)}")
    if not _is_text(value):
        raise AdapterOutputError(f"step {key!r} holds a lone surrogate, which is not valid text")
    return value


def _step_chunks(value: Any) -> tuple[Chunk, ...]:
    if value is _MISSING or value is None:
        raise AdapterOutputError("step is missing 'chunks'")
    try:
        return to_chunks(value)
    except AdapterOutputError as exc:
        raise AdapterOutputError(f"'chunks': {exc}") from None


def _tool_step(name: Any, arguments: Any, output: Any) -> ToolStep:
    name = _step_text(name, "name")
    if not name.strip():
        raise AdapterOutputError("step 'name' must not be empty")
    if arguments is _MISSING or arguments is None:
        raise AdapterOutputError(f"tool step {name!r} is missing 'arguments'")
    if not isinstance(arguments, Mapping):
        raise AdapterOutputError(
            f"tool step {name!r} 'arguments' must be an object, got {_type_name(arguments)}"
        )
    arguments = dict(arguments)
    try:
        check_value(arguments, "arguments", json_only=True)
    except JsonLimitError as exc:
        raise AdapterOutputError(f"tool step {name!r} {exc}") from None
    if output is _MISSING or output is None:
        return ToolStep(name, arguments)
    return ToolStep(name, arguments, _step_text(output, "output"))


def to_answer(obj: Any) -> Answer:
    """An ``Answer``, a dict with ``text`` (and optional ``retrieved_chunks``, ``citations``,
    ``steps``), or an object with those attributes."""
    if isinstance(obj, str):
        raise AdapterOutputError(
            "expected an Answer or a dict with 'text', got a bare string; wrap it as {'text': ...}"
        )
    if isinstance(obj, Answer):
        text, chunks, citations = obj.text, obj.retrieved_chunks, obj.citations
        steps, usage = obj.steps, obj.usage
    else:
        get = _getter(obj, "answer")
        text, chunks, citations = get("text"), get("retrieved_chunks"), get("citations")
        steps, usage = get("steps"), get("usage")
    if text is _MISSING:
        raise AdapterOutputError("answer is missing 'text'")
    if not isinstance(text, str):
        raise AdapterOutputError(f"answer 'text' must be a string, got {_type_name(text)}")
    if not _is_text(text):
        raise AdapterOutputError("answer 'text' holds a lone surrogate, which is not valid text")
    if chunks is _MISSING or chunks is None:
        chunks = None
    else:
        try:
            chunks = to_chunks(chunks)
        except AdapterOutputError as exc:
            raise AdapterOutputError(f"answer 'retrieved_chunks': {exc}") from None
    if citations is _MISSING or citations is None:
        citations = None
    else:
        if isinstance(citations, str | bytes | Mapping) or not _iterable(citations):
            raise AdapterOutputError("answer 'citations' must be a list of chunk id strings")
        citations = tuple(citations)
        if not all(isinstance(cid, str) for cid in citations):
            raise AdapterOutputError("answer 'citations' must be a list of chunk id strings")
    if steps is _MISSING or steps is None:
        steps = None
    else:
        try:
            steps = to_steps(steps)
        except AdapterOutputError as exc:
            raise AdapterOutputError(f"answer 'steps': {exc}") from None
    return Answer(
        text=text,
        retrieved_chunks=chunks,
        citations=citations,
        steps=steps,
        usage=to_usage(usage),
    )


_USAGE_COUNTS = ("input_tokens", "output_tokens")


def to_usage(obj: Any) -> Usage | None:
    """An answer's ``usage`` (CONTRACT section 18): a ``Usage``, or a dict (or object) with
    any subset of ``input_tokens``, ``output_tokens`` (non-negative ints) and ``cost_usd``
    (a non-negative number). Absent or null is None: the pipeline reported nothing."""
    if obj is _MISSING or obj is None:
        return None
    if isinstance(obj, Usage):
        values = {name: getattr(obj, name) for name in (*_USAGE_COUNTS, "cost_usd")}
    else:
        get = _getter(obj, "usage object")
        values = {name: get(name) for name in (*_USAGE_COUNTS, "cost_usd")}
        values = {name: None if value is _MISSING else value for name, value in values.items()}
    for name in _USAGE_COUNTS:
        value = values[name]
        if value is not None and (type(value) is not int or value < 0):
            raise AdapterOutputError(
                f"answer 'usage.{name}' must be a non-negative integer, got {value!r}"
            )
    cost = values["cost_usd"]
    if cost is not None:
        if isinstance(cost, bool) or not isinstance(cost, int | float) or not cost >= 0:
            raise AdapterOutputError(
                f"answer 'usage.cost_usd' must be a non-negative number, got {cost!r}"
            )
        cost = _as_float(cost, "answer 'usage.cost_usd'")
        if cost == float("inf"):
            raise AdapterOutputError("answer 'usage.cost_usd' must be finite")
    return Usage(values["input_tokens"], values["output_tokens"], cost)


def _as_float(number: int, what: str) -> float:
    """An integer as a float; one beyond float's range (JSON allows any number of
    digits) is bad input, not a crash."""
    try:
        return float(number)
    except OverflowError:
        raise AdapterOutputError(f"{what} is beyond a float's range (1.8e308)") from None


def _build_chunk(chunk_id: Any, text: Any, score: Any, metadata: Any, obj: Any) -> Chunk:
    if chunk_id is _MISSING:
        raise AdapterOutputError("chunk is missing 'id'")
    if not isinstance(chunk_id, str):
        raise AdapterOutputError(f"chunk 'id' must be a string, got {_type_name(chunk_id)}")
    if text is _MISSING:
        raise AdapterOutputError(f"chunk {chunk_id!r} is missing 'text'")
    if not isinstance(text, str):
        raise AdapterOutputError(
            f"chunk {chunk_id!r} 'text' must be a string, got {_type_name(text)}"
        )
    if score is _MISSING or score is None:
        score = None
    elif isinstance(score, bool) or not isinstance(score, int | float):
        raise AdapterOutputError(
            f"chunk {chunk_id!r} 'score' must be a number, got {_type_name(score)}"
        )
    elif not isinstance(score, float):
        score = _as_float(score, f"chunk {chunk_id!r} 'score'")
    if metadata is _MISSING or metadata is None:
        metadata = {}
    elif not isinstance(metadata, Mapping):
        raise AdapterOutputError(
            f"chunk {chunk_id!r} 'metadata' must be a dict, got {_type_name(metadata)}"
        )
    elif not isinstance(metadata, dict):
        metadata = dict(metadata)
    _check_storable(chunk_id, text, metadata)
    if isinstance(obj, Chunk) and score is obj.score and metadata is obj.metadata:
        return obj  # already valid: no copy (recorded replays build many of these)
    return Chunk(id=chunk_id, text=text, score=score, metadata=metadata)


def _is_text(value: str) -> bool:
    return value.isascii() or not has_surrogate(value)


def _plain_metadata(metadata: dict) -> bool:
    return all(
        type(key) is str and (type(value) in _PLAIN or (type(value) is int and value in _INT64))
        for key, value in metadata.items()
    )


def _check_storable(chunk_id: str, text: str, metadata: dict) -> None:
    """The chunk can be written as JSON and UTF-8 (CONTRACT: an adapter output that
    cannot is that case's failure, not the run's). Names a type, never calls ``str()``
    on what the adapter returned."""
    if not _is_text(chunk_id):
        raise AdapterOutputError(
            f"chunk {chunk_id!r} 'id' holds a lone surrogate, which is not valid text"
        )
    if not _is_text(text):
        raise AdapterOutputError(
            f"chunk {chunk_id!r} 'text' holds a lone surrogate, which is not valid text"
        )
    try:
        check_value(metadata, "metadata", json_only=True)
    except JsonLimitError as exc:
        raise AdapterOutputError(f"chunk {chunk_id!r} {exc}") from None


def _getter(obj: Any, what: str):
    """A field reader for dicts and attribute-bearing objects alike."""
    if obj is None:
        raise AdapterOutputError(f"expected {_article(what)}, got None")
    if isinstance(obj, Mapping):
        return lambda name: obj.get(name, _MISSING)
    if isinstance(obj, str | int | float | bool | list | tuple | bytes):
        raise AdapterOutputError(f"expected {_article(what)}, got {_type_name(obj)}")
    return lambda name: getattr(obj, name, _MISSING)


def _article(what: str) -> str:
    return f"an {what}" if what[0] in "aeiou" else f"a {what}"


def _iterable(obj: Any) -> bool:
    try:
        iter(obj)
    except TypeError:
        return False
    return True


def _type_name(value: Any) -> str:
    return "None" if value is None else type(value).__name__
