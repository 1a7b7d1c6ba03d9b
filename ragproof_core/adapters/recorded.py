"""Replay pipeline outputs recorded elsewhere (CONTRACT section 2).

The file is JSON Lines, one line per case::

    {"case_id": "c1", "retrieve": [{"id": "d1#0", "text": "..."}],
     "answer": {"text": "...", "retrieved_chunks": [...], "citations": ["d1#0"]}}
    {"case_id": "c2", "error": "upstream timed out"}

- ``retrieve`` absent (or null): retrieval is not exposed for that case, so
  retrieval metrics skip it.
- ``retrieve`` without ``answer``: a retrieval-only case (an imported TREC
  run, CONTRACT section 11); metrics that need an answer skip it.
- ``error`` present: the case is a case failure carrying that message.
- ``latency_s`` (a non-negative number, optional): the seconds the pipeline took
  for the case when it was recorded, which ``system.latency_s`` reports
  (CONTRACT section 18); the replay's own time means nothing and is not used.
- a case of the dataset with no line: a case failure
  ``no recorded output for case <id>``.
- a line with none of ``retrieve``, ``answer`` and ``error`` is malformed.
- other keys are ignored: recordings may carry data ragproof does not use.
- a conversation (CONTRACT section 16) is one line
  ``{"case_id": "c1", "turns": [LINE, ...]}``, each LINE shaped like the lines
  above without ``case_id``; the i-th LINE is turn ``c1#i``. A turn with no
  LINE is a case failure like a case with no line. A line for one turn
  (``{"case_id": "c1#2", ...}``) is accepted too and wins over the
  conversation's line. A conversation's line is parsed once, at its first
  turn, and kept until its last turn is replayed.

The whole file is parsed and validated when the adapter is built, so a bad
recording is reported as ``PATH:LINE: reason`` before any case runs. Outputs
are keyed by case id, not question, which is why this adapter implements the
runner's case-aware ``run_case`` hook.

Memory does not grow with the recording: the adapter keeps, per case id, only
where its line is in the file, and ``run_case`` re-reads and parses that one
line. ``RecordedAdapter.prechecked(path)`` builds the same adapter without
validating again: it only finds each line's case id (a byte scan, not a JSON
parse). In a run, the dataset step validates the file once and stores it as
the run's ``recorded_outputs`` table (``store/recording.py``, through
``iter_recording`` here); a shard's ``RecordedAdapter.stored(path)`` reads
nothing from the file and replays the stored outputs ``replay`` hands it.
"""

from __future__ import annotations

import json
import os
import re
from array import array
from collections.abc import Iterable, Iterator
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from ragproof_core.adapters.coerce import AdapterOutputError, to_answer, to_chunks
from ragproof_core.adapters.loading import AdapterLoadError
from ragproof_core.data.dataset import (
    DatasetError,
    iter_json_line_spans,
    iter_json_lines,
    parse_json_line,
)
from ragproof_core.errors import describe
from ragproof_core.gc_pause import collector_paused
from ragproof_core.model import Answer, Case, CaseOutput, turn_id

# The top-level "case_id" key of a line and its (escape-free or escaped) string value.
# A quoted "case_id" cannot occur inside a JSON string (its quotes would be escaped),
# so in a line holding it once, that occurrence is the key of the line's own object.
_CASE_ID = re.compile(rb'"case_id"\s*:\s*"((?:[^"\\]|\\.)*)"')
_UNICODE_ESCAPE = b"\\u"


class RecordedAdapter:
    """Replays ``path`` (JSON Lines of recorded outputs) case by case."""

    # Replaying costs nothing, so `ragproof run --dry-run` may run it (run/dry_run.py).
    free_to_call = True
    # Its run_case never blocks: no loop thread of its own (adapters/isolation.py).
    shares_event_loop = True
    # Each output carries the recording's latency_s, not the replay's time (runner.py).
    reports_latency = True

    def __init__(self, path: str, *, validate: bool = True, read: bool = True) -> None:
        self.path = str(path)
        # The outputs handed over by ``replay`` (a stored recording), else None: the file.
        self._replayed: dict[str, CaseOutput] | None = None
        # Case id -> position in the two arrays: the line's byte offset and size.
        # Line numbers live in a third array, for the messages of a re-read line.
        self._index: dict[str, int] = {}
        self._offsets = array("q")
        self._sizes = array("q")
        self._lines = array("q")
        self._fd: int | None = None
        # Conversations being replayed: their turns' outputs, parsed at the first turn.
        self._conversations: dict[str, tuple[CaseOutput, ...]] = {}
        try:
            if not read:
                self._replayed = {}
            elif validate:
                self._validate_and_index()
            else:
                self._scan_index()
        except DatasetError as exc:
            raise AdapterLoadError(str(exc)) from None

    @classmethod
    def prechecked(cls, path: str) -> RecordedAdapter:
        """The adapter for a file this run's preflight already validated (module docstring)."""
        return cls(path, validate=False)

    @classmethod
    def stored(cls, path: str) -> RecordedAdapter:
        """The adapter of a run whose dataset step stored the recording as a table
        (``store/recording.py``): it reads nothing from ``path`` and replays the outputs
        ``replay`` hands it, a shard's batch at a time."""
        return cls(path, read=False)

    def replay(self, outputs: Iterable[CaseOutput]) -> None:
        """Replay ``outputs`` (each the stored output of its case) instead of the file."""
        self._replayed = {output.case_id: output for output in outputs}

    def _add(self, case_id: str, line: int, offset: int, size: int) -> None:
        earlier = self._index.setdefault(case_id, len(self._offsets))
        if earlier != len(self._offsets):
            raise AdapterLoadError(
                f"{self.path}:{line}: duplicate case_id {case_id!r} "
                f"(first used on line {self._lines[earlier]})"
            )
        self._offsets.append(offset)
        self._sizes.append(size)
        self._lines.append(line)

    def _validate_and_index(self) -> None:
        with collector_paused():
            for line, offset, size, row in iter_json_line_spans(self.path):
                self._add(_parsed_line(self.path, line, row)[0], line, offset, size)

    def _scan_index(self) -> None:
        """Index by each line's case id without parsing it (the file is known valid)."""
        try:
            handle = open(self.path, "rb")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise AdapterLoadError(f"{self.path}:0: cannot read file ({exc})") from None
        offset = 0
        with handle, collector_paused():
            for number, raw in enumerate(handle, start=1):
                start, offset = offset, offset + len(raw)
                if not raw.strip():
                    continue
                self._add(_line_case_id(self.path, number, raw), number, start, len(raw))

    def __len__(self) -> int:
        return len(self._index)

    def __repr__(self) -> str:
        return f"RecordedAdapter(path={self.path!r})"

    def _read_line(self, position: int) -> bytes:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        return os.pread(self._fd, self._sizes[position], self._offsets[position])

    async def run_case(self, case: Case, history: list | None = None) -> CaseOutput:
        """The recorded output for ``case`` (parsed from its line), or a case failure.

        ``history`` is accepted, so conversations replay, and not needed: the
        recording already holds what the pipeline answered with its history."""
        if self._replayed is not None:
            stored = self._replayed.get(case.id)
            if stored is None:
                # Every case of a run has its stored row: a missing one is a case failure.
                return CaseOutput(case.id, error=f"no recorded output for case {case.id}")
            return stored
        turn = case.turn
        position = self._index.get(case.id)
        if position is None and turn is not None:
            return self._recorded_turn(case)
        if position is None:
            return CaseOutput(case.id, error=f"no recorded output for case {case.id}")
        found = self._parsed(position)
        if isinstance(found, tuple):
            # A conversation's line under a single case's id: nothing to replay.
            return CaseOutput(case.id, error=f"recorded output for case {case.id} has turns")
        return found

    def _recorded_turn(self, case: Case) -> CaseOutput:
        turn = case.turn
        conversation = turn.conversation_id
        turns = self._conversations.pop(conversation, None)
        if turns is None:
            position = self._index.get(conversation)
            found = None if position is None else self._parsed(position)
            if not isinstance(found, tuple):
                return CaseOutput(case.id, error=f"no recorded output for case {case.id}")
            turns = found
        if turn.turn > len(turns):
            return CaseOutput(case.id, error=f"no recorded output for case {case.id}")
        output = turns[turn.turn - 1]
        # Kept for the next turn; a failed turn ends the conversation (no next turn).
        if not turn.last and not output.failed:
            self._conversations[conversation] = turns
        return output

    def _parsed(self, position: int) -> CaseOutput | tuple[CaseOutput, ...]:
        line = self._lines[position]
        try:
            return _parse_row(parse_json_line(self.path, line, self._read_line(position)))[1]
        except DatasetError as exc:
            raise ValueError(str(exc)) from None
        except ValueError as exc:
            # Only if the file changed since it was validated.
            raise ValueError(f"{self.path}:{line}: {exc}") from None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def answer(self, question: str) -> Answer:
        """Not usable: recordings are keyed by case id, and the runner calls ``run_case``.

        Present because every adapter has ``answer()`` (CONTRACT section 2).
        """
        raise TypeError(
            "RecordedAdapter replays outputs by case id; call run_case(case), not answer()"
        )


def iter_recording(
    path: str,
) -> Iterator[tuple[int, str, CaseOutput | tuple[CaseOutput, ...]]]:
    """Every line of the recording at ``path``, validated as the adapter validates it:
    its number, its case id and its output (a conversation's line: its turns' outputs).
    Raises ``AdapterLoadError`` naming ``PATH:LINE``, a repeated case id included. The
    run's dataset step stores what this yields (``store/recording.py``)."""
    first_line: dict[str, int] = {}
    try:
        with collector_paused():
            for line, row in iter_json_lines(path):
                case_id, found = _parsed_line(path, line, row)
                earlier = first_line.setdefault(case_id, line)
                if earlier != line:
                    raise AdapterLoadError(
                        f"{path}:{line}: duplicate case_id {case_id!r} "
                        f"(first used on line {earlier})"
                    )
                yield line, case_id, found
    except DatasetError as exc:
        raise AdapterLoadError(str(exc)) from None


def _parsed_line(path: str, line: int, row: Any) -> tuple[str, CaseOutput | tuple[CaseOutput, ...]]:
    try:
        return _parse_row(row)
    except ValueError as exc:
        raise AdapterLoadError(f"{path}:{line}: {exc}") from None


def _line_case_id(path: str, number: int, raw: bytes) -> str:
    """The case id of one line of a valid recording, found without parsing the whole line
    when that is safe (one ``"case_id"`` in it, no ``\\u`` escapes that could spell the
    key another way); otherwise by parsing it."""
    if raw.count(b'"case_id"') == 1 and _UNICODE_ESCAPE not in raw:
        found = _CASE_ID.search(raw)
        if found is not None:
            value = found.group(1)
            return value.decode("utf-8") if b"\\" not in value else json.loads(b'"' + value + b'"')
    row = parse_json_line(path, number, raw)
    case_id = row.get("case_id") if isinstance(row, dict) else None
    if not isinstance(case_id, str):
        raise AdapterLoadError(f"{path}:{number}: case_id: expected a string")
    return case_id


def _non_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def _non_negative(value: float) -> float:
    if not 0.0 <= value < float("inf"):
        raise ValueError(f"latency_s: must be a finite number of seconds >= 0, got {value!r}")
    return value


class RecordedLine(BaseModel):
    """One recorded-output line (CONTRACT section 2). Keys ragproof does not use are
    ignored (recordings often carry their own bookkeeping); ``null`` means absent.
    ``retrieve`` and ``answer`` are checked by the same coercion as live adapter output."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    case_id: Annotated[str, AfterValidator(_non_blank)]
    retrieve: list[Any] | None = None
    answer: Any = None
    error: Annotated[str, AfterValidator(_non_blank)] | None = None


def _non_negative_latency(value: Any) -> float | None:
    """A line's ``latency_s``: None when absent, else a finite non-negative number."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"latency_s: expected a number of seconds, got {type(value).__name__}")
    try:
        seconds = float(value)
    except OverflowError:
        # An integer past float's range: no finite number of seconds (not echoed: it is huge).
        raise ValueError("latency_s: must be a finite number of seconds >= 0") from None
    return _non_negative(seconds)


def _fields(row: dict) -> tuple[str, list | None, Any, str | None]:
    """``case_id``, ``retrieve``, ``answer``, ``error`` of a line, as ``RecordedLine`` checks
    them. The usual well-typed line is checked here directly (a replay reads a million);
    anything else goes through the model, whose messages name the bad key."""
    case_id, retrieve = row.get("case_id"), row.get("retrieve")
    answer, error = row.get("answer"), row.get("error")
    if (
        type(case_id) is str
        and case_id.strip()
        and (retrieve is None or type(retrieve) is list)
        and (error is None or (type(error) is str and error.strip()))
    ):
        return case_id, retrieve, answer, error
    try:
        line = RecordedLine.model_validate(row)
    except ValidationError as exc:
        raise ValueError(describe(exc, mapping="a JSON object", noun="field")) from None
    return line.case_id, line.retrieve, line.answer, line.error


def _parse_row(row: Any) -> tuple[str, CaseOutput | tuple[CaseOutput, ...]]:
    """A line's case id and output, or a conversation's id and its turns' outputs."""
    if not isinstance(row, dict) or row.get("turns") is None:
        output = _parse_line(row)
        return output.case_id, output
    return _parse_conversation(row)


def _parse_conversation(row: dict) -> tuple[str, tuple[CaseOutput, ...]]:
    try:
        line = ConversationLine.model_validate(row)
    except ValidationError as exc:
        raise ValueError(describe(exc, mapping="a JSON object", noun="field")) from None
    outputs = []
    for number, turn in enumerate(line.turns, start=1):
        if not isinstance(turn, dict):
            raise ValueError(f"turn {number}: expected a JSON object, got {type(turn).__name__}")
        try:
            outputs.append(_parse_line({**turn, "case_id": turn_id(line.case_id, number)}))
        except ValueError as exc:
            raise ValueError(f"turn {number}: {exc}") from None
    return line.case_id, tuple(outputs)


class ConversationLine(BaseModel):
    """A conversation's recorded line (CONTRACT section 16): its id and one LINE per turn."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    case_id: Annotated[str, AfterValidator(_non_blank)]
    turns: list[Any]


def _parse_line(row: Any) -> CaseOutput:
    if not isinstance(row, dict):
        raise ValueError(f"expected a JSON object, got {type(row).__name__}")
    case_id, retrieve, answer, error = _fields(row)
    latency = _non_negative_latency(row.get("latency_s"))
    if error is not None:
        return CaseOutput(case_id, error=error, latency_s=latency)
    if answer is None and retrieve is None:
        raise ValueError("line has none of 'retrieve', 'answer' or 'error'")
    retrieved = None
    if retrieve is not None:
        try:
            retrieved = to_chunks(retrieve)
        except AdapterOutputError as exc:
            raise ValueError(f"retrieve: {exc}") from None
    if answer is not None:
        try:
            answer = to_answer(answer)
        except AdapterOutputError as exc:
            raise ValueError(f"answer: {exc}") from None
    return CaseOutput(case_id, answer=answer, retrieved=retrieved, latency_s=latency)
