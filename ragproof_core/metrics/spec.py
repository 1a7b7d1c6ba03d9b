"""A metric's declaration: everything ragproof knows about one metric, in one object.

Each metric module declares its metrics as ``MetricSpec`` values next to the
code that scores them (as ir_measures' measures or inspect_ai's scorers carry
their own function); ``metrics.registry`` lists them. A spec says:

- ``name``, ``family`` and direction (``higher_is_better``);
- ``judge``: asks a judge always (``required``), when one is configured and
  otherwise uses a heuristic (``optional``), or never (``never``);
- ``needs``: what a case must bring (anything missing makes it skip);
- ``reads``: what it reads of a case's output (``READS``), from which a run works out
  which adapter methods to call (``adapter_methods``): default, everything;
- ``prompt``: the judge prompt it asks, if any; ``cutoff``: the run setting that
  cuts its ranking (``k``), if any;
- how it is scored, exactly one of:

  - ``score(case, output, params)``: a deterministic result;
  - ``plan(case, output, has_judge, params)``: a judged metric's pure plan
    (``judge.plan``), asked alone in per_metric mode and as one part of the
    case's request in combined mode;
  - ``plan`` and ``conversation(turns, outputs, has_judge, params)``: a metric
    of a whole conversation (CONTRACT section 16), planned once its last turn
    is done and stored under the conversation's id; its ``plan`` is what a
    single case gets (a skip), and turns carry no row of it; its
    ``conversation_columns(conversations, params)``, when given, is the same
    rows for a batch's conversations in a run without a judge, from the store's
    columns (``metrics.conversation_columns``);
  - ``group``: several metrics computed from one pass (retrieval's four from
    one deduplicated ranking) or one judge reply (context relevance and
    judged nDCG). A group's members are still one spec each; judged members
    also carry their own ``plan``, which combined mode asks.

A metric or group may also give ``score_columns``: its rows for many cases at once
from the store's Arrow columns (``ResultColumns``), the same rows its scoring
gives case by case. A run without a judge whose every selected metric has them
scores a batch without a result object per row (``run.evaluate``).

``params`` is the run's settings (anything with ``k`` and ``source_match``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ragproof_core.adapters.runner import ANSWER, RETRIEVE
from ragproof_core.judge.types import Judge
from ragproof_core.metrics.conversation_columns import ConversationColumns
from ragproof_core.metrics.judge_plan import Planned
from ragproof_core.metrics.result_columns import ResultColumns
from ragproof_core.model import Case, CaseOutput, MetricResult

JUDGE_MODES: tuple[str, ...] = ("never", "optional", "required")
CUTOFFS: tuple[str, ...] = ("k",)

# What a metric reads of a case's output (``MetricSpec.reads``), each beside the adapter
# methods that give it (CONTRACT section 2): ``retrieve()``'s chunks; the answer's text,
# its citations, its steps and tool calls, the pipeline's usage and time; the context
# (the answer's own chunks, else ``retrieve()``'s, so both methods). A run calls only
# the methods its selected metrics read (``adapter_methods``).
READS: dict[str, tuple[str, ...]] = {
    "retrieved": (RETRIEVE,),
    "answer": (ANSWER,),
    "citations": (ANSWER,),
    "tool_calls": (ANSWER,),
    "usage": (ANSWER,),
    "context": (ANSWER, RETRIEVE),
    "latency": (ANSWER, RETRIEVE),
}
ALL_READS: frozenset[str] = frozenset(READS)


def adapter_methods(reads: Iterable[str]) -> frozenset[str]:
    """The adapter methods that give what ``reads`` names."""
    return frozenset(method for read in reads for method in READS[read])


class Params(Protocol):
    """The run settings a metric may read."""

    @property
    def k(self) -> int: ...

    @property
    def source_match(self) -> str: ...


# What counts as an expected source in retrieval (``Params.source_match``).
SOURCE_MATCHES: tuple[str, ...] = ("chunk", "document")


@dataclass(frozen=True, slots=True)
class MetricParams:
    """``Params`` at their defaults, for a metric scored outside a run; the ``[run]``
    table (``config.settings.RunSettings``) declares the same defaults from these."""

    k: int = 5
    source_match: str = "chunk"


DEFAULT_PARAMS = MetricParams()


Score = Callable[[Case, CaseOutput, Any], MetricResult]
Plan = Callable[[Case, CaseOutput, bool, Any], Planned]
# (the conversation's turns, their outputs, has_judge, params) -> a plan or a result.
ConversationPlan = Callable[[Sequence[Case], Sequence[CaseOutput], bool, Any], Planned]
# (a batch's conversations, params) -> their rows without a judge, one per conversation.
ConversationColumnScore = Callable[[ConversationColumns, Any], ResultColumns]
BatchScore = Callable[
    [Sequence[Case], Sequence[CaseOutput], Any, Sequence[str]], Sequence[Sequence[MetricResult]]
]
# (dataset rows, their outputs, params, wanted): the store's ``dataset`` and ``outputs``
# columns of many cases, row for row (pyarrow tables), to their rows as columns.
ColumnScore = Callable[[Any, Any, Any, Sequence[str]], ResultColumns]
# A ``score_columns``' reads, declared beside it (``column_reads``): names of the
# ``dataset`` and ``outputs`` columns (the two tables share no top-level name), a
# field of a list of structs as ``column.field`` (``retrieved.id``). A run whose
# scorers all declare theirs reads only those columns of a stored recording.
GroupAsk = Callable[[Case, CaseOutput, Judge | None, Any], Awaitable[Sequence[MetricResult]]]


@dataclass(frozen=True, slots=True)
class MetricGroup:
    """Metrics scored together; exactly one of ``score`` (deterministic) or ``ask``
    (per_metric judge mode: one judge call for every member)."""

    name: str
    members: tuple[str, ...]
    # (case, output, params, wanted): the results of the ``wanted`` members, a member
    # with a cut-off variant (``name@N``) included.
    score: Callable[[Case, CaseOutput, Any, Sequence[str]], Sequence[MetricResult]] | None = None
    ask: (
        Callable[[Case, CaseOutput, Judge | None, Any], Awaitable[Sequence[MetricResult]]] | None
    ) = None
    # (cases, outputs, params, wanted): ``score`` over many cases that did not fail at
    # once, one list of results per case, each equal to what ``score`` gives it. A run
    # scores the group this way when it is set (``run.evaluate``).
    score_batch: BatchScore | None = None
    # (dataset, outputs, params, wanted): the group's rows from the store's columns (cases
    # that did not fail), each case's rows ``wanted`` in order, case after case, as
    # columns: ``score``'s rows, or for an ``ask`` group its rows when the run has no
    # judge. A run whose every metric has them builds no result object (``run.evaluate``).
    score_columns: ColumnScore | None = None
    # The store columns ``score_columns`` reads (the note on ``ColumnScore``); None: any.
    column_reads: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if (self.score is None) == (self.ask is None):
            raise ValueError(f"metric group {self.name!r}: give exactly one of score or ask")
        if self.score_batch is not None and self.score is None:
            raise ValueError(f"metric group {self.name!r}: score_batch needs score beside it")


@dataclass(frozen=True, slots=True)
class MetricSpec:
    name: str
    higher_is_better: bool
    judge: str  # one of JUDGE_MODES
    needs: tuple[str, ...]
    description: str
    score: Score | None = None
    plan: Plan | None = None
    group: MetricGroup | None = None
    prompt: str | None = None
    cutoff: str | None = None
    # Set when the family is not the name's first part (custom metrics).
    family_name: str | None = None
    # Whether ``ragproof calibrate`` scores its prompt's fixtures through this metric
    # (one metric per prompt; judged metrics only).
    calibrates: bool = True
    # Whether a run that selects no metrics scores it (False: opt-in, selected by name).
    default: bool = True
    # A metric of a whole conversation (module docstring); ``plan`` skips single cases.
    conversation: ConversationPlan | None = None
    # ``conversation``'s rows for many conversations at once, in a run without a judge.
    conversation_columns: ConversationColumnScore | None = None
    # (dataset, outputs, params, (name,)): the metric's rows from the store's columns, as
    # ``MetricGroup.score_columns`` gives a group's: ``score``'s rows, or for a judged
    # metric its rows when the run has no judge.
    score_columns: ColumnScore | None = None
    # The store columns that ``score_columns`` reads, as ``MetricGroup.column_reads``.
    column_reads: tuple[str, ...] | None = None
    # A group member's function over a whole batch of cases, which its group's
    # ``score_batch``/``score_columns`` call (retrieval: ``(RetrievalBatch, k)`` to one
    # value per case, ``retrieval_batch_kernels``).
    kernel: Callable[..., Any] | None = None
    # What it reads of a case's output (``READS``): a run calls only the adapter methods
    # its selected metrics read. Everything unless declared.
    reads: frozenset[str] = ALL_READS
    # Whether every score lies in [0, 1], so intervals of its mean are reported within
    # [0, 1] (CONTRACT section 25); False for counts and the system's own units.
    bounded: bool = True

    def __post_init__(self) -> None:
        if self.judge not in JUDGE_MODES:
            raise ValueError(f"metric {self.name!r}: judge must be one of {JUDGE_MODES}")
        if self.cutoff is not None and self.cutoff not in CUTOFFS:
            raise ValueError(f"metric {self.name!r}: cutoff must be one of {CUTOFFS}")
        if self.group is not None and self.name not in self.group.members:
            raise ValueError(f"metric {self.name!r} is not a member of group {self.group.name!r}")
        if self.group is None and (self.score is None) == (self.plan is None):
            raise ValueError(f"metric {self.name!r}: give exactly one of score, plan or group")
        if (self.plan is None) != (self.judge == "never"):
            raise ValueError(f"metric {self.name!r}: a judged metric has a plan, no other has")
        if self.plan is not None and self.prompt is None:
            raise ValueError(f"metric {self.name!r}: a judged metric names its prompt")
        if self.kernel is not None and self.group is None:
            raise ValueError(f"metric {self.name!r}: a batch kernel belongs to a group's member")
        if self.conversation is not None and (self.plan is None or self.group is not None):
            raise ValueError(f"metric {self.name!r}: a conversation's metric has a plan, no group")
        if self.conversation_columns is not None and self.conversation is None:
            raise ValueError(f"metric {self.name!r}: conversation_columns needs conversation")
        unknown = set(self.reads) - ALL_READS
        if unknown or not self.reads:
            raise ValueError(
                f"metric {self.name!r}: reads must name some of {sorted(ALL_READS)}, "
                f"got {sorted(self.reads)}"
            )

    @property
    def per_conversation(self) -> bool:
        """Scored once per conversation, under its id, rather than per case."""
        return self.conversation is not None

    @property
    def calibrates_prompt(self) -> str | None:
        return self.prompt if self.calibrates and self.plan is not None else None

    @property
    def family(self) -> str:
        return self.family_name or self.name.split(".", 1)[0]

    @property
    def judged(self) -> bool:
        """True when the score comes from a judge whenever one is configured."""
        return self.judge != "never"


def case_only(function: Callable[[Case, CaseOutput], MetricResult]) -> Score:
    """A ``score`` from a metric function that reads no run setting."""

    def score(case: Case, output: CaseOutput, params: Any) -> MetricResult:
        return function(case, output)

    return score


def plan_without_params(function: Callable[[Case, CaseOutput, bool], Planned]) -> Plan:
    """A ``plan`` from a planner that reads no run setting."""

    def plan(case: Case, output: CaseOutput, has_judge: bool, params: Any) -> Planned:
        return function(case, output, has_judge)

    return plan


def _not_scored(case: Case, output: CaseOutput, params: Any) -> MetricResult:
    raise RuntimeError("a name-only declaration is never scored")


def named_only(name: str) -> MetricSpec:
    """A run's own metric known by its name alone: enough to select it (settings check
    ``--metrics`` against a config's [[metric]] names before anything is built)."""
    return MetricSpec(name, True, "never", ("declared by the run",), "", score=_not_scored)
