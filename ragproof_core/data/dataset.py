"""Dataset files: JSON Lines or Parquet, one evaluation case per line (CONTRACT section 1).

A dataset is validated as a whole before anything runs: the first bad line
raises ``DatasetError`` naming ``PATH:LINE: reason`` and no case is returned,
so a run never starts on half a dataset.

Rules worth knowing:

- Line numbers are physical lines (1-based); blank lines are skipped but
  still counted, so the number matches what an editor shows. For Parquet the
  "line" is the 1-based row number.
- A JSON ``null`` (or a Parquet null) in a field means the field is absent.
- Fields not in the contract are rejected, naming the closest known field
  (``metadata`` is the place for free-form data, kept verbatim).
- Rows are validated by the declared schema ``CaseRow`` (strict types), so a
  reason reads ``FIELD: expected ..., got VALUE``.
- ``expected_source_ids`` is a list of ids or an object of integer grades
  (CONTRACT section 19); an object is checked here, id by id
  (``expected_source_ids.d1: must be at least 0, got -1``), and ``CaseRow``
  sees its relevant ids.
- Problems with the file itself (missing, unreadable, empty) use line 0 or 1:
  ``PATH:0: no such file``, ``PATH:1: dataset has no cases``.
- A line of kind ``conversation`` (CONTRACT section 16) becomes one case per
  turn, ``c1#1``, ``c1#2``, ... in order (``model.TurnOf``). Each turn is
  validated as a section-1 case without ``id`` and ``metadata``, and a bad
  turn names itself: ``PATH:LINE: turn 2: question: must not be empty``. The
  conversation's id and its turn ids are unique in the file like any id.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from ragproof_core.errors import UserError, describe, dotted, show_value
from ragproof_core.gc_pause import collector_paused
from ragproof_core.json_limits import JsonLimitError, check_value, loads_bounded, loads_plain
from ragproof_core.model import (
    CONVERSATION_KIND,
    Case,
    CaseKind,
    ExpectedTool,
    Nugget,
    ToolMatch,
    TurnOf,
    turn_id,
)


class DatasetError(UserError, ValueError):
    """A dataset file was rejected; ``str()`` is ``PATH:LINE: reason``."""

    def __init__(self, path: str | Path, line: int, reason: str) -> None:
        self.path = str(path)
        self.line = line
        self.reason = reason
        super().__init__(f"{self.path}:{line}: {reason}")


def load_dataset(path: str | Path) -> list[Case]:
    """Read and validate a whole dataset file (``.parquet`` or JSON Lines)."""
    path_text = str(path)
    path = Path(path)
    if path.suffix.lower() == ".parquet":
        rows = _parquet_rows(path, path_text)
    else:
        rows = iter_json_lines(path_text)

    cases: list[Case] = []
    first_line_of: dict[str, int] = {}
    with collector_paused():
        for line, row in rows:
            try:
                if type(row) is dict and row.get("kind") == CONVERSATION_KIND:
                    found = to_turns(row)
                    ids = [found[0].turn.conversation_id, *(case.id for case in found)]
                else:
                    found = [_to_case(row)]
                    ids = [found[0].id]
            except _Invalid as exc:
                raise DatasetError(path_text, line, str(exc)) from None
            for case_id in ids:
                earlier = first_line_of.setdefault(case_id, line)
                if earlier != line:
                    raise DatasetError(
                        path_text, line, f"duplicate id {case_id!r} (first used on line {earlier})"
                    )
            cases.extend(found)
    if not cases:
        raise DatasetError(path_text, 1, "dataset has no cases")
    return cases


def fewer_units_than(path: str | Path, count: int) -> bool:
    """Whether the dataset holds fewer than ``count`` units (a case, or a conversation
    with its turns: one line or row each), found without parsing it: non-blank lines are
    counted up to ``count``, a Parquet file's rows read from its footer. False when the
    file cannot be read (``load_dataset`` words that)."""
    path = Path(path)
    try:
        if path.suffix.lower() == ".parquet":
            import pyarrow.parquet as pq  # as in _parquet_rows: JSONL users never pay for it

            return pq.read_metadata(path).num_rows < count
        units = 0
        with open(path, "rb") as handle:
            for raw in handle:
                units += bool(raw.strip())
                if units >= count:
                    return False
        return True
    except Exception:  # noqa: BLE001 - unreadable or not Parquet: load_dataset says why
        return False


def dataset_sha256(path: str | Path) -> str:
    """sha256 of the file's bytes, recorded with each run to pin the exact dataset."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class _Invalid(Exception):
    """One row's problem; ``load_dataset`` adds the path and line."""


def open_input(path: str | Path, mode: str = "r", **options: Any) -> IO[Any]:
    """``open(path, mode, **options)``, its failures as ``DatasetError`` at line 0 (the
    file itself). Only open() is mapped: errors while reading keep their own line."""
    path_text = str(path)
    try:
        return open(path, mode, **options)  # noqa: SIM115 - the caller closes it
    except FileNotFoundError:
        raise DatasetError(path_text, 0, "no such file") from None
    except IsADirectoryError:
        raise DatasetError(path_text, 0, "not a file") from None
    except OSError as exc:
        raise DatasetError(path_text, 0, f"cannot read file ({exc.strerror or exc})") from None


def iter_json_lines(path: str | Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(line number, parsed value)`` for each non-blank line of a JSON Lines file.

    Shared with the recorded-outputs adapter. Problems raise ``DatasetError``
    (``PATH:LINE: reason``; line 0 for the file itself).
    """
    for number, _offset, _size, value in iter_json_line_spans(path):
        yield number, value


def iter_json_line_spans(path: str | Path) -> Iterator[tuple[int, int, int, Any]]:
    """Like ``iter_json_lines``, with each line's byte offset and size in the file
    (the recorded-outputs adapter re-reads a line by its span instead of keeping it)."""
    path_text = str(path)
    offset = 0
    with open_input(path, "rb") as handle:
        # Binary files split lines on b"\n" only; str.splitlines() would also
        # split on U+2028 and friends, which JSON allows raw inside strings.
        for number, raw in enumerate(handle, start=1):
            start, offset = offset, offset + len(raw)
            if not raw.strip():
                continue
            yield number, start, len(raw), parse_json_line(path_text, number, raw)


def parse_json_line(path_text: str, number: int, raw: bytes) -> Any:
    """One JSON Lines line's value; ``DatasetError`` naming ``PATH:LINE`` if it is not JSON.

    A line plainly within the limits is read by ``loads_plain`` (a million-line
    recording in about half the time); any other line takes the exact path
    below, which also words the error.
    """
    plain, value = loads_plain(raw)
    if plain:
        return value
    try:
        # Without the line ending, JSON error columns point into this line.
        text = raw.rstrip(b"\r\n").decode("utf-8-sig" if number == 1 else "utf-8")
    except UnicodeDecodeError:
        raise DatasetError(path_text, number, "not valid UTF-8") from None
    try:
        # The decoder recurses: a line nested thousands deep must fail here, not
        # as a RecursionError wherever its value is next encoded.
        value = loads_bounded(text)
    except JsonLimitError as exc:
        raise DatasetError(path_text, number, str(exc)) from None
    except json.JSONDecodeError as exc:
        raise DatasetError(
            path_text, number, f"not valid JSON ({exc.msg} at column {exc.colno})"
        ) from None
    surrogate = _SURROGATE_ESCAPE.search(raw)
    if surrogate is not None and not _is_text(value):
        # JSON may escape half of a UTF-16 pair alone; no UTF-8 file or store can hold it.
        escape = surrogate.group().decode()
        raise DatasetError(path_text, number, f"{escape}: a lone surrogate is not valid text")
    return value


# A \uD800-\uDFFF escape: half of a UTF-16 surrogate pair (the decoder joins whole pairs).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _is_text(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _parquet_rows(path: Path, path_text: str) -> Iterator[tuple[int, Any]]:
    import pyarrow.parquet as pq  # imported here: JSONL-only users never pay for pyarrow

    if not path.exists():
        raise DatasetError(path_text, 0, "no such file")
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several unrelated types for bad files
        raise DatasetError(path_text, 0, f"not a readable Parquet file ({exc})") from None
    return _json_rows(path_text, enumerate(table.to_pylist(), start=1))


def _json_rows(path_text: str, rows: Iterator[tuple[int, Any]]) -> Iterator[tuple[int, Any]]:
    """Parquet rows whose metadata JSON can hold: a timestamp, bytes or a Decimal there
    would fail only when the run stores it."""
    for line, row in rows:
        try:
            check_value(row.get("metadata"), "metadata", json_only=True)
        except JsonLimitError as exc:
            raise DatasetError(path_text, line, str(exc)) from None
        yield line, row


def _non_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


_Text = Annotated[str, AfterValidator(_non_blank)]


def _non_empty(value: list) -> list:
    if not value:
        raise ValueError("must not be empty")
    return value


class ExpectedToolRow(BaseModel):
    """One expected tool call (CONTRACT section 17): the tool's name and, optionally,
    the arguments the made call must carry (a subset of its arguments)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    name: _Text
    arguments: dict[str, Any] | None = None


class NuggetRow(BaseModel):
    """One nugget (CONTRACT section 20): a fact the answer should state, and whether it
    is vital."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    text: _Text
    vital: bool


class CaseRow(BaseModel):
    """One dataset line as declared in CONTRACT section 1: strict types, no unknown fields
    (free-form data belongs under ``metadata``), ``null`` meaning absent."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    id: _Text
    question: _Text
    kind: Literal["qa", "unanswerable", "injection", "poisoning"] | None = None
    # A graded object is checked by source_grades() before this model sees the row.
    expected_source_ids: list[str] | None = None
    expected_answer: str | None = None
    adversarial_payload: str | None = None
    metadata: dict[str, Any] | None = None
    # CONTRACT section 17: what an agent should call, and find at each retrieval step.
    expected_tools: list[ExpectedToolRow] | None = None
    tool_match: Literal["exact", "in_order", "any_order"] | None = None
    expected_hops: list[Annotated[list[_Text], AfterValidator(_non_empty)]] | None = None
    # CONTRACT section 23: a poisoning case's marker; the restricted ids its user may see.
    poison_marker: str | None = None
    allowed_restricted_ids: list[str] | None = None
    # CONTRACT section 20: the facts the answer should state.
    nuggets: list[NuggetRow] | None = None


CASE_FIELDS = tuple(CaseRow.model_fields)
TOOL_FIELDS = tuple(ExpectedToolRow.model_fields)
NUGGET_FIELDS = tuple(NuggetRow.model_fields)
# The fields the fast path of _plain_case checks itself; a row with any other
# field (the agent fields included) goes through CaseRow.
_FIELD_SET = frozenset(
    ("id", "question", "kind", "expected_source_ids", "expected_answer")
    + ("adversarial_payload", "metadata")
)


_KINDS = {kind.value: kind for kind in CaseKind}


def _plain_case(row: dict) -> Case | None:
    """The case of a row that ``CaseRow`` would accept unchanged, checked directly (a
    dataset may hold a million rows); None sends anything else through ``CaseRow``."""
    if not _FIELD_SET.issuperset(row):
        return None
    case_id, question = row.get("id"), row.get("question")
    kind, sources = row.get("kind"), row.get("expected_source_ids")
    answer, payload = row.get("expected_answer"), row.get("adversarial_payload")
    metadata = row.get("metadata")
    if not (
        type(case_id) is str
        and type(question) is str
        and case_id.strip()
        and question.strip()
        and (kind is None or (type(kind) is str and kind in _KINDS))
        and (sources is None or (type(sources) is list and all(type(s) is str for s in sources)))
        and (answer is None or type(answer) is str)
        and (payload is None or type(payload) is str)
        and (metadata is None or type(metadata) is dict)
    ):
        return None
    return Case(
        id=case_id,
        question=question,
        kind=CaseKind.QA if kind is None else _KINDS[kind],
        expected_source_ids=None if sources is None else tuple(sources),
        expected_answer=answer,
        adversarial_payload=payload,
        metadata={} if metadata is None else metadata,
    )


def source_grades(grades: dict[Any, Any]) -> dict[str, int]:
    """A graded ``expected_source_ids`` object, checked: ids are strings, grades
    integers >= 0 (a boolean is not a grade). Raises ``_Invalid`` naming the id."""
    for source_id, grade in grades.items():
        where = dotted(("expected_source_ids", str(source_id)))
        if type(source_id) is not str or not source_id.strip():
            raise _Invalid(f"{where}: expected a non-empty string id")
        if type(grade) is not int:
            raise _Invalid(f"{where}: expected an integer grade, got {show_value(grade)}")
        if grade < 0:
            raise _Invalid(f"{where}: must be at least 0, got {show_value(grade)}")
    return grades


def _known_fields(exc: ValidationError) -> tuple[str, ...]:
    """The field names beside the first error's key: an expected tool's inside one."""
    loc = exc.errors(include_url=False)[0]["loc"]
    if len(loc) == 3 and loc[0] == "expected_tools":
        return TOOL_FIELDS
    if len(loc) == 3 and loc[0] == "nuggets":
        return NUGGET_FIELDS
    return CASE_FIELDS


def expected_tools(rows: list[ExpectedToolRow] | None) -> tuple[ExpectedTool, ...] | None:
    if rows is None:
        return None
    return tuple(ExpectedTool(row.name, row.arguments) for row in rows)


def _to_case(row: Any) -> Case:
    if type(row) is dict:
        case = _plain_case(row)
        if case is not None:
            return case
    if not isinstance(row, dict):
        raise _Invalid(f"expected a JSON object, got {json_type(row)}")
    grades = row.get("expected_source_ids")
    if isinstance(grades, dict):
        grades = source_grades(grades)
        # CaseRow checks the rest of the row against the relevant ids.
        row = {**row, "expected_source_ids": [s for s, grade in grades.items() if grade >= 1]}
    else:
        grades = None
    # null means absent (CONTRACT section 1), so a null id is a missing id.
    present = {key: value for key, value in row.items() if value is not None}
    try:
        valid = CaseRow.model_validate(present)
    except ValidationError as exc:
        raise _Invalid(
            describe(exc, known=_known_fields(exc), mapping="a JSON object", noun="field")
        ) from None
    for index, tool in enumerate(valid.expected_tools or ()):
        try:
            # Parquet may hold what JSON cannot (a timestamp, bytes) in the arguments.
            check_value(tool.arguments, f"expected_tools[{index}].arguments", json_only=True)
        except JsonLimitError as exc:
            raise _Invalid(str(exc)) from None
    return Case(
        id=valid.id,
        question=valid.question,
        kind=CaseKind.QA if valid.kind is None else CaseKind(valid.kind),
        expected_source_ids=None
        if valid.expected_source_ids is None
        else tuple(valid.expected_source_ids),
        expected_answer=valid.expected_answer,
        adversarial_payload=valid.adversarial_payload,
        # Kept verbatim: the row's own dict, not a validated copy.
        metadata=row["metadata"] if valid.metadata is not None else {},
        source_grades=grades,
        expected_tools=expected_tools(valid.expected_tools),
        tool_match=ToolMatch.IN_ORDER if valid.tool_match is None else ToolMatch(valid.tool_match),
        expected_hops=None
        if valid.expected_hops is None
        else tuple(tuple(hop) for hop in valid.expected_hops),
        poison_marker=valid.poison_marker,
        allowed_restricted_ids=None
        if valid.allowed_restricted_ids is None
        else tuple(valid.allowed_restricted_ids),
        nuggets=None
        if valid.nuggets is None
        else tuple(Nugget(row.text, row.vital) for row in valid.nuggets),
    )


class ConversationRow(BaseModel):
    """A conversation line (CONTRACT section 16): its id, its turns and metadata; the
    turns are checked one by one as cases (``to_turns``)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    id: _Text
    kind: Literal["conversation"]
    turns: list[Any]
    metadata: dict[str, Any] | None = None


CONVERSATION_FIELDS = tuple(ConversationRow.model_fields)
# What a turn may not carry of a section-1 case, and why.
_NOT_IN_TURN = {
    "id": "a turn has no id of its own (it is the conversation's id, '#' and its number)",
    "metadata": "a turn has no metadata of its own (put it on the conversation)",
}


def to_turns(row: dict[str, Any]) -> list[Case]:
    """A conversation line's turns as cases ``ID#1``, ``ID#2``, ... in order, each with
    ``turn`` set and the conversation's metadata. Raises ``_Invalid`` naming the turn."""
    present = {key: value for key, value in row.items() if value is not None}
    if "question" in present:
        raise _Invalid("question: a conversation has no top-level question (its turns hold them)")
    try:
        valid = ConversationRow.model_validate(present)
    except ValidationError as exc:
        raise _Invalid(
            describe(exc, known=CONVERSATION_FIELDS, mapping="a JSON object", noun="field")
        ) from None
    if not valid.turns:
        raise _Invalid("turns: a conversation needs at least one turn")
    metadata = present["metadata"] if valid.metadata is not None else {}
    total = len(valid.turns)
    cases: list[Case] = []
    for number, turn in enumerate(valid.turns, start=1):
        try:
            case = _turn_case(turn, turn_id(valid.id, number))
        except _Invalid as exc:
            raise _Invalid(f"turn {number}: {exc}") from None
        case.metadata = metadata
        case.turn = TurnOf(valid.id, number, total)
        cases.append(case)
    return cases


def _turn_case(turn: Any, case_id: str) -> Case:
    if not isinstance(turn, dict):
        raise _Invalid(f"expected a JSON object, got {json_type(turn)}")
    for key, reason in _NOT_IN_TURN.items():
        if turn.get(key) is not None:
            raise _Invalid(f"{key}: {reason}")
    if turn.get("kind") == CONVERSATION_KIND:
        raise _Invalid(
            "kind: a turn is a qa, unanswerable, injection or poisoning case, not a conversation"
        )
    return _to_case({**turn, "id": case_id})


def json_type(value: Any) -> str:
    """The JSON name of a value's type, for messages a dataset author understands."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    if value is None:
        return "null"
    return type(value).__name__
