"""The Parquet schema of each store table, and its encoding to and from the model.

The tables are declared in ``tables.py``; the schemas here are built from
those declarations. Columns are only ever added, never renamed or retyped:
the views read with ``union_by_name`` and the readers below fill a column an
old file lacks with nulls, so old runs stay readable.

Encoders build Arrow arrays column by column from the dataclasses (no pandas,
no per-row dicts): a 100,000-case run has 1.3M result rows.

Dicts kept verbatim (case and chunk metadata) are stored as JSON text; a
Python ``None`` is a Parquet null and an empty dict is ``"{}"``, so both
round-trip exactly. Likewise a ``None`` list (e.g. retrieval not exposed) is a
null list and an empty tuple an empty list.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from typing import Any

import pyarrow as pa

from ragproof_core.adapters.coerce import to_steps
from ragproof_core.errors import UserError
from ragproof_core.model import (
    Answer,
    Case,
    CaseKind,
    CaseOutput,
    Chunk,
    ExpectedTool,
    MetricResult,
    Nugget,
    Status,
    Step,
    ToolMatch,
    TurnOf,
    Usage,
    expected_tools_from_json,
    nuggets_from_json,
)
from ragproof_core.store import tables

DATASET_SCHEMA = tables.DATASET.schema
OUTPUTS_SCHEMA = tables.OUTPUTS.schema
CASE_RESULTS_SCHEMA = tables.CASE_RESULTS.schema
METRIC_SUMMARIES_SCHEMA = tables.METRIC_SUMMARIES.schema
RUN_SCHEMA = tables.RUN.schema
CHUNK_TYPE = tables.CHUNK_TYPE
CHUNK_LIST_TYPE = tables.CHUNK_LIST_TYPE

# A summary's fields: its table's columns after run_id.
SUMMARY_FIELDS: tuple[str, ...] = tables.METRIC_SUMMARIES.names[1:]

SCHEMAS: dict[str, pa.Schema] = {name: table.schema for name, table in tables.TABLES.items()}

_STATUS_BY_VALUE = {s.value: s for s in Status}
# Keyed by member: a plain string equal to a status's value hashes alike and is found
# too, as the old encoder (which stored whatever string it was given) accepted it.
_STATUS_CODES = {s: index for index, s in enumerate(Status)}


# --- shared helpers -------------------------------------------------------------------------


def _strings(values: Iterable[str | None]) -> pa.Array:
    return pa.array(list(values), pa.string())


def _run_ids(run_id: str, n: int) -> pa.Array:
    return pa.repeat(pa.scalar(run_id, pa.string()), n)


def _no_trials(n: int) -> pa.Array:
    """The ``trial`` column of rows encoded apart from their trial: the results writer
    sets it (``run_store.ResultsWriter``); NULL reads as trial 1."""
    return pa.nulls(n, pa.int32())


def with_trial(table: pa.Table, trial: int) -> pa.Table:
    """``table`` (outputs or case results) with every row's ``trial`` set to ``trial``;
    a table without the column (a recording copied in) gains it at the end."""
    column = pa.repeat(pa.scalar(trial, pa.int32()), table.num_rows)
    index = table.schema.get_field_index("trial")
    if index < 0:
        return table.append_column(pa.field("trial", pa.int32()), column)
    return table.set_column(index, table.schema.field(index), column)


_to_json = json.JSONEncoder(ensure_ascii=False).encode


def _json_or_none(value: Any) -> str | None:
    if value is None:
        return None
    return "{}" if value == {} else _to_json(value)


def _loads_or_none(text: str | None) -> Any:
    if text is None:
        return None
    return {} if text == "{}" else json.loads(text)


def _string_lists(lists: Sequence[Sequence[str] | None]) -> pa.Array:
    return pa.array([None if x is None else list(x) for x in lists], pa.list_(pa.string()))


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with exactly ``schema``'s columns: missing ones (older files) become nulls."""
    columns = []
    for field in schema:
        if field.name in table.column_names:
            columns.append(table.column(field.name).cast(field.type))
        else:
            columns.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def _column(table: pa.Table, name: str) -> list[Any]:
    return table.column(name).to_pylist()


# --- chunks ---------------------------------------------------------------------------------


def _chunk_lists(lists: Sequence[Sequence[Chunk] | None]) -> pa.Array:
    # Flattened list comprehensions: a big run holds a million chunks.
    flat = [chunk for chunks in lists if chunks is not None for chunk in chunks]
    offsets = [0, *accumulate(0 if chunks is None else len(chunks) for chunks in lists)]
    values = pa.StructArray.from_arrays(
        [
            _strings([c.id for c in flat]),
            _strings([c.text for c in flat]),
            pa.array([c.score for c in flat], pa.float64()),
            _strings([_json_or_none(c.metadata) for c in flat]),
        ],
        fields=list(CHUNK_TYPE),
    )
    return pa.ListArray.from_arrays(
        pa.array(offsets, pa.int32()),
        values,
        type=CHUNK_LIST_TYPE,
        mask=pa.array([chunks is None for chunks in lists], pa.bool_()),
    )


def _decode_chunk_lists(column: pa.ChunkedArray) -> list[tuple[Chunk, ...] | None]:
    out: list[tuple[Chunk, ...] | None] = []
    for array in column.chunks:
        offsets = array.offsets.to_pylist()
        valid = array.is_valid().to_pylist()
        # offsets index into the whole child array, whatever the list's own slice offset
        ids, texts, scores, metas = (f.to_pylist() for f in array.values.flatten())
        for i, is_valid in enumerate(valid):
            if not is_valid:
                out.append(None)
                continue
            out.append(
                tuple(
                    Chunk(ids[j], texts[j], scores[j], _loads_or_none(metas[j]))
                    for j in range(offsets[i], offsets[i + 1])
                )
            )
    return out


# --- dataset --------------------------------------------------------------------------------


_KINDS = frozenset(kind.value for kind in CaseKind)


def encode_dataset(run_id: str, cases: Sequence[Case]) -> pa.Table:
    kinds = [str(c.kind) for c in cases]
    unknown = set(kinds) - _KINDS
    if unknown:
        raise ValueError(f"unknown case kind(s): {', '.join(sorted(unknown))}")
    return pa.Table.from_arrays(
        [
            _run_ids(run_id, len(cases)),
            _strings(c.id for c in cases),
            _strings(c.question for c in cases),
            _strings(kinds),
            _string_lists([c.expected_source_ids for c in cases]),
            _strings(c.expected_answer for c in cases),
            _strings(c.adversarial_payload for c in cases),
            _strings(_json_or_none(c.metadata) for c in cases),
            _strings(_json_or_none(c.source_grades) for c in cases),
            _strings(_tools_json(c.expected_tools) for c in cases),
            _strings(str(c.tool_match) for c in cases),
            pa.array([_hops(c.expected_hops) for c in cases], pa.list_(pa.list_(pa.string()))),
            _strings(None if c.turn is None else c.turn.conversation_id for c in cases),
            pa.array([None if c.turn is None else c.turn.turn for c in cases], pa.int32()),
            pa.array([None if c.turn is None else c.turn.turns for c in cases], pa.int32()),
            _strings(c.poison_marker for c in cases),
            _string_lists([c.allowed_restricted_ids for c in cases]),
            _strings(_nuggets_json(c.nuggets) for c in cases),
        ],
        schema=DATASET_SCHEMA,
    )


def _hops(hops: Sequence[Sequence[str]] | None) -> list[list[str]] | None:
    return None if hops is None else [list(hop) for hop in hops]


def _tools_json(tools: Sequence[ExpectedTool] | None) -> str | None:
    if tools is None:
        return None
    return _to_json(
        [
            {"name": t.name} if t.arguments is None else {"name": t.name, "arguments": t.arguments}
            for t in tools
        ]
    )


def _nuggets_json(nuggets: Sequence[Nugget] | None) -> str | None:
    return None if nuggets is None else _to_json([n.to_json() for n in nuggets])


def _steps_json(steps: Sequence[Step] | None) -> str | None:
    return None if steps is None else _to_json([step.to_json() for step in steps])


def decode_dataset(table: pa.Table) -> list[Case]:
    table = conform(table, DATASET_SCHEMA)
    expected = _column(table, "expected_source_ids")
    return [
        Case(
            id=id_,
            question=question,
            kind=CaseKind(kind),
            expected_source_ids=None if ids is None else tuple(ids),
            expected_answer=expected_answer,
            adversarial_payload=payload,
            metadata=_loads_or_none(meta),
            source_grades=_loads_or_none(grades),
            expected_tools=expected_tools_from_json(tools),
            tool_match=ToolMatch.IN_ORDER if tool_match is None else ToolMatch(tool_match),
            expected_hops=None if hops is None else tuple(tuple(hop) for hop in hops),
            turn=None if conversation is None else TurnOf(conversation, turn, turns),
            poison_marker=marker,
            allowed_restricted_ids=None if allowed is None else tuple(allowed),
            nuggets=nuggets_from_json(nuggets),
        )
        for (
            id_,
            question,
            kind,
            ids,
            expected_answer,
            payload,
            meta,
            grades,
            tools,
            tool_match,
            hops,
            conversation,
            turn,
            turns,
            marker,
            allowed,
            nuggets,
        ) in zip(
            _column(table, "id"),
            _column(table, "question"),
            _column(table, "kind"),
            expected,
            _column(table, "expected_answer"),
            _column(table, "adversarial_payload"),
            _column(table, "metadata_json"),
            _column(table, "expected_source_grades_json"),
            _column(table, "expected_tools_json"),
            _column(table, "tool_match"),
            _column(table, "expected_hops"),
            _column(table, "conversation_id"),
            _column(table, "turn"),
            _column(table, "turns"),
            _column(table, "poison_marker"),
            _column(table, "allowed_restricted_ids"),
            _column(table, "nuggets_json"),
            strict=True,
        )
    ]


# --- outputs --------------------------------------------------------------------------------


def encode_outputs(run_id: str, outputs: Sequence[CaseOutput]) -> pa.Table:
    answers = [o.answer for o in outputs]
    usages = [None if a is None else a.usage for a in answers]
    return pa.Table.from_arrays(
        [
            _run_ids(run_id, len(outputs)),
            _strings(o.case_id for o in outputs),
            _strings(None if a is None else a.text for a in answers),
            _string_lists([None if a is None else a.citations for a in answers]),
            _chunk_lists([None if a is None else a.retrieved_chunks for a in answers]),
            _chunk_lists([o.retrieved for o in outputs]),
            _strings(o.error for o in outputs),
            pa.array([o.latency_s for o in outputs], pa.float64()),
            _strings(None if a is None else _steps_json(a.steps) for a in answers),
            pa.array([None if u is None else u.input_tokens for u in usages], pa.int64()),
            pa.array([None if u is None else u.output_tokens for u in usages], pa.int64()),
            pa.array([None if u is None else u.cost_usd for u in usages], pa.float64()),
            _no_trials(len(outputs)),
        ],
        schema=OUTPUTS_SCHEMA,
    )


def decode_outputs(table: pa.Table) -> list[CaseOutput]:
    table = conform(table, OUTPUTS_SCHEMA)
    answer_chunks = _decode_chunk_lists(table.column("answer_chunks"))
    retrieved = _decode_chunk_lists(table.column("retrieved"))
    outputs = []
    for i, (
        case_id,
        text,
        citations,
        error,
        latency,
        steps,
        tokens_in,
        tokens_out,
        cost,
    ) in enumerate(
        zip(
            _column(table, "case_id"),
            _column(table, "answer_text"),
            _column(table, "citations"),
            _column(table, "error"),
            _column(table, "latency_s"),
            _column(table, "steps_json"),
            _column(table, "input_tokens"),
            _column(table, "output_tokens"),
            _column(table, "cost_usd"),
            strict=True,
        )
    ):
        answer = None
        if text is not None:
            usage = None
            if tokens_in is not None or tokens_out is not None or cost is not None:
                usage = Usage(tokens_in, tokens_out, cost)
            answer = Answer(
                text,
                answer_chunks[i],
                None if citations is None else tuple(citations),
                None if steps is None else to_steps(json.loads(steps)),
                usage,
            )
        outputs.append(CaseOutput(case_id, answer, retrieved[i], error, latency))
    return outputs


# --- case results ---------------------------------------------------------------------------


def encode_case_results(run_id: str, results: Sequence[MetricResult]) -> pa.Table:
    return pa.Table.from_arrays(
        [
            _run_ids(run_id, len(results)),
            _strings([r.case_id for r in results]),
            _strings([r.metric for r in results]),
            _statuses(results),
            pa.array([r.value for r in results], pa.float64()),
            _strings([r.reason for r in results]),
            _strings([r.judge_raw_json for r in results]),
            _no_trials(len(results)),
        ],
        schema=CASE_RESULTS_SCHEMA,
    )


@functools.cache
def _status_texts() -> pa.Array:
    """Every status's text, in ``Status`` order; built on first use, not at import:
    ``pa.array`` of a list imports pandas (pyarrow looks for its types), 0.4 s of CPU
    that a process importing the store without writing it (the command) never needs."""
    return pa.array([s.value for s in Status], pa.string())


def _statuses(results: Sequence[MetricResult]) -> pa.Array:
    """The status column, from each status's index among ``_status_texts()``: a dict
    lookup a row, where reading ``Status.value`` (or converting the enum) costs
    several times more on Python 3.11."""
    try:
        codes = [_STATUS_CODES[r.status] for r in results]
    except KeyError:
        unknown = {str(r.status) for r in results} - _STATUS_BY_VALUE.keys()
        raise ValueError(
            f"unknown metric result status(es): {', '.join(sorted(unknown))}"
        ) from None
    return _status_texts().take(pa.array(codes, pa.int8()))


class UnknownStatus(UserError, ValueError):
    """A stored result status ragproof does not know: a file written by another version
    of ragproof, or damaged. ``path`` and ``row`` (1-based) say where, once known."""

    def __init__(
        self,
        status: Any,
        *,
        metric: str,
        case_id: str | None = None,
        path: str | None = None,
        row: int | None = None,
    ) -> None:
        self.status, self.metric, self.case_id = status, metric, case_id
        self.path, self.row = path, row
        where = ("" if path is None else f"{path}: ") + ("" if row is None else f"row {row}: ")
        which = f"metric {metric!r}" if case_id is None else f"case {case_id!r} metric {metric!r}"
        super().__init__(
            f"{where}{which}: unknown status {status!r} (ragproof knows "
            f"{', '.join(_STATUS_BY_VALUE)}; a store written by another version of ragproof?)"
        )

    def located(self, path: str, first_row: int = 0) -> UnknownStatus:
        """The same error in file ``path``, whose decoded rows started at ``first_row``."""
        row = None if self.row is None else first_row + self.row
        return UnknownStatus(
            self.status, metric=self.metric, case_id=self.case_id, path=path, row=row
        )


def decode_case_results(table: pa.Table) -> list[MetricResult]:
    table = conform(table, CASE_RESULTS_SCHEMA)
    status_of = _STATUS_BY_VALUE.__getitem__
    statuses = _column(table, "status")
    try:
        return [
            MetricResult(case_id, metric, status_of(status), value, reason, raw)
            for case_id, metric, status, value, reason, raw in zip(
                _column(table, "case_id"),
                _column(table, "metric"),
                statuses,
                _column(table, "value"),
                _column(table, "reason"),
                _column(table, "judge_raw_json"),
                strict=True,
            )
        ]
    except KeyError:
        # Only status_of raises it; found again here so the happy path pays nothing.
        index = next(i for i, s in enumerate(statuses) if s not in _STATUS_BY_VALUE)
        raise UnknownStatus(
            statuses[index],
            metric=table["metric"][index].as_py(),
            case_id=table["case_id"][index].as_py(),
            row=index + 1,
        ) from None


# --- metric summaries -----------------------------------------------------------------------


def _summary_getter(summary: Any) -> Callable[[str], Any]:
    if isinstance(summary, Mapping):
        return summary.__getitem__
    return lambda name: getattr(summary, name)


# The statistics and counts every summary has, then those only some runs have (the
# trials' statistics of CONTRACT section 27), which a summary may leave out.
_SUMMARY_REQUIRED = tables.METRIC_SUMMARIES.names[1 : 1 + 4 + len(tables.SUMMARY_COUNTS)]
_SUMMARY_OPTIONAL = SUMMARY_FIELDS[len(_SUMMARY_REQUIRED) :]
_REQUIRED = frozenset(_SUMMARY_REQUIRED)


def encode_summaries(run_id: str, summaries: Sequence[Any]) -> pa.Table:
    """Accepts ``MetricSummary`` objects or any objects/dicts with ``SUMMARY_FIELDS``."""
    rows = []
    for summary in summaries:
        get = _summary_getter(summary)
        try:
            row = {name: get(name) for name in _SUMMARY_REQUIRED}
        except (KeyError, AttributeError) as exc:
            raise ValueError(f"metric summary {summary!r} lacks field {exc}") from exc
        for name in _SUMMARY_OPTIONAL:
            try:
                row[name] = get(name)
            except (KeyError, AttributeError):
                row[name] = None
        for name in tables.SUMMARY_COUNTS:
            if not isinstance(row[name], int) or row[name] < 0:
                raise ValueError(f"{row['metric']}: {name} must be a count, got {row[name]!r}")
        rows.append(row)
    columns = {name: [row[name] for row in rows] for name in SUMMARY_FIELDS}
    return pa.Table.from_arrays(
        [
            _run_ids(run_id, len(rows)),
            *(
                pa.array(columns[f.name], f.type)
                for f in METRIC_SUMMARIES_SCHEMA
                if f.name != "run_id"
            ),
        ],
        schema=METRIC_SUMMARIES_SCHEMA,
    )


def decode_summaries(table: pa.Table) -> list[dict[str, Any]]:
    """Each summary's fields; those only some runs have (section 27) only when set, so a
    run without repeats reads as it did before they existed."""
    table = conform(table, METRIC_SUMMARIES_SCHEMA)
    return [
        {name: value for name, value in row.items() if value is not None or name in _REQUIRED}
        for row in table.select(list(SUMMARY_FIELDS)).to_pylist()
    ]


# --- run record -----------------------------------------------------------------------------

# CONTRACT section 29: every status a run is shown with, in one list (this order). A run
# records one of ``RECORDED_STATUSES``; ``running`` (its heartbeat is fresh) and
# ``damaged`` (its files cannot be read) are found when it is read, never written.
RUN_STATUSES: tuple[str, ...] = (
    "running",
    "completed",
    "aborted:budget",
    "aborted:judge",
    "interrupted",
    "failed",
    "damaged",
)
FOUND_STATUSES: tuple[str, ...] = ("running", "damaged")
RECORDED_STATUSES: tuple[str, ...] = tuple(s for s in RUN_STATUSES if s not in FOUND_STATUSES)


@dataclass(frozen=True)
class RunRecord:
    """One finished run: the row of ``run.parquet`` and of the ``runs`` view.

    ``started_at``/``finished_at`` must be timezone-aware (stored as UTC, read
    back in UTC): a naive local time would silently shift by hours.
    ``prompt_hashes`` maps prompt name to sha256; ``config_json`` is the run
    config as JSON text.
    """

    run_id: str
    dataset: str
    adapter: str
    status: str
    started_at: datetime
    finished_at: datetime | None  # None: the run has no record yet (running, or killed)
    judge_model: str | None
    prompt_hashes: dict[str, str]
    config_json: str
    cost_usd: float | None  # None: a judge nothing priced (judge/pricing.py)
    cases: int
    case_failures: int
    judge_requests: int
    cache_hits: int
    judge_mode: str | None = None
    judge_repairs: int = 0
    judge_errors: int = 0
    judge_input_tokens: int = 0
    judge_output_tokens: int = 0
    # One row per (metric, model): requests, cache_hits, judge_errors, tokens, cost_usd.
    judge_usage: list[dict[str, Any]] = dc_field(default_factory=list)
    # Per metric, for a jury: {"alpha", "level", "cases", "models"} (calibration.jury_agreement).
    judge_agreement: dict[str, Any] = dc_field(default_factory=dict)
    # CONTRACT section 24: the first judge error's reason (for a run aborted:judge, why
    # the judge was unavailable), and the reply format asked for.
    judge_first_error: str | None = None
    judge_response_format: str | None = None
    # The adapter's calls, by method (``retrieve``, ``answer``): what the run paid its pipeline.
    adapter_calls: dict[str, int] = dc_field(default_factory=dict)
    # The run's identity (CONTRACT section 25, config/identity.py).
    name: str | None = None
    tags: dict[str, str] = dc_field(default_factory=dict)
    config_digest: str | None = None
    # CONTRACT section 28: strings in which the run masked a secret value.
    secrets_masked: int = 0
    # The catalog's word, never stored in the record: the file found damaged.
    damaged_file: str | None = None

    @property
    def judge_models(self) -> list[str]:
        """Every model that judged the run: one, or a jury's (sorted, as in ``judge_model``)."""
        return [] if not self.judge_model else self.judge_model.split(",")

    def values(self) -> dict[str, Any]:
        """Every column of the run table (``tables.RUN``), in its order, keyed by the
        attribute that holds it (``judge_usage`` for ``judge_usage_json``): what a view of
        the record starts from, so a column declared once reaches each of them."""
        return {c.attribute: getattr(self, c.attribute) for c in tables.RUN.columns}

    def matches(self, name: str | None = None, tags: Mapping[str, str] | None = None) -> bool:
        """Whether the run has this name (when given) and every one of these tags
        (``runs --name``, ``runs --tag``)."""
        if name is not None and self.name != name:
            return False
        return all(self.tags.get(key) == value for key, value in (tags or {}).items())

    def judge_activity(self) -> dict[str, Any]:
        """The ``judge`` object of ``run --json`` and ``show --json`` (CONTRACT sections 9, 15)."""
        return {
            "model": self.judge_model,
            "models": self.judge_models,
            "mode": self.judge_mode,
            "requests": self.judge_requests,
            "repairs": self.judge_repairs,
            "cache_hits": self.cache_hits,
            "judge_errors": self.judge_errors,
            "input_tokens": self.judge_input_tokens,
            "output_tokens": self.judge_output_tokens,
            "cost_usd": self.cost_usd,
            "usage": [dict(row) for row in self.judge_usage],
            "agreement": dict(self.judge_agreement),
            "first_error": self.judge_first_error,
            "response_format": self.judge_response_format,
        }

    def __post_init__(self) -> None:
        if self.status not in RUN_STATUSES:
            raise ValueError(
                f"run {self.run_id}: status must be one of {', '.join(RUN_STATUSES)}, "
                f"got {self.status!r}"
            )
        for name in ("started_at", "finished_at"):
            moment = getattr(self, name)
            if moment is None and name == "finished_at":
                continue
            if not isinstance(moment, datetime) or moment.utcoffset() is None:
                raise ValueError(f"run {self.run_id}: {name} must be a timezone-aware datetime")


def encode_run(record: RunRecord) -> pa.Table:
    row = {}
    for column in tables.RUN.columns:
        value = getattr(record, column.attribute)
        row[column.name] = value if column.json is None else json.dumps(value, sort_keys=True)
    row["cost_usd"] = None if record.cost_usd is None else float(record.cost_usd)
    return pa.Table.from_pylist([row], schema=RUN_SCHEMA)


# Counters of the run record that read as 0 in files written before their column existed.
_RUN_COUNTERS = tuple(c.name for c in tables.RUN.columns if pa.types.is_integer(c.type))
_RUN_JSON = tuple(c for c in tables.RUN.columns if c.json is not None)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def utc_datetimes(column: pa.ChunkedArray | pa.Array) -> list[datetime | None]:
    """A UTC timestamp column as aware datetimes, exactly: pyarrow's own conversion of a
    zoned timestamp imports pandas (about 0.25 s, the largest part of reading a run
    record in a command that has not imported it)."""
    micros = column.cast(pa.timestamp("us")).cast(pa.int64()).to_pylist()
    return [None if us is None else _EPOCH + timedelta(microseconds=us) for us in micros]


_RUN_TIMESTAMPS = tuple(f.name for f in RUN_SCHEMA if pa.types.is_timestamp(f.type))


def decode_runs(table: pa.Table) -> list[RunRecord]:
    # A file older than the column counted no cost; a NULL in the column is an unknown one.
    cost_recorded = "cost_usd" in table.schema.names
    table = conform(table, RUN_SCHEMA)
    moments = {name: utc_datetimes(table.column(name)) for name in _RUN_TIMESTAMPS}
    table = table.drop_columns(list(_RUN_TIMESTAMPS))
    records = []
    for index, row in enumerate(table.to_pylist()):
        for name, values in moments.items():
            row[name] = values[index]
        if not cost_recorded:
            row["cost_usd"] = 0.0
        for name in _RUN_COUNTERS:
            row[name] = row[name] or 0
        for column in _RUN_JSON:
            row[column.attribute] = json.loads(row.pop(column.name) or column.json)
        records.append(RunRecord(**row))
    return records
