"""One SQL pass over a run's stored case results, for the run's summaries.

The summary, the UI's per-metric distributions, the report's histograms and
intervals, the skip reasons and the failure-rate check need only counts: rows
per (metric, status), per (metric, skip reason), and per (metric, scored
value). A million-case run has twenty-two million result rows but a few
hundred such groups (a metric scores a handful of distinct values; a latency
scores many, still fewer than its cases). DuckDB groups the stored Parquet
files, streaming, and Python sees one row per group, never a row per result.

The figures are the ones the object path (``metrics.aggregate.summarize``)
computes: the scored values are the same floats, counted (``ValueCounts``
gives the same correctly rounded mean and the same nearest-rank
percentiles), counts are counts. A status outside ``Status`` raises
``UnknownStatus`` naming the file, row and case of its first row.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ragproof_core.metrics.aggregate import ValueCounts, summarize, summarize_counted
from ragproof_core.model import Status
from ragproof_core.store.file_sql import file_reader
from ragproof_core.store.layout import StoreLayout
from ragproof_core.store.schema import UnknownStatus

_STATUSES = {status.value: status for status in Status}
_FAILED = (Status.ERROR.value, Status.JUDGE_ERROR.value)

# Scored rows grouped by value, the others by status and (for skips) reason.
_TALLY = """
SELECT metric, status,
       CASE WHEN status = 'scored' THEN value END AS value,
       CASE WHEN status = 'skipped' THEN coalesce(reason, '') END AS reason,
       count(*) AS n
FROM read_parquet($files, union_by_name = true)
GROUP BY ALL
"""

_FAILED_SHARE = """
SELECT count(DISTINCT case_id) FILTER (WHERE list_contains($failed, status)),
       count(DISTINCT case_id)
FROM read_parquet($files, union_by_name = true)
"""


# Where the first row of a status the tally did not know is: the error names it.
_FIRST_WITH = """
SELECT filename, file_row_number, case_id
FROM read_parquet($1, union_by_name = true, filename = true, file_row_number = true)
WHERE metric = $2 AND status = $3
ORDER BY filename, file_row_number
LIMIT 1
"""


@dataclass
class ResultTally:
    """What the summaries need of a run's results (module docstring)."""

    counts: dict[str, Counter[Status]] = field(default_factory=lambda: defaultdict(Counter))
    skip_reasons: Counter[tuple[str, str]] = field(default_factory=Counter)
    scored: dict[str, ValueCounts] = field(default_factory=dict)

    @property
    def metrics(self) -> set[str]:
        """Every metric with at least one row."""
        return set(self.counts)

    def values(self, metric: str) -> ValueCounts:
        """The metric's scored values, counted (empty when nothing scored)."""
        return self.scored.get(metric) or ValueCounts.empty()


def tally_files(layout: StoreLayout, files: Sequence[str]) -> ResultTally:
    """The tally of the ``case_results`` rows stored in ``files`` (paths or URLs)."""
    with file_reader(layout) as con:
        groups = con.sql(_TALLY, params={"files": list(files)}).to_arrow_table()
        try:
            return tally_groups(groups)
        except UnknownStatus as exc:
            found = con.execute(_FIRST_WITH, [list(files), exc.metric, exc.status]).fetchone()
            raise UnknownStatus(
                exc.status, metric=exc.metric, case_id=found[2], path=found[0], row=found[1] + 1
            ) from None


def tally_groups(groups: pa.Table) -> ResultTally:
    """A ``ResultTally`` from grouped rows: columns metric, status, value, reason, n."""
    tally = ResultTally()
    is_scored = pc.equal(groups["status"], Status.SCORED.value)
    others = groups.filter(pc.invert(is_scored)).to_pylist()
    for row in others:
        known = _STATUSES.get(row["status"])
        if known is None:
            raise UnknownStatus(row["status"], metric=row["metric"])
        tally.counts[row["metric"]][known] += row["n"]
        if known is Status.SKIPPED:
            tally.skip_reasons[(row["metric"], row["reason"])] += row["n"]
    scored = groups.filter(is_scored).sort_by([("metric", "ascending"), ("value", "ascending")])
    metric_column = scored["metric"].to_numpy(zero_copy_only=False)
    values = scored["value"].to_numpy(zero_copy_only=False).astype(np.float64)
    counts = scored["n"].to_numpy(zero_copy_only=False).astype(np.int64)
    if not len(metric_column):  # nothing scored (every case failed, skipped, ...)
        return tally
    # Rows of one metric are contiguous after the sort: split where the name changes.
    starts = np.flatnonzero(np.r_[True, metric_column[1:] != metric_column[:-1]])
    for start, stop in zip(starts, np.r_[starts[1:], len(metric_column)], strict=True):
        metric = str(metric_column[start])
        tally.scored[metric] = ValueCounts(values[start:stop], counts[start:stop])
        tally.counts[metric][Status.SCORED] += int(counts[start:stop].sum())
    return tally


# What a shard keeps of its results for the summary: its rows grouped as ``_TALLY``
# groups them. Above this many groups (a latency scored on every case at scale) it
# keeps nothing and the summary groups the stored files itself.
MAX_SHARD_GROUPS = 20_000
_GROUP_KEYS = ["metric", "status", "value", "reason"]
GROUP_SCHEMA = pa.schema(
    [
        ("metric", pa.string()),
        ("status", pa.string()),
        ("value", pa.float64()),
        ("reason", pa.string()),
        ("n", pa.int64()),
    ]
)


def group_results(results: pa.Table) -> pa.Table:
    """``case_results`` rows grouped as ``_TALLY`` groups the stored files (columns
    metric, status, value, reason, n)."""
    status = results["status"]
    value = pc.if_else(
        pc.equal(status, Status.SCORED.value), results["value"], pa.scalar(None, pa.float64())
    )
    reason = pc.if_else(
        pc.equal(status, Status.SKIPPED.value),
        pc.coalesce(results["reason"], pa.scalar("")),
        pa.scalar(None, pa.string()),
    )
    keyed = pa.table(
        {"metric": results["metric"], "status": status, "value": value, "reason": reason}
    )
    grouped = keyed.group_by(_GROUP_KEYS, use_threads=False).aggregate([([], "count_all")])
    return grouped.rename_columns([*_GROUP_KEYS, "n"]).cast(GROUP_SCHEMA)


def merge_groups(groups: Iterable[pa.Table]) -> pa.Table:
    """Grouped rows of several parts added up, as if grouped together."""
    combined = pa.concat_tables([GROUP_SCHEMA.empty_table(), *groups])
    summed = combined.group_by(_GROUP_KEYS, use_threads=False).aggregate([("n", "sum")])
    return summed.rename_columns([*_GROUP_KEYS, "n"]).cast(GROUP_SCHEMA)


def groups_from_columns(columns: dict[str, list]) -> pa.Table:
    """Grouped rows from their stored form (``pa.Table.to_pydict`` of ``group_results``)."""
    return pa.table(columns, schema=GROUP_SCHEMA)


def tally_shard_groups(shard_groups: Sequence[dict[str, list] | None]) -> ResultTally | None:
    """The run's tally from what each shard grouped of its own results; None when a
    shard kept none (too many groups, or a report from before shards kept them)."""
    if any(groups is None for groups in shard_groups):
        return None
    return tally_groups(merge_groups(groups_from_columns(g) for g in shard_groups))


def failed_case_share(layout: StoreLayout, files: Sequence[str]) -> tuple[int, int]:
    """(cases with a case failure or judge error, cases with any result row)."""
    with file_reader(layout) as con:
        failed, cases = con.execute(
            _FAILED_SHARE, {"files": list(files), "failed": list(_FAILED)}
        ).fetchone()
    return int(failed), int(cases)


def summarize_run(
    run_store, run_id: str, metric_names, tally: ResultTally | None = None
) -> tuple[list, ResultTally]:
    """The run's ``MetricSummary`` rows, and the tally they came from (its skip counts by
    (metric, reason), and what the report needs); ``tally``: the run's
    ``tally_case_results`` when the caller has it already (one pass for both)."""
    if tally is not None:
        return summarize_counted(tally.counts, tally.values, metric_names), tally
    try:
        tally = run_store.tally_case_results(run_id)
    except UnknownStatus:
        # The object path's error names the case with the bad status.
        summarize(run_store.iter_case_results(run_id), metric_names)
        raise
    return summarize_counted(tally.counts, tally.values, metric_names), tally
