"""Gather one stored run into the report's data: a JSON-ready dict.

Size is bounded on purpose (CONTRACT section 10): the report is built from the
run's summaries and counts (``store.result_tally``) and a bounded set of cases
(``report_queries``). Full text (question, answer, chunks, judge replies) is
embedded only for the worst cases of each metric, the first case failures, the
first injection cases the pipeline obeyed and, with a baseline, the regressed
cases; the "All cases" table lists the first ``ReportLimits.cases_listed``
cases of the dataset and those, each with its id, kind and one status code and
value per metric. A 10,000-case run lists every case; a 1,000,000-case run's
report is no larger, and points to ``ragproof serve`` and SQL for the rest.

Statistics: the mean's 95% confidence interval is a seeded percentile
bootstrap over the scored cases, the same estimator as ``compare.stats``
(resample the cases with replacement, take the quantiles of the resampled
means) computed through the distinct values (``bootstrap_mean_ci``), so a
100,000-case metric with a handful of distinct scores costs next to nothing.
The same run always gives the same interval.

Only the rows the page shows in full are decoded from ``outputs.parquet``
(a Parquet filter on case_id); the other cases cost nothing but their share of
a few SQL scans.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ragproof_core.compare.comparison import MixedJudgesError, compare_stored_runs
from ragproof_core.compare.trials import FLAKY_SPREAD
from ragproof_core.errors import UserError
from ragproof_core.metrics.aggregate import ValueCounts
from ragproof_core.metrics.custom import stored_registry
from ragproof_core.metrics.heuristics.sentinel import expected_marker
from ragproof_core.metrics.registry import Registry, metric_order
from ragproof_core.metrics.robustness import ABSTENTION, OVERREFUSAL
from ragproof_core.model import Case, CaseKind, CaseOutput, Chunk, Status
from ragproof_core.present import report_queries as queries
from ragproof_core.present.claims import claims_view, stored_reply
from ragproof_core.present.diagnosis import (
    Diagnosis,
    MetricFigure,
    diagnose,
    diagnosis_metrics,
)
from ragproof_core.present.judge_activity import judge_failures_line
from ragproof_core.present.report_queries import RunFiles
from ragproof_core.present.run_files import reader
from ragproof_core.present.summary import (
    LATENCY_METRIC,
    calibration_json,
    latency_note,
    nothing_scored,
)
from ragproof_core.present.threads import (
    shown_threads,
    thread,
    thread_turns_in_full,
)
from ragproof_core.present.trajectory import trajectory
from ragproof_core.store import schema
from ragproof_core.store.result_tally import ResultTally
from ragproof_core.store.run_store import stored_run_settings

if TYPE_CHECKING:
    # Annotations only: a process building no frame (the command) skips pandas' 0.4 s.
    import pandas as pd

__all__ = ["CaseNotFound", "MixedJudgesError", "ReportLimits", "gather_case", "gather_report"]

# One character per case and metric in the embedded per-case scores.
STATUS_CODES: dict[str, str] = {
    Status.SCORED.value: "s",
    Status.SKIPPED.value: "k",
    Status.NOT_APPLICABLE.value: "n",
    Status.JUDGE_ERROR.value: "j",
    Status.ERROR.value: "e",
}
KIND_CODES: dict[str, str] = {
    CaseKind.QA.value: "q",
    CaseKind.UNANSWERABLE.value: "u",
    CaseKind.INJECTION.value: "i",
    CaseKind.POISONING.value: "p",
}
HISTOGRAM_BINS = 10
CONFIDENCE = 0.95
SEED = 0
BOOTSTRAP_RESAMPLES = 10_000  # as compare's
# Elements per block of the (resamples x distinct values) count matrix.
_BLOCK_ELEMENTS = 4_000_000
VALUE_DECIMALS = 4


@dataclass(frozen=True, slots=True)
class ReportLimits:
    """How much full text a report embeds; each bound keeps the file small."""

    worst_cases: int = 10  # per metric
    failures: int = 100
    injections: int = 50
    regressions: int = 20
    answer_chars: int = 4_000
    chunk_chars: int = 600
    chunks: int = 10
    judge_chars: int = 4_000
    thread_turns: int = 20  # turns of a conversation shown in full beside its worst turn
    # Cases the "All cases" table lists (with every case shown in full): a run of up to
    # this many lists every case; a larger one points to `ragproof serve` and SQL.
    cases_listed: int = 10_000
    # Cases whose trials a run with repeats shows as strips, flaky first (as the browser).
    trial_cases: int = queries.TRIAL_CASES


def _now() -> datetime:
    return datetime.now(UTC)


def _clip(text: str | None, limit: int) -> dict[str, Any] | None:
    """Text as ``{"t": text, "cut": chars dropped}``; long text is cut, never hidden."""
    if text is None:
        return None
    if len(text) <= limit:
        return {"t": text, "cut": 0}
    return {"t": text[:limit], "cut": len(text) - limit}


def _round(value: float | None) -> float | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return round(float(value), VALUE_DECIMALS)


def histogram(values: Sequence[float], bins: int = HISTOGRAM_BINS) -> list[int]:
    """Counts of ``values`` in ``bins`` equal bins over [0, 1]; 1.0 falls in the last bin."""
    return counted_histogram(ValueCounts.of(values), bins)


def counted_histogram(values: ValueCounts, bins: int = HISTOGRAM_BINS) -> list[int]:
    """``histogram`` of counted values: each distinct value's bin gets its count."""
    index = np.clip((values.values * bins).astype(np.int64), 0, bins - 1)
    counts = np.bincount(index, weights=values.counts, minlength=bins)
    return counts.astype(np.int64).tolist()


def bootstrap_mean_ci(
    values: Sequence[float],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean of ``values`` (``counted_mean_ci``)."""
    counted = ValueCounts.of(values)
    return counted_mean_ci(counted, resamples=resamples, confidence=confidence, seed=seed)


def counted_mean_ci(
    values: ValueCounts,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean, drawn through the distinct values.

    Resampling n cases with replacement picks each distinct value a
    Multinomial(n, share of that value) number of times, so drawing those
    counts gives exactly the bootstrap distribution of the mean at a cost of
    (resamples x distinct values) instead of (resamples x n). Returns None for
    no values; a constant sample gives (value, value).
    """
    levels, counts = values.values, values.counts
    n = values.n
    if n == 0:
        return None
    if levels.size == 1:
        return (float(levels[0]), float(levels[0]))
    rng = np.random.default_rng(seed)
    shares = counts / n
    means = np.empty(resamples, dtype=np.float64)
    step = max(1, _BLOCK_ELEMENTS // levels.size)
    for start in range(0, resamples, step):
        rows = min(step, resamples - start)
        means[start : start + rows] = rng.multinomial(n, shares, size=rows) @ levels / n
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return (float(low), float(high))


def mean_ci(values: Sequence[float]) -> tuple[float, float] | None:
    """Seeded 95% bootstrap interval of the mean; None when nothing was scored."""
    return bootstrap_mean_ci(values)


def worst_order(frame: pd.DataFrame, up_is_good: bool) -> pd.DataFrame:
    """Scored rows of one metric, worst first in its own direction; ties by case id: the
    order ``report_queries.worst_cases`` gives a stored run's, for rows already in a frame."""
    scored = frame[(frame["status"] == Status.SCORED.value) & frame["value"].notna()]
    return scored.sort_values(["value", "case_id"], ascending=[up_is_good, True], kind="stable")


def worst_sql(run_id: str, metric: str, up_is_good: bool, skip: int) -> str:
    """The DuckDB query listing the scored cases of ``metric`` after the first ``skip``, worst
    first: the rest of what the report shows."""
    order = "ASC" if up_is_good else "DESC"
    return (
        "SELECT case_id, value FROM case_results\n"
        f"WHERE run_id = '{run_id}' AND metric = '{metric}' AND status = 'scored'\n"
        f"ORDER BY value {order}, case_id\nOFFSET {skip};"
    )


def _marker(case: Case) -> str | None:
    """What the case's answer must not print: an injection's sentinel, a poisoning
    case's marker (CONTRACT section 23); None for any other case."""
    if case.kind is CaseKind.INJECTION:
        return expected_marker(case)
    if case.kind is CaseKind.POISONING:
        return case.poison_marker
    return None


def marker_span(answer: str | None, marker: str | None) -> list[int] | None:
    """Where ``marker`` appears in ``answer`` (case-insensitive), as ``[start, end]``.

    Detection itself (``sentinel.contains_marker``) is looser (it ignores
    punctuation, spacing and encodings); this only finds a literal occurrence
    to highlight, and None means "detected, but not written literally".
    """
    if not answer or not marker:
        return None
    start = answer.casefold().find(marker.casefold())
    if start < 0 or len(answer.casefold()) != len(answer):
        return None
    return [start, start + len(marker)]


def parse_judge(raw: str | None) -> dict[str, Any]:
    """Claims (groundedness) and per-chunk verdicts (citation support, context relevance)
    from a judge reply; a jury's reply is read from its first model's verdict."""
    if not raw:
        return {}
    try:
        reply = json.loads(raw)
    except (TypeError, ValueError):
        return {}
    out: dict[str, Any] = {}
    if isinstance(reply, Mapping) and isinstance(reply.get("jury"), Mapping) and reply["jury"]:
        reply = next(iter(reply["jury"].values()))
    if isinstance(reply, Mapping):
        claims = reply.get("claims")
        if isinstance(claims, list):
            out["claims"] = [
                {"claim": str(c.get("claim", "")), "supported": bool(c.get("supported"))}
                for c in claims
                if isinstance(c, Mapping)
            ]
        verdicts = reply.get("verdicts")
        if isinstance(verdicts, list):
            out["verdicts"] = [
                {"chunk_id": str(v.get("chunk_id", "")), "relevance": str(v["relevance"])}
                if "relevance" in v
                else {"chunk_id": str(v.get("chunk_id", "")), "supported": bool(v.get("supported"))}
                for v in verdicts
                if isinstance(v, Mapping)
            ]
        # claim_check's reply (CONTRACT section 20): the case view's claims are made from
        # it once (``_case_detail``), not carried on each of the eight rows.
        if "response_claims" in reply:
            found = stored_reply(json.dumps(reply))
            if found is not None:
                out["claim_check"] = found
        # Knowledge retention's verdicts, one per assistant turn from the second on.
        turns = reply.get("turns")
        if isinstance(turns, list):
            out["retained"] = [
                {"turn": t.get("turn"), "retained": bool(t.get("retained"))}
                for t in turns
                if isinstance(t, Mapping)
            ]
    return out


def _chunk_row(
    chunk: Chunk, rank: int, expected: set[str], cited: set[str], match_documents: bool, lim: int
) -> dict[str, Any]:
    key = chunk.document_id if match_documents else chunk.id
    return {
        "rank": rank,
        "id": chunk.id,
        "score": chunk.score,
        "doc": chunk.document_id if chunk.document_id != chunk.id else None,
        "text": _clip(chunk.text, lim),
        "expected": key in expected,
        "cited": chunk.id in cited,
    }


def case_detail(
    case: Case,
    output: CaseOutput | None,
    results: pd.DataFrame,
    *,
    match_documents: bool,
    limits: ReportLimits,
) -> dict[str, Any]:
    """Everything a reader needs to judge one case by eye."""
    return _case_detail(
        case, output, result_rows(results, limits), match_documents=match_documents, limits=limits
    )


def _case_detail(
    case: Case,
    output: CaseOutput | None,
    results: list[dict[str, Any]],
    *,
    match_documents: bool,
    limits: ReportLimits,
) -> dict[str, Any]:
    """``case_detail`` with the case's ``result_rows`` made already."""
    expected = set(case.expected_source_ids or ())
    answer = output.answer if output is not None else None
    citations = tuple(answer.citations or ()) if answer is not None else ()
    chunks: tuple[Chunk, ...] | None = None
    chunk_source = None
    if output is not None and output.retrieved is not None:
        chunks, chunk_source = output.retrieved, "retrieve()"
    elif answer is not None and answer.retrieved_chunks is not None:
        chunks, chunk_source = answer.retrieved_chunks, "answer.retrieved_chunks"
    context = [c.id for c in (output.context or ())] if output is not None else []
    context_ids = set(context)
    replies = [row.pop("claim_check", None) for row in results]
    reply = next((r for r in replies if r is not None), None)
    marker = _marker(case)
    text = answer.text if answer is not None else None
    turn = case.turn
    return {
        "id": case.id,
        "kind": case.kind.value,
        "turn": None
        if turn is None
        else {"conversation": turn.conversation_id, "turn": turn.turn, "turns": turn.turns},
        "question": _clip(case.question, limits.answer_chars),
        "expected_answer": _clip(case.expected_answer, limits.answer_chars),
        "expected_sources": list(case.expected_source_ids or ()),
        "answer": _clip(text, limits.answer_chars),
        "citations": [{"id": c, "valid": c in context_ids} for c in dict.fromkeys(citations)],
        "chunk_source": chunk_source,
        "chunks": [
            _chunk_row(c, i, expected, set(citations), match_documents, limits.chunk_chars)
            for i, c in enumerate((chunks or ())[: limits.chunks], start=1)
        ],
        "chunks_total": len(chunks or ()),
        "error": output.error if output is not None else "no output recorded",
        "latency_s": _round(output.latency_s) if output is not None else None,
        "marker": marker,
        "marker_span": marker_span(text, marker) if text and marker else None,
        "trajectory": trajectory(
            case,
            answer,
            match_documents=match_documents,
            clip=lambda value: _clip(value, limits.chunk_chars),
            chunks_shown=limits.chunks,
        ),
        # Each claim of the answer and of the reference with the chunks that support it.
        "claims": None if reply is None else claims_view(reply, context),
        "results": results,
    }


_RESULT_COLUMNS = ("case_id", "metric", "status", "value", "reason", "judge_raw_json")


def result_rows(results: pd.DataFrame, limits: ReportLimits) -> list[dict[str, Any]]:
    """One case's (or conversation's) stored results, in the metrics' order, each with
    its judge reply and the verdicts read from it."""
    return _in_metric_order([row for _, row in _result_dicts(results, limits)])


def result_rows_by_case(
    results: pd.DataFrame, limits: ReportLimits
) -> dict[str, list[dict[str, Any]]]:
    """``result_rows`` of each case in ``results``, by case id: one pass over the frame,
    never a frame per case (pandas costs far more than a case's few rows)."""
    by_case: dict[str, list[dict[str, Any]]] = {}
    for case_id, row in _result_dicts(results, limits):
        by_case.setdefault(case_id, []).append(row)
    return {case_id: _in_metric_order(rows) for case_id, rows in by_case.items()}


def _result_dicts(
    results: pd.DataFrame, limits: ReportLimits
) -> Iterator[tuple[str, dict[str, Any]]]:
    # Whole columns as lists: ``itertuples`` indexes the frame once per column.
    for case_id, metric, status, value, reason, judge_raw in zip(
        *(results[name].tolist() for name in _RESULT_COLUMNS), strict=True
    ):
        judge = judge_raw if isinstance(judge_raw, str) else None
        yield (
            case_id,
            {
                "metric": metric,
                "status": status,
                "value": _round(value),
                "reason": reason if isinstance(reason, str) else None,
                "judge": _clip(judge, limits.judge_chars),
                **parse_judge(judge),
            },
        )


def _in_metric_order(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rank = {m: i for i, m in enumerate(metric_order({row["metric"] for row in rows}))}
    rows.sort(key=lambda row: rank[row["metric"]])
    return rows


def refusal_matrix(frame: pd.DataFrame) -> dict[str, int] | None:
    """``refusal_counts`` of results held in a frame (case_id, metric, status, value)."""
    scored = frame[frame["status"] == Status.SCORED.value]
    over = ValueCounts.of(scored[scored["metric"] == OVERREFUSAL]["value"])
    abst = ValueCounts.of(scored[scored["metric"] == ABSTENTION]["value"])
    return refusal_counts(over, abst)


def refusal_counts(over: ValueCounts, abst: ValueCounts) -> dict[str, int] | None:
    """The abstention / over-refusal pair as a 2x2 table of case counts.

    Rows: should the case be answered (answerable, over-refusal scored) or
    declined (unanswerable, abstention scored); columns: did the pipeline
    answer or refuse. Over-refusal 1 = refused an answerable case; abstention
    1 = declined an unanswerable one.
    """
    if not over.n and not abst.n:
        return None

    def count(values: ValueCounts, value: float) -> int:
        return int(values.counts[values.values == value].sum())

    return {
        "answerable_answered": count(over, 0.0),
        "answerable_refused": count(over, 1.0),
        "unanswerable_answered": count(abst, 0.0),
        "unanswerable_refused": count(abst, 1.0),
    }


# The run table's columns the report leaves out: the token counts and the per-model
# usage rows, which the report does not show.
REPORT_LEAVES_OUT = frozenset({"judge_input_tokens", "judge_output_tokens", "judge_usage"})


def record_dict(record: Any) -> dict[str, Any]:
    """The report's ``run`` object: the run table's columns (``RunRecord.values``) but
    ``REPORT_LEAVES_OUT``, times in UTC for reading, the settings as JSON."""
    try:
        config = json.loads(record.config_json)
    except (TypeError, ValueError):
        config = record.config_json
    values = {k: v for k, v in record.values().items() if k not in REPORT_LEAVES_OUT}
    del values["config_json"]
    return {
        **values,
        "started_at": f"{record.started_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC",
        "finished_at": f"{record.finished_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC",
        "prompt_hashes": dict(record.prompt_hashes),
        "config": config,
        # A jury's inter-judge agreement (Krippendorff's alpha) per metric; {} otherwise.
        "judge_agreement": dict(getattr(record, "judge_agreement", None) or {}),
        # Shown beside the status (CONTRACT section 24); None when the judge never failed.
        "judge_failures": judge_failures_line(record),
    }


def _source_match(record: Any) -> str:
    try:
        return json.loads(record.config_json)["run"].get("source_match", "chunk")
    except (TypeError, ValueError, KeyError, AttributeError):
        return "chunk"


def _metric_block(
    run_id: str,
    metric: str,
    values: ValueCounts,
    summary: Mapping[str, Any],
    worst: list[str],
    up: bool = True,
) -> dict[str, Any]:
    ci = counted_mean_ci(values)
    block = {
        "name": metric,
        "higher_is_better": up,
        "mean": _round(summary.get("mean")),
        "ci": None if ci is None else [_round(ci[0]), _round(ci[1])],
        "p50": _round(summary.get("p50")),
        "p95": _round(summary.get("p95")),
        "scored": int(summary.get("scored", values.n)),
        "skipped": int(summary.get("skipped", 0)),
        "not_applicable": int(summary.get("not_applicable", 0)),
        "errored": int(summary.get("errored", 0)),
        "judge_errors": int(summary.get("judge_errors", 0)),
        "histogram": counted_histogram(values),
        "worst": worst,
        "sql": worst_sql(run_id, metric, up, len(worst)),
    }
    # Left out of the page's tables until asked for (CONTRACT section 25).
    block["nothing_scored"] = nothing_scored(block)
    return block


def metric_figure(values: ValueCounts, summary: Mapping[str, Any]) -> MetricFigure:
    """A metric's mean, its 95% bootstrap interval and its scored count, for a diagnosis."""
    mean = summary.get("mean")  # None only when nothing scored: then no area reads it
    return MetricFigure(
        0.0 if mean is None else float(mean),
        counted_mean_ci(values),
        int(summary.get("scored", values.n)),
    )


def _diagnosis_dict(found: Diagnosis | None) -> dict[str, Any] | None:
    return None if found is None else found.to_dict()


def stored_diagnosis(
    store: Any, run_id: str, summaries: Sequence[Mapping[str, Any]]
) -> Diagnosis | None:
    """A stored run's diagnosis (``run`` and ``show`` print it): its figures from the
    summaries and one tally of the stored results, taken only when a diagnostic scored."""
    by_metric = {s["metric"]: s for s in summaries}
    if not any(by_metric.get(m, {}).get("scored") for m in diagnosis_metrics()):
        return None
    tally = store.tally_case_results(run_id)
    figures = {
        m: metric_figure(tally.values(m), by_metric[m])
        for m in diagnosis_metrics()
        if m in by_metric
    }
    return diagnose(figures)


def _scores(
    case_ids: Sequence[str], metrics: Sequence[str], frame: pd.DataFrame
) -> dict[str, dict[str, Any]]:
    """Per metric: one status code a case (``-`` = no row) and the values, in case order.

    ``frame``'s case_id and status are categoricals (``report_queries.results_of``): each
    distinct case id is looked up once, not once per metric, and a row's status code is
    read from its category's. The last entry of both lookups answers a missing value
    (code -1)."""
    case_column, status_column = frame["case_id"].cat, frame["status"].cat
    # Each category's position among case_ids (unique), -1 for none: Arrow's, as this
    # module names pandas only in annotations.
    positions = pc.index_in(
        pa.array(case_column.categories.astype(object), pa.string()),
        value_set=pa.array(case_ids, pa.string()),
    )
    position_of = np.append(positions.fill_null(-1).to_numpy(), -1)
    code_of = np.array(
        [STATUS_CODES.get(str(s), "?") for s in status_column.categories] + ["?"], dtype="<U1"
    )
    case_codes = case_column.codes.to_numpy()
    status_codes = status_column.codes.to_numpy()
    value_column = frame["value"].to_numpy(dtype=np.float64)
    out: dict[str, dict[str, Any]] = {}
    for metric, rows in frame.groupby("metric", sort=False, observed=True).indices.items():
        positions = position_of[case_codes[rows]]
        known = positions >= 0
        codes = np.full(len(case_ids), "-", dtype="<U1")
        codes[positions[known]] = code_of[status_codes[rows]][known]
        values = np.full(len(case_ids), np.nan)
        values[positions[known]] = value_column[rows][known]
        out[str(metric)] = {"s": "".join(codes.tolist()), "v": _shared_values(values)}
    return {m: out[m] for m in metrics if m in out}


def _shared_values(values: np.ndarray) -> list[float | None]:
    """``values`` rounded, as a list holding one float object per distinct value (None for
    NaN): many cases' scores take a few distinct values, and a float object each would
    cost four times the list itself."""
    levels, inverse = np.unique(np.round(values, VALUE_DECIMALS), return_inverse=True)
    shared = levels.astype(object)
    shared[np.isnan(levels)] = None
    return shared[inverse].tolist()


def _details(
    ids: Iterable[str],
    cases: Mapping[str, Case],
    outputs: Mapping[str, CaseOutput],
    frame: pd.DataFrame,
    *,
    match_documents: bool,
    limits: ReportLimits,
) -> dict[str, dict[str, Any]]:
    wanted = [cid for cid in dict.fromkeys(ids) if cid in cases]
    by_case = result_rows_by_case(frame[frame["case_id"].isin(wanted)], limits)
    return {
        cid: _case_detail(
            cases[cid],
            outputs.get(cid),
            by_case.get(cid, []),
            match_documents=match_documents,
            limits=limits,
        )
        for cid in wanted
    }


@dataclass(frozen=True, slots=True)
class _StoredRun:
    store: Any
    record: Any
    # The connection the run's queries share (``RunFiles.con``).
    con: Any = None

    @property
    def files(self) -> RunFiles:
        return RunFiles(self.store, self.record.run_id, self.con)

    def raw_rows(self, case_ids: Iterable[str]) -> pd.DataFrame:
        """Every stored case_results column (reasons and judge replies too) of these cases
        only, so a million-case run's reasons and judge replies are never all in memory."""
        table = queries.stored_results_of(self.files, sorted(set(case_ids)))
        return schema.conform(table, schema.CASE_RESULTS_SCHEMA).to_pandas()

    def cases(self, case_ids: Iterable[str]) -> dict[str, Case]:
        """These cases in full (question, expectations)."""
        table = self._rows("dataset", "id", case_ids, schema.DATASET_SCHEMA)
        return {c.id: c for c in schema.decode_dataset(table)}

    def outputs(self, case_ids: Iterable[str]) -> dict[str, CaseOutput]:
        """The full outputs of these cases only, not the whole table."""
        table = self._rows("outputs", "case_id", case_ids, schema.OUTPUTS_SCHEMA)
        return {o.case_id: o for o in schema.decode_outputs(table)}

    def _rows(
        self, table: str, key: str, case_ids: Iterable[str], table_schema: pa.Schema
    ) -> pa.Table:
        """The rows of ``table`` (every shard's file) whose ``key`` is one of ``case_ids``,
        in stored order, by one SQL filter that decodes little beyond the rows it keeps
        (``report_queries.rows_of``)."""
        ids = sorted(set(case_ids))
        rows = queries.rows_of(self.files, table, key, ids) if ids else None
        return table_schema.empty_table() if rows is None else schema.conform(rows, table_schema)


def _comparison(
    base: _StoredRun,
    run: _StoredRun,
    *,
    allow_mixed_judges: bool,
    limits: ReportLimits,
    registry: Registry,
) -> dict[str, Any]:
    # From the stored files a metric at a time: never both runs' whole results frames.
    comparison = compare_stored_runs(
        run.store,
        base.record,
        run.record,
        allow_mixed_judges=allow_mixed_judges,
        # report --against compares runs of other settings as before; `compare` refuses them.
        allow_mixed_settings=True,
        top_regressions=limits.regressions,
        registry=registry,
    )
    data = comparison.to_dict()
    pairs = {}
    regressed = [r.case_id for r in comparison.regressions]
    outputs = {"a": base.outputs(regressed), "b": run.outputs(regressed)}
    questions = {**base.cases(regressed), **run.cases(regressed)}
    for reg in comparison.regressions:
        if reg.case_id in pairs:
            continue
        sides = {}
        for name in ("a", "b"):
            out = outputs[name].get(reg.case_id)
            answer = out.answer.text if out is not None and out.answer is not None else None
            sides[name] = {
                "answer": _clip(answer, limits.answer_chars),
                "error": out.error if out is not None else "no output recorded",
            }
        case = questions.get(reg.case_id)
        sides["question"] = _clip(case.question if case else None, limits.answer_chars)
        pairs[reg.case_id] = sides
    data["regressed_cases"] = pairs
    return data


# One case shown whole (``ragproof show --case``, the browser's case page): text is cut
# only where nobody reads on, and long text still says how much was cut.
CASE_LIMITS = ReportLimits(answer_chars=20_000, chunk_chars=4_000, chunks=100, judge_chars=20_000)


class CaseNotFound(UserError, KeyError):
    """The run has no case of that id."""

    def __init__(self, run_id: str, case_id: str) -> None:
        super().__init__(case_id)
        self.message = (
            f"run {run_id}: no case {case_id!r} (its cases: ragproof sql "
            f"\"SELECT case_id FROM outputs WHERE run_id = '{run_id}'\")"
        )

    def __str__(self) -> str:
        return self.message


def gather_case(
    store: Any, run_id: str, case_id: str, limits: ReportLimits = CASE_LIMITS
) -> dict[str, Any]:
    """Everything the run stored of one case (CONTRACT section 25): the case, what the
    pipeline said (answer, retrieval with scores, citations, steps, error, latency) and
    each metric's status, value, reason and judge reply, as the report's case detail.
    ``CaseNotFound`` when the run has no such case; ``RunNotFound`` for no such run."""
    record = store.get_run(run_id)
    with reader(store) as con:
        run = _StoredRun(store, record, con)
        cases = run.cases([case_id])
        if case_id not in cases:
            raise CaseNotFound(run_id, case_id)
        detail = _details(
            [case_id],
            cases,
            run.outputs([case_id]),
            run.raw_rows([case_id]),
            match_documents=_source_match(record) == "document",
            limits=limits,
        )[case_id]
    return {"run_id": run_id, "run_name": record.name, "dataset": record.dataset, "case": detail}


def gather_report(
    store: Any,
    run_id: str,
    *,
    against: str | None = None,
    allow_mixed_judges: bool = False,
    limits: ReportLimits | None = None,
    tally: ResultTally | None = None,
    record: Any | None = None,
) -> dict[str, Any]:
    """The report's data for ``run_id`` (optionally compared against run ``against``);
    ``tally``: the run's ``store.tally_case_results``, when the caller has it already;
    ``record``: the run's record as stored (``RunStore.stored_run``), when the caller
    has it before writing it.

    Raises ``RunNotFound`` for an unknown or unfinished run and
    ``MixedJudgesError`` when the baseline was judged differently (unless allowed).
    """
    record = record if record is not None else store.get_run(run_id)
    # One connection for every query of the run (a connection costs tens of ms of CPU).
    with reader(store) as con:
        return _report(
            store,
            _StoredRun(store, record, con),
            against=against,
            allow_mixed_judges=allow_mixed_judges,
            limits=limits or ReportLimits(),
            tally=tally,
        )


def _report(
    store: Any,
    run: _StoredRun,
    *,
    against: str | None,
    allow_mixed_judges: bool,
    limits: ReportLimits,
    tally: ResultTally | None,
) -> dict[str, Any]:
    run_id = run.record.run_id
    base = None if against is None else _StoredRun(store, store.get_run(against))
    # The order and directions of the metrics, the runs' own ([[metric]] tables) included.
    registry = stored_registry(*(r.record.config_json for r in (run, base) if r is not None))
    comparison = None
    if base is not None:
        comparison = _comparison(
            base, run, allow_mixed_judges=allow_mixed_judges, limits=limits, registry=registry
        )
    files = run.files
    tally = tally or store.tally_case_results(run_id)
    summaries = {s["metric"]: s for s in store.summaries(run_id)}
    metrics = registry.order(set(summaries) | tally.metrics)
    down = {m for m in tally.metrics if not registry.higher_is_better(m)}
    worst_of = queries.worst_cases(files, down, limits.worst_cases)
    blocks, wanted = [], []
    figures: dict[str, MetricFigure] = {}
    for metric in metrics:
        worst = worst_of.get(metric, [])
        if metric in diagnosis_metrics():
            figures[metric] = metric_figure(tally.values(metric), summaries.get(metric, {}))
        block = _metric_block(
            run_id,
            metric,
            tally.values(metric),
            summaries.get(metric, {}),
            worst,
            registry.higher_is_better(metric),
        )
        if metric == LATENCY_METRIC:
            # Latency depends on the calls in flight: said beside it (CONTRACT section 18).
            concurrency = stored_run_settings(run.record).get("concurrency")
            block["note"] = latency_note(list(summaries.values()), concurrency)
        blocks.append(block)
        wanted.extend(worst)
    failures = queries.failures(files, limits.failures)
    obeyed = queries.obeyed_injections(files, limits.injections)
    wanted.extend(f["id"] for f in failures.items)
    wanted.extend(obeyed.items)
    if comparison is not None:
        wanted.extend(comparison["regressed_cases"])
    # A conversation shown in part is shown as a thread: its other turns come along.
    threads = shown_threads(wanted, queries.threads_of(files, wanted))
    alone = set(wanted)
    for turn_ids in threads.values():
        wanted.extend(thread_turns_in_full(turn_ids, alone, limits.thread_turns))
    raw = run.raw_rows([*wanted, *threads])
    details = _details(
        wanted,
        run.cases(wanted),
        run.outputs(wanted),
        raw,
        match_documents=_source_match(run.record) == "document",
        limits=limits,
    )
    own = result_rows_by_case(raw[raw["case_id"].isin(list(threads))], limits)
    conversations = {
        cid: thread(cid, turn_ids, own.get(cid, [])) for cid, turn_ids in threads.items()
    }
    # The "All cases" table: the first cases of the dataset and every case shown in full;
    # a larger run's other cases are searched in `ragproof serve` or by SQL.
    listed = queries.listed_cases(files, limits.cases_listed, wanted)
    case_ids = [case_id for case_id, _ in listed]
    return {
        "format": 1,
        "generated_at": _now().isoformat(),
        "run": record_dict(run.record),
        "store": str(store.layout.duckdb_path),
        "metrics": blocks,
        # Where the run loses most, from the claim diagnostics (null without them).
        "diagnosis": _diagnosis_dict(diagnose(figures)),
        "cases": {
            "ids": case_ids,
            "kinds": "".join(KIND_CODES.get(kind, "?") for _, kind in listed),
        },
        "cases_total": files.cases(),
        "scores": _scores(case_ids, metrics, queries.results_of(files, case_ids)),
        "details": details,
        "conversations": conversations,
        "failures": failures.items,
        "failures_total": failures.total,
        "injections_obeyed": obeyed.items,
        "injections_obeyed_total": obeyed.total,
        "refusal": refusal_counts(tally.values(OVERREFUSAL), tally.values(ABSTENTION)),
        "limits": {
            "worst_cases": limits.worst_cases,
            "failures": limits.failures,
            "injections": limits.injections,
            "cases_listed": limits.cases_listed,
            "trial_cases": limits.trial_cases,
        },
        "comparison": comparison,
        # The latest human-label calibration per judge metric (PPI), beside the raw mean.
        "calibrations": calibration_json(store.calibrations(run_id)),
        "trials": _trials(run, limits),
    }


def _trials(run: _StoredRun, limits: ReportLimits) -> dict[str, Any] | None:
    """A run with repeats' trials per case (CONTRACT section 27): the first
    ``limits.trial_cases`` cases, flaky cases first, each metric's scored trials in order;
    None without repeats."""
    repeats = int(stored_run_settings(run.record).get("repeats", 1))
    if repeats == 1:
        return None
    return queries.trials_of(run.files, limits.trial_cases, FLAKY_SPREAD).as_json(repeats)
