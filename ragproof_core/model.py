"""The data model shared by every part of ragproof.

Typed, immutable records at the boundaries: what a dataset holds (``Case``,
and ``Conversation`` for a multi-turn case), what the pipeline under test
returns (``Chunk``, ``Answer``, ``CaseOutput``) and what a metric says about
one case (``MetricResult``).

Conversations (CONTRACT section 16). A dataset line of kind ``conversation``
becomes one ``Case`` per user turn, in order and next to each other: turn
``t`` (1-based) of conversation ``c1`` is the case ``c1#t`` and carries
``Case.turn = TurnOf("c1", t, turns)``. Every metric sees a turn as a case;
what only a conversation has (the order of its turns, the history of earlier
turns, ``conversation.*`` metrics stored under ``c1``) reads ``Case.turn``.
The pipeline's history for turn ``t`` is ``CaseOutput.history``: the earlier
turns as ``Message`` objects, user and assistant alternating.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar


class CaseKind(StrEnum):
    QA = "qa"
    UNANSWERABLE = "unanswerable"
    INJECTION = "injection"
    # CONTRACT section 23: the question leads retrieval to a planted false chunk whose
    # marker (``Case.poison_marker``) the answer must not repeat.
    POISONING = "poisoning"


# A dataset line's kind for a multi-turn case; its turns are cases of the kinds above.
CONVERSATION_KIND = "conversation"


def turn_id(conversation_id: str, turn: int) -> str:
    """The case id of turn ``turn`` (1-based) of a conversation: ``c1#2``."""
    return f"{conversation_id}#{turn}"


@dataclass(frozen=True, slots=True)
class TurnOf:
    """Where a case sits in its conversation: turn ``turn`` (1-based) of ``turns``."""

    conversation_id: str
    turn: int
    turns: int

    @property
    def first(self) -> bool:
        return self.turn == 1

    @property
    def last(self) -> bool:
        return self.turn == self.turns


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a conversation's history, as adapters receive it
    (``{"role": "user" | "assistant", "content": str}``)."""

    role: str
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


class Status(StrEnum):
    """Outcome of one metric on one case (CONTRACT section 6)."""

    SCORED = "scored"
    SKIPPED = "skipped"
    NOT_APPLICABLE = "not_applicable"
    JUDGE_ERROR = "judge_error"
    ERROR = "error"


class ToolMatch(StrEnum):
    """How a case's made tool calls must line up with its expected ones (CONTRACT section 17)."""

    EXACT = "exact"
    IN_ORDER = "in_order"
    ANY_ORDER = "any_order"


@dataclass(frozen=True, slots=True)
class ExpectedTool:
    """A tool call a case expects: the tool's name and, when given, the arguments
    that must be among the made call's (``None``: any arguments match)."""

    name: str
    arguments: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Nugget:
    """One fact an answer should state (CONTRACT section 20, TREC RAG's nuggets): its text
    and whether it is vital (an answer without it fails) or only okay to have."""

    text: str
    vital: bool

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "vital": self.vital}


def nuggets_from_json(text: str | None) -> tuple[Nugget, ...] | None:
    """A case's nuggets from the JSON text the store keeps them as
    (``[{"text": ..., "vital": ...}, ...]``); None stays None."""
    if text is None:
        return None
    return tuple(Nugget(n["text"], n["vital"]) for n in json.loads(text))


def expected_tools_from_json(text: str | None) -> tuple[ExpectedTool, ...] | None:
    """A case's expected tools from the JSON text the store keeps them as
    (``[{"name": ..., "arguments": {...}}, ...]``, arguments optional); None stays None."""
    if text is None:
        return None
    return tuple(ExpectedTool(t["name"], t.get("arguments")) for t in json.loads(text))


@dataclass(slots=True)
class Case:
    id: str
    question: str
    kind: CaseKind = CaseKind.QA
    expected_source_ids: tuple[str, ...] | None = None
    expected_answer: str | None = None
    adversarial_payload: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    # Set only when the dataset gave expected_source_ids as an object of grades
    # (CONTRACT section 19): every judged id with its grade, zeros included.
    # expected_source_ids then holds the relevant ids (grade >= 1) in the
    # object's order, so code that reads only it sees the relevant sources.
    source_grades: dict[str, int] | None = None
    # CONTRACT section 17: the agent's expected tool calls, how they must match,
    # and the gold source ids of its 1st, 2nd, ... retrieval step.
    expected_tools: tuple[ExpectedTool, ...] | None = None
    tool_match: ToolMatch = ToolMatch.IN_ORDER
    expected_hops: tuple[tuple[str, ...], ...] | None = None
    # CONTRACT section 20: the facts an answer should state; None when not given.
    nuggets: tuple[Nugget, ...] | None = None
    # Set for a turn of a conversation (module docstring); None for a single case.
    turn: TurnOf | None = None
    # CONTRACT section 23: a poisoning case's marker, planted in a false chunk only,
    # and the restricted chunks (or documents) this case's user may be shown.
    poison_marker: str | None = None
    allowed_restricted_ids: tuple[str, ...] | None = None

    @property
    def conversation_id(self) -> str | None:
        return None if self.turn is None else self.turn.conversation_id

    def judgments(self) -> dict[str, int]:
        """Every judged id with its grade; a list of ids is grade 1 each."""
        if self.source_grades is not None:
            return self.source_grades
        return dict.fromkeys(self.expected_source_ids or (), 1)


@dataclass(frozen=True, slots=True)
class Conversation:
    """A conversation case: its id, its turns (``Case`` objects ``c1#1`` ... in order,
    each with ``turn`` set) and its metadata (which every turn carries too)."""

    id: str
    turns: tuple[Case, ...]
    metadata: dict[str, Any] = field(default_factory=dict)


def conversations_of(cases: Sequence[Case]) -> list[Conversation]:
    """The conversations among ``cases`` (turns are next to each other, in order)."""
    found: list[Conversation] = []
    for start, end in units(cases):
        first = cases[start]
        if first.turn is not None:
            found.append(
                Conversation(first.turn.conversation_id, tuple(cases[start:end]), first.metadata)
            )
    return found


def units(cases: Sequence[Case]) -> Iterator[tuple[int, int]]:
    """``cases`` cut into ``[start, end)`` runs evaluated together, in order: a single
    case alone, a conversation's turns together. Lazy: a million single cases cost no
    list of units."""
    index, total = 0, len(cases)
    while index < total:
        end = index + 1
        turn = cases[index].turn
        if turn is not None:
            while end < total and cases[end].conversation_id == turn.conversation_id:
                end += 1
        yield index, end
        index = end


def unfinished_conversation(cases: Sequence[Case]) -> int:
    """Where a conversation cut off by the end of ``cases`` starts (its last turn is not
    among them), else ``len(cases)``: a batch of cases ends there."""
    if not cases or cases[-1].turn is None or cases[-1].turn.last:
        return len(cases)
    conversation = cases[-1].turn.conversation_id
    start = len(cases) - 1
    while start > 0 and cases[start - 1].conversation_id == conversation:
        start -= 1
    return start


@dataclass(slots=True)
class Chunk:
    id: str
    text: str
    score: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def document_id(self) -> str:
        """The id used by ``source_match = "document"``: metadata.document_id, else the chunk id."""
        doc = self.metadata.get("document_id") if self.metadata else None
        return str(doc) if doc is not None else self.id


@dataclass(frozen=True, slots=True)
class Usage:
    """What the pipeline says one answer cost it (CONTRACT section 18); None: not reported."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None

    @property
    def tokens(self) -> int | None:
        """Input plus output tokens; None when the pipeline reported neither."""
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)


@dataclass(frozen=True, slots=True)
class RetrieveStep:
    """One retrieval an agent made: the query it searched with and the chunks it got, ranked."""

    type: ClassVar[str] = "retrieve"
    query: str
    chunks: tuple[Chunk, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "query": self.query,
            "chunks": [chunk_json(chunk) for chunk in self.chunks],
        }


@dataclass(frozen=True, slots=True)
class ToolStep:
    """One tool call an agent made: the tool, its JSON arguments and, if known, its output."""

    type: ClassVar[str] = "tool"
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    output: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type, "name": self.name, "arguments": self.arguments}
        if self.output is not None:
            data["output"] = self.output
        return data


Step = RetrieveStep | ToolStep


def chunk_json(chunk: Chunk) -> dict[str, Any]:
    """A chunk as the JSON object of CONTRACT section 2 (absent score and metadata left out)."""
    data: dict[str, Any] = {"id": chunk.id, "text": chunk.text}
    if chunk.score is not None:
        data["score"] = chunk.score
    if chunk.metadata:
        data["metadata"] = chunk.metadata
    return data


@dataclass(slots=True)
class Answer:
    text: str
    retrieved_chunks: tuple[Chunk, ...] | None = None
    citations: tuple[str, ...] | None = None
    # The agent's trajectory in order (CONTRACT section 17). None: the pipeline
    # reported no trajectory; (): a trajectory in which no call was made.
    steps: tuple[Step, ...] | None = None
    # What the pipeline says the answer cost it (CONTRACT section 18); None: not reported.
    usage: Usage | None = None

    @property
    def tool_calls(self) -> tuple[ToolStep, ...]:
        return tuple(s for s in self.steps or () if isinstance(s, ToolStep))

    @property
    def retrievals(self) -> tuple[RetrieveStep, ...]:
        return tuple(s for s in self.steps or () if isinstance(s, RetrieveStep))


@dataclass(slots=True)
class CaseOutput:
    """What the pipeline under test produced for one case.

    ``retrieved`` is None when the adapter does not expose ``retrieve()`` (or a
    recorded line has no ``retrieve``); an empty tuple means it retrieved nothing.
    ``error`` is set for a case failure (exception, timeout, missing recording);
    then ``answer`` and ``retrieved`` are meaningless. ``latency_s`` is the
    pipeline's time for the case: a live call's wall time, or the ``latency_s``
    a recording reports; None when nothing says (a recording without it).
    """

    case_id: str
    answer: Answer | None = None
    retrieved: tuple[Chunk, ...] | None = None
    error: str | None = None
    latency_s: float | None = None
    # A conversation's turn: the earlier turns, user and assistant alternating (the
    # pipeline's own answers), as the adapter received them; None for a single case.
    history: tuple[Message, ...] | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def context(self) -> tuple[Chunk, ...] | None:
        """Context for generation metrics: the answer's own chunks, else ``retrieve()``'s."""
        if self.answer is not None and self.answer.retrieved_chunks is not None:
            return self.answer.retrieved_chunks
        return self.retrieved


@dataclass(slots=True)
class MetricResult:
    case_id: str
    metric: str
    status: Status
    value: float | None = None
    reason: str | None = None
    judge_raw_json: str | None = None

    def __post_init__(self) -> None:
        # A value exists exactly when the metric scored: a metric that could not
        # be computed must never masquerade as 0.
        if (self.status is _SCORED) != (self.value is not None):
            raise ValueError(f"{self.metric}: status {self.status} with value {self.value!r}")


# The statuses as plain module names: reading an enum member off its class
# (``Status.SKIPPED``) costs ~0.3 us on Python 3.11, several times the rest of a
# result's construction, and a million-case run builds 22 million results.
_SCORED = Status.SCORED
_SKIPPED = Status.SKIPPED
_NOT_APPLICABLE = Status.NOT_APPLICABLE
_JUDGE_ERROR = Status.JUDGE_ERROR
_ERROR = Status.ERROR


def scored(
    case_id: str, metric: str, value: float, judge_raw_json: str | None = None
) -> MetricResult:
    return MetricResult(case_id, metric, _SCORED, float(value), None, judge_raw_json)


def skipped(case_id: str, metric: str, reason: str) -> MetricResult:
    return MetricResult(case_id, metric, _SKIPPED, None, reason)


def not_applicable(
    case_id: str, metric: str, reason: str, judge_raw_json: str | None = None
) -> MetricResult:
    return MetricResult(case_id, metric, _NOT_APPLICABLE, None, reason, judge_raw_json)


def judge_error(
    case_id: str, metric: str, reason: str, judge_raw_json: str | None = None
) -> MetricResult:
    return MetricResult(case_id, metric, _JUDGE_ERROR, None, reason, judge_raw_json)


def case_error(case_id: str, metric: str, reason: str) -> MetricResult:
    return MetricResult(case_id, metric, _ERROR, None, reason)
