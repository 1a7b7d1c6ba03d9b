"""Validation of judge replies against the shapes of CONTRACT section 4.

A reply is JSON only. The one tolerance is a Markdown code fence (```json ...```)
around the object, which many chat models add despite being told not to;
anything else around the JSON is a failure. Keys beyond the shape are ignored
(and kept, so the stored reply is verbatim); a missing or mistyped key fails.
Error messages name the JSON path and what was expected, because they are sent
back to the judge in the single repair retry.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ragproof_core.json_limits import JsonLimitError, scan_depth

REPLY_SHAPES: dict[str, str] = {
    "groundedness": '{"claims": [{"claim": str, "supported": bool}]}',
    "citation_support": '{"verdicts": [{"chunk_id": str, "supported": bool}]}',
    "answer_relevance": '{"verdict": "relevant" | "partial" | "irrelevant"}',
    "completeness": '{"verdict": "complete" | "partial" | "missing"}',
    "refusal": '{"refused": bool}',
    # Test-set generation (CONTRACT section 13).
    "generate_qa": '{"question": str, "answer": str}',
    "critique_qa": '{"standalone": bool, "answerable": bool, "specific": bool}',
    "generate_unanswerable": '{"question": str}',
    "context_relevance": (
        '{"verdicts": [{"chunk_id": str, "relevance": "relevant" | "partial" | "irrelevant"}]}'
    ),
    # Conversations (CONTRACT section 16).
    "knowledge_retention": '{"turns": [{"turn": int, "retained": bool}]}',
    # Agent steps (CONTRACT section 17).
    "task_completion": '{"verdict": "complete" | "partial" | "failed"}',
    # Claim-level diagnostics and nuggets (CONTRACT section 20).
    "claim_check": (
        '{"response_claims": [{"claim": str, "in_reference": bool, "chunk_ids": [str]}], '
        '"reference_claims": [{"claim": str, "in_response": bool, "chunk_ids": [str]}]}'
    ),
    "nugget_support": '{"nuggets": [{"index": int, "support": "full" | "partial" | "none"}]}',
    "generate_nuggets": '{"nuggets": [{"text": str, "vital": bool}]}',
}
VERDICT_ENUMS: dict[str, tuple[str, ...]] = {
    "answer_relevance": ("relevant", "partial", "irrelevant"),
    "completeness": ("complete", "partial", "missing"),
    "context_relevance": ("relevant", "partial", "irrelevant"),
    "task_completion": ("complete", "partial", "failed"),
    "nugget_support": ("full", "partial", "none"),
}
# ``generate nuggets`` writes at most this many nuggets a case (CONTRACT section 20).
MAX_NUGGETS = 10

# Far more than any real verdict needs; a longer reply is refused before decoding.
MAX_REPLY_CHARS = 256 * 1024

_CODE_FENCE = re.compile(r"\A```(?:json)?[ \t]*\n(.*)\n```\Z", re.DOTALL | re.IGNORECASE)


class ReplyValidationError(ValueError):
    """The judge's reply is not valid JSON of the required shape; the message says exactly why."""


def parse_reply(
    prompt_name: str, text: str, verdicts: Sequence[str] | None = None
) -> dict[str, Any]:
    """Parse and validate one reply; returns the JSON object verbatim. ``verdicts``: a
    filled-in prompt's (a rubric metric's) bands, its reply ``{"verdict": BAND}``."""
    if verdicts is None and prompt_name not in REPLY_SHAPES:
        raise ValueError(f"unknown prompt {prompt_name!r}")
    return validate_reply(prompt_name, parse_object(text), verdicts)


def parse_object(text: str) -> dict[str, Any]:
    """The reply's JSON object (a Markdown code fence around it tolerated), else an error."""
    body = text.strip()
    fenced = _CODE_FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body:
        raise ReplyValidationError("the reply is empty; expected a JSON object")
    if len(body) > MAX_REPLY_CHARS:
        raise ReplyValidationError(
            f"the reply is {len(body)} characters long, over the limit of {MAX_REPLY_CHARS}; "
            "reply with the JSON object only"
        )
    try:
        # Before decoding: the decoder recurses, and a hostile depth would raise
        # RecursionError far from here instead of failing this one reply.
        scan_depth(body)
    except JsonLimitError as exc:
        raise ReplyValidationError(f"the reply is {exc}; reply with the JSON object only") from None
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ReplyValidationError(
            f"the reply is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            "reply with the JSON object only, no other text"
        ) from None
    if not isinstance(data, dict):
        raise ReplyValidationError(f"the reply must be a JSON object, got {_kind(data)}")
    return data


def validate_reply(
    prompt_name: str, data: Any, verdicts: Sequence[str] | None = None
) -> dict[str, Any]:
    """Check a decoded reply (or a combined reply's sub-reply) against its prompt's shape."""
    if verdicts is not None:
        shape = '{"verdict": ' + " | ".join(json.dumps(v, ensure_ascii=False) for v in verdicts)
        shape += "}"
        check = lambda d: _enum(d, "verdict", tuple(verdicts))  # noqa: E731
    else:
        shape, check = REPLY_SHAPES[prompt_name], _VALIDATORS[prompt_name]
    if not isinstance(data, dict):
        raise ReplyValidationError(
            f"the reply must be a JSON object, got {_kind(data)}; required shape: {shape}"
        )
    try:
        check(data)
    except ReplyValidationError as exc:
        raise ReplyValidationError(f"{exc}; required shape: {shape}") from None
    return data


def _kind(value: Any) -> str:
    """The JSON type name of a value, with a short preview, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {json.dumps(value)}"
    if isinstance(value, int | float):
        return f"number {json.dumps(value)}"
    if isinstance(value, str):
        preview = value if len(value) <= 40 else value[:37] + "..."
        return f"string {json.dumps(preview, ensure_ascii=False)}"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _require(obj: dict[str, Any], key: str, path: str) -> Any:
    if key not in obj:
        raise ReplyValidationError(f'missing key "{key}" in {path}')
    return obj[key]


def _string(value: Any, path: str) -> None:
    if not isinstance(value, str):
        raise ReplyValidationError(f"{path} must be a JSON string, got {_kind(value)}")


def _boolean(value: Any, path: str) -> None:
    # bool is checked by type: 1, "true" and "yes" are not booleans.
    if not isinstance(value, bool):
        raise ReplyValidationError(
            f"{path} must be a JSON boolean (true or false), got {_kind(value)}"
        )


def _list_of_objects(data: dict[str, Any], key: str, fields: dict[str, Any]) -> None:
    items = _require(data, key, "the reply object")
    if not isinstance(items, list):
        raise ReplyValidationError(f"{key} must be a JSON array, got {_kind(items)}")
    for i, item in enumerate(items):
        path = f"{key}[{i}]"
        if not isinstance(item, dict):
            raise ReplyValidationError(f"{path} must be a JSON object, got {_kind(item)}")
        for field, check in fields.items():
            check(_require(item, field, path), f"{path}.{field}")


def _enum(data: dict[str, Any], key: str, allowed: tuple[str, ...]) -> None:
    value = _require(data, key, "the reply object")
    if not isinstance(value, str) or value not in allowed:
        choices = ", ".join(json.dumps(a) for a in allowed)
        raise ReplyValidationError(f"{key} must be one of {choices}, got {_kind(value)}")


def _groundedness(data: dict[str, Any]) -> None:
    _list_of_objects(data, "claims", {"claim": _string, "supported": _boolean})


def _citation_support(data: dict[str, Any]) -> None:
    _list_of_objects(data, "verdicts", {"chunk_id": _string, "supported": _boolean})


def _refusal(data: dict[str, Any]) -> None:
    _boolean(_require(data, "refused", "the reply object"), "refused")


def _non_empty_string(data: dict[str, Any], key: str) -> None:
    _non_empty_text(_require(data, key, "the reply object"), key)


def _non_empty_text(value: Any, path: str) -> None:
    _string(value, path)
    if not value.strip():
        raise ReplyValidationError(f"{path} must not be empty")


def _generate_qa(data: dict[str, Any]) -> None:
    _non_empty_string(data, "question")
    _non_empty_string(data, "answer")


def _critique_qa(data: dict[str, Any]) -> None:
    for key in ("standalone", "answerable", "specific"):
        _boolean(_require(data, key, "the reply object"), key)


def _verdict_of(prompt: str) -> Callable[[Any, str], None]:
    """A field check: the value is one of ``prompt``'s verdicts (``VERDICT_ENUMS``)."""
    allowed = VERDICT_ENUMS[prompt]

    def check(value: Any, path: str) -> None:
        if not isinstance(value, str) or value not in allowed:
            choices = ", ".join(json.dumps(a) for a in allowed)
            raise ReplyValidationError(f"{path} must be one of {choices}, got {_kind(value)}")

    return check


def _context_relevance(data: dict[str, Any]) -> None:
    _list_of_objects(
        data, "verdicts", {"chunk_id": _string, "relevance": _verdict_of("context_relevance")}
    )


def _integer(value: Any, path: str) -> None:
    # bool is an int in Python, not in JSON; 2.0 is not a turn number either.
    if type(value) is not int:
        raise ReplyValidationError(f"{path} must be a JSON integer, got {_kind(value)}")


def _knowledge_retention(data: dict[str, Any]) -> None:
    _list_of_objects(data, "turns", {"turn": _integer, "retained": _boolean})


def _string_list(value: Any, path: str) -> None:
    if not isinstance(value, list):
        raise ReplyValidationError(f"{path} must be a JSON array of strings, got {_kind(value)}")
    for i, item in enumerate(value):
        _string(item, f"{path}[{i}]")


def _claim_check(data: dict[str, Any]) -> None:
    _list_of_objects(
        data,
        "response_claims",
        {"claim": _string, "in_reference": _boolean, "chunk_ids": _string_list},
    )
    _list_of_objects(
        data,
        "reference_claims",
        {"claim": _string, "in_response": _boolean, "chunk_ids": _string_list},
    )


def _nugget_support(data: dict[str, Any]) -> None:
    _list_of_objects(data, "nuggets", {"index": _integer, "support": _verdict_of("nugget_support")})


def _generate_nuggets(data: dict[str, Any]) -> None:
    _list_of_objects(data, "nuggets", {"text": _non_empty_text, "vital": _boolean})
    count = len(data["nuggets"])
    if not 1 <= count <= MAX_NUGGETS:
        raise ReplyValidationError(
            f"nuggets has {count} items; give at least 1 and at most {MAX_NUGGETS}"
        )


_VALIDATORS = {
    "groundedness": _groundedness,
    "citation_support": _citation_support,
    "answer_relevance": lambda d: _enum(d, "verdict", VERDICT_ENUMS["answer_relevance"]),
    "completeness": lambda d: _enum(d, "verdict", VERDICT_ENUMS["completeness"]),
    "refusal": _refusal,
    "generate_qa": _generate_qa,
    "critique_qa": _critique_qa,
    "generate_unanswerable": lambda d: _non_empty_string(d, "question"),
    "context_relevance": _context_relevance,
    "knowledge_retention": _knowledge_retention,
    "task_completion": lambda d: _enum(d, "verdict", VERDICT_ENUMS["task_completion"]),
    "claim_check": _claim_check,
    "nugget_support": _nugget_support,
    "generate_nuggets": _generate_nuggets,
}


# --- the shapes as JSON schemas, for providers that enforce one (CONTRACT section 24) --------


def _object(**properties: dict[str, Any]) -> dict[str, Any]:
    """A strict JSON schema object: every property required, no other key."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _array_of(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": item}


def _one_of(values: Sequence[str]) -> dict[str, Any]:
    return {"type": "string", "enum": list(values)}


_STRING: dict[str, Any] = {"type": "string"}
_BOOLEAN: dict[str, Any] = {"type": "boolean"}
_INTEGER: dict[str, Any] = {"type": "integer"}

# Each shape of ``REPLY_SHAPES`` as the JSON schema a provider's strict mode enforces.
REPLY_SCHEMAS: dict[str, dict[str, Any]] = {
    "groundedness": _object(claims=_array_of(_object(claim=_STRING, supported=_BOOLEAN))),
    "citation_support": _object(verdicts=_array_of(_object(chunk_id=_STRING, supported=_BOOLEAN))),
    "answer_relevance": _object(verdict=_one_of(VERDICT_ENUMS["answer_relevance"])),
    "completeness": _object(verdict=_one_of(VERDICT_ENUMS["completeness"])),
    "refusal": _object(refused=_BOOLEAN),
    "generate_qa": _object(question=_STRING, answer=_STRING),
    "critique_qa": _object(standalone=_BOOLEAN, answerable=_BOOLEAN, specific=_BOOLEAN),
    "generate_unanswerable": _object(question=_STRING),
    "context_relevance": _object(
        verdicts=_array_of(
            _object(chunk_id=_STRING, relevance=_one_of(VERDICT_ENUMS["context_relevance"]))
        )
    ),
    "knowledge_retention": _object(turns=_array_of(_object(turn=_INTEGER, retained=_BOOLEAN))),
    "task_completion": _object(verdict=_one_of(VERDICT_ENUMS["task_completion"])),
    "claim_check": _object(
        response_claims=_array_of(
            _object(claim=_STRING, in_reference=_BOOLEAN, chunk_ids=_array_of(_STRING))
        ),
        reference_claims=_array_of(
            _object(claim=_STRING, in_response=_BOOLEAN, chunk_ids=_array_of(_STRING))
        ),
    ),
    "nugget_support": _object(
        nuggets=_array_of(_object(index=_INTEGER, support=_one_of(VERDICT_ENUMS["nugget_support"])))
    ),
    "generate_nuggets": _object(nuggets=_array_of(_object(text=_STRING, vital=_BOOLEAN))),
}


def reply_schema(prompt_name: str, verdicts: Sequence[str] | None = None) -> dict[str, Any]:
    """The JSON schema of a prompt's reply; ``verdicts``: a filled-in prompt's (a rubric
    metric's) bands, its reply ``{"verdict": BAND}``."""
    if verdicts is not None:
        return _object(verdict=_one_of(verdicts))
    return REPLY_SCHEMAS[prompt_name]


def combined_schema(parts: Mapping[str, Sequence[str] | None]) -> dict[str, Any]:
    """A combined reply's schema: one key per part (name -> its bands, None for a shipped
    prompt), each with that part's own schema."""
    return _object(**{name: reply_schema(name, bands) for name, bands in parts.items()})


def response_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The ``response_format`` of a strict JSON-schema reply (OpenAI's shape; LiteLLM
    translates it for the other providers that take one)."""
    # Providers take a schema's name in [A-Za-z0-9_-] only: a rubric's is its metric's.
    label = re.sub(r"[^A-Za-z0-9_-]", "_", name)
    return {
        "type": "json_schema",
        "json_schema": {"name": label, "schema": schema, "strict": True},
    }
