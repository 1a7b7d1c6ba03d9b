"""The data model shared by every part of ragproof.

Typed, immutable records at the boundaries: what a dataset holds (``Case``),
what the pipeline under test returns (``Chunk``, ``Answer``, ``CaseOutput``)
and what a metric says about one case (``MetricResult``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar


class CaseKind(StrEnum):
    QA = "qa"
    UNANSWERABLE = "unanswerable"
    INJECTION = "injection"


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

    def judgments(self) -> dict[str, int]:
        """Every judged id with its grade; a list of ids is grade 1 each."""
        if self.source_grades is not None:
            return self.source_grades
        return dict.fromkeys(self.expected_source_ids or (), 1)


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
    then ``answer`` and ``retrieved`` are meaningless.
    """

    case_id: str
    answer: Answer | None = None
    retrieved: tuple[Chunk, ...] | None = None
    error: str | None = None
    latency_s: float = 0.0

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
        if (self.status is Status.SCORED) != (self.value is not None):
            raise ValueError(f"{self.metric}: status {self.status} with value {self.value!r}")


def scored(
    case_id: str, metric: str, value: float, judge_raw_json: str | None = None
) -> MetricResult:
    return MetricResult(case_id, metric, Status.SCORED, float(value), None, judge_raw_json)


def skipped(case_id: str, metric: str, reason: str) -> MetricResult:
    return MetricResult(case_id, metric, Status.SKIPPED, None, reason)


def not_applicable(
    case_id: str, metric: str, reason: str, judge_raw_json: str | None = None
) -> MetricResult:
    return MetricResult(case_id, metric, Status.NOT_APPLICABLE, None, reason, judge_raw_json)


def judge_error(
    case_id: str, metric: str, reason: str, judge_raw_json: str | None = None
) -> MetricResult:
    return MetricResult(case_id, metric, Status.JUDGE_ERROR, None, reason, judge_raw_json)


def case_error(case_id: str, metric: str, reason: str) -> MetricResult:
    return MetricResult(case_id, metric, Status.ERROR, None, reason)
