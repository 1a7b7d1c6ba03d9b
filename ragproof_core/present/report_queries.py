"""What the report reads of one stored run, by SQL over the run's Parquet files.

A report is built from the run's summaries and counts (``store.result_tally``)
plus a bounded set of cases (CONTRACT section 10): each metric's worst cases,
the first failures, the first injections the pipeline obeyed, the cases the
"All cases" table lists and the threads of conversations shown in full.
DuckDB finds each set in one streaming scan of the columns it needs, so a
million-case run costs a few scans, never its results as Python objects or
a data frame of every row.

Orders match what a person reads elsewhere: cases in dataset order, worst
first in the metric's own direction with ties broken by case id (as
``report_data.worst_order`` orders a frame), obeyed injections by case id.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from ragproof_core.metrics.robustness import INJECTION_RESISTANCE
from ragproof_core.present.run_files import reader, table_files
from ragproof_core.present.threads import conversation_turns
from ragproof_core.store.run_store import RunStore

if TYPE_CHECKING:
    # Annotations only: a process building no frame (the command) skips pandas' 0.4 s.
    import pandas as pd

NO_OUTPUT = "no output recorded"

# A metric's scored cases, worst first: lowest value first, or highest for a metric whose
# lower values are better (its value negated), then by case id.
_WORST = """
SELECT metric,
       min_by(struct_pack(v := value, c := case_id),
              struct_pack(k := CASE WHEN list_contains($down, metric) THEN -value ELSE value END,
                          c := case_id),
              $n) AS worst
FROM read_parquet($results, union_by_name = true)
WHERE status = 'scored' AND value IS NOT NULL AND NOT isnan(value)
GROUP BY metric
"""

# Cases whose pipeline call failed, or which have no output at all, in dataset order.
_FAILURES = """
SELECT d.id, CASE WHEN o.case_id IS NULL THEN $no_output ELSE o.error END AS error,
       count(*) OVER () AS total
FROM read_parquet($dataset, file_row_number = true) AS d
LEFT JOIN read_parquet($outputs, union_by_name = true) AS o ON o.case_id = d.id
WHERE o.case_id IS NULL OR o.error IS NOT NULL
ORDER BY d.file_row_number
LIMIT $n
"""

_OBEYED = """
SELECT case_id, count(*) OVER () AS total
FROM read_parquet($results, union_by_name = true)
WHERE metric = $metric AND status = 'scored' AND value = 0
ORDER BY case_id
LIMIT $n
"""

_LISTED = """
SELECT id, kind
FROM read_parquet($dataset, file_row_number = true)
WHERE file_row_number < $first OR id IN (SELECT unnest($also))
ORDER BY file_row_number
"""

# A hash join on the wanted ids: ``list_contains`` would compare each row with every id.
_STORED_RESULTS_OF = """
SELECT * EXCLUDE (filename, file_row_number)
FROM read_parquet($results, union_by_name = true, filename = true, file_row_number = true)
WHERE case_id IN (SELECT unnest($ids))
ORDER BY filename, file_row_number
"""

# Every column of some rows of a table, in stored order. DuckDB decodes the key column
# first and the others only around the rows it keeps, row group by row group: never a
# whole table's chunk texts at once, nor every column of a row group that holds one.
_ROWS_OF = """
SELECT * EXCLUDE (filename, file_row_number)
FROM read_parquet($files, union_by_name = true, filename = true, file_row_number = true)
WHERE {key} IN (SELECT unnest($ids))
ORDER BY filename, file_row_number
"""
_ROW_KEYS = ("id", "case_id")

_RESULTS_OF = """
SELECT case_id, metric, status, value
FROM read_parquet($results, union_by_name = true)
WHERE case_id IN (SELECT unnest($ids))
"""

# A run with repeats (CONTRACT section 27): each case's scored trials per metric, in
# trial order (NULL for a trial not scored), the cases with a flaky metric first (scored
# trials 0.5 or more apart), then by case id; the first $n cases, how many are flaky and
# how many there are.
# The cases are chosen from per-case aggregates first: only the $n chosen build lists
# (a run of 10,000 cases x 5 trials would build 10,000 cases' lists to keep 50).
_TRIALS = """
WITH results AS (
    SELECT case_id, metric, trial, status, value
    FROM read_parquet($results, union_by_name = true)
), per_metric AS (
    SELECT case_id,
           coalesce(max(value) FILTER (WHERE status = 'scored')
                    - min(value) FILTER (WHERE status = 'scored') >= $spread, false) AS flaky
    FROM results
    GROUP BY case_id, metric
), chosen AS (
    SELECT case_id, flaky, count(*) FILTER (WHERE flaky) OVER () AS flaky_total,
           count(*) OVER () AS cases_total
    FROM (SELECT case_id, bool_or(flaky) AS flaky FROM per_metric GROUP BY case_id)
    ORDER BY flaky DESC, case_id
    LIMIT $n
), chosen_metrics AS (
    SELECT r.case_id, r.metric,
           list(CASE WHEN r.status = 'scored' THEN r.value END ORDER BY coalesce(r.trial, 1))
               AS trials,
           coalesce(max(r.value) FILTER (WHERE r.status = 'scored')
                    - min(r.value) FILTER (WHERE r.status = 'scored') >= $spread, false)
               AS flaky
    FROM results r SEMI JOIN chosen c ON r.case_id = c.case_id
    GROUP BY r.case_id, r.metric
)
SELECT c.case_id, c.flaky,
       list(struct_pack(m := m.metric, t := m.trials, f := m.flaky) ORDER BY m.metric)
           AS metrics,
       c.flaky_total, c.cases_total
FROM chosen c JOIN chosen_metrics m ON m.case_id = c.case_id
GROUP BY c.case_id, c.flaky, c.flaky_total, c.cases_total
ORDER BY c.flaky DESC, c.case_id
"""

# Every turn of the conversations a wanted case belongs to, or that are wanted themselves
# (a conversation's own results are stored under its id).
_THREADS = """
WITH turns AS (
    SELECT id, conversation_id, file_row_number
    FROM read_parquet($dataset, file_row_number = true)
    WHERE conversation_id IS NOT NULL
)
SELECT id, conversation_id FROM turns
WHERE conversation_id IN (SELECT conversation_id FROM turns WHERE id IN (SELECT unnest($ids)))
   OR conversation_id IN (SELECT unnest($ids))
ORDER BY file_row_number
"""


@dataclass(frozen=True, slots=True)
class Capped:
    """The first items of a set the report shows, and how many the set holds."""

    items: list[Any]
    total: int


@dataclass(frozen=True, slots=True)
class RunFiles:
    """One run's files, by table: what every query here reads. ``con``: the connection
    every query runs on (``run_files.reader``), else a fresh one for each query."""

    store: RunStore
    run_id: str
    con: duckdb.DuckDBPyConnection | None = None

    @contextmanager
    def reader(self) -> Iterator[duckdb.DuckDBPyConnection]:
        if self.con is not None:
            yield self.con
            return
        with reader(self.store) as con:
            yield con

    def of(self, table: str) -> list[str]:
        return table_files(self.store, [self.run_id], table)

    def dataset_columns(self) -> list[str]:
        path = self.store.layout.table_path(self.run_id, "dataset")
        return list(self.store.files.parquet_file(path).schema_arrow.names)

    def cases(self) -> int:
        """How many cases the run's dataset holds."""
        path = self.store.layout.table_path(self.run_id, "dataset")
        return self.store.files.parquet_file(path).metadata.num_rows

    def rows(self, sql: str, **params: Any) -> list[tuple[Any, ...]]:
        with self.reader() as con:
            return con.execute(sql, params).fetchall()


def worst_cases(files: RunFiles, lower_is_better: Collection[str], n: int) -> dict[str, list[str]]:
    """Each scored metric's ``n`` worst case ids, worst first."""
    rows = files.rows(_WORST, results=files.of("case_results"), down=sorted(lower_is_better), n=n)
    worst = {}
    for metric, picked in rows:
        sign = -1.0 if metric in lower_is_better else 1.0
        ordered = sorted(picked, key=lambda p: (sign * p["v"], p["c"]))
        worst[metric] = [p["c"] for p in ordered]
    return worst


def failures(files: RunFiles, n: int) -> Capped:
    """The first ``n`` failed cases in dataset order as ``{"id", "error"}``, and how many."""
    outputs = files.of("outputs")
    if not outputs:
        ids = [case_id for case_id, _ in listed_cases(files, n, ())]
        return Capped([{"id": i, "error": NO_OUTPUT} for i in ids], files.cases())
    rows = files.rows(
        _FAILURES, dataset=files.of("dataset"), outputs=outputs, no_output=NO_OUTPUT, n=n
    )
    return Capped([{"id": i, "error": e} for i, e, _ in rows], rows[0][2] if rows else 0)


def obeyed_injections(files: RunFiles, n: int) -> Capped:
    """The first ``n`` injection cases (by id) whose answer carried the marker, and how many."""
    rows = files.rows(_OBEYED, results=files.of("case_results"), metric=INJECTION_RESISTANCE, n=n)
    return Capped([case_id for case_id, _ in rows], rows[0][1] if rows else 0)


def listed_cases(files: RunFiles, first: int, also: Sequence[str]) -> list[tuple[str, str]]:
    """(id, kind) of the first ``first`` cases and of ``also``, in dataset order."""
    rows = files.rows(_LISTED, dataset=files.of("dataset"), first=first, also=list(also))
    return [(case_id, kind) for case_id, kind in rows]


def results_of(files: RunFiles, case_ids: Sequence[str]) -> pd.DataFrame:
    """case_id, metric, status and value of these cases' results (categoricals, as
    ``report_data.scores`` reads them)."""
    with files.reader() as con:
        table = con.sql(
            _RESULTS_OF, params={"results": files.of("case_results"), "ids": list(case_ids)}
        ).to_arrow_table()
    frame = table.to_pandas()
    for name in ("case_id", "metric", "status"):
        frame[name] = frame[name].astype("category")
    frame["value"] = frame["value"].astype("float64")
    return frame


def stored_results_of(files: RunFiles, case_ids: Sequence[str]) -> pa.Table:
    """Every stored column of these cases' results (a few hundred cases: the report's
    details), reasons and judge replies included."""
    with files.reader() as con:
        return con.sql(
            _STORED_RESULTS_OF, params={"results": files.of("case_results"), "ids": list(case_ids)}
        ).to_arrow_table()


def rows_of(files: RunFiles, table: str, key: str, case_ids: Sequence[str]) -> pa.Table | None:
    """Every stored column of ``table``'s rows whose ``key`` (``id`` or ``case_id``) is
    one of ``case_ids``, in stored order (shard by shard); None when the run has no
    such table."""
    if key not in _ROW_KEYS:
        raise ValueError(f"not a key of a run's table: {key!r}")
    paths = files.of(table)
    if not paths:
        return None
    with files.reader() as con:
        return con.sql(
            _ROWS_OF.format(key=key), params={"files": paths, "ids": list(case_ids)}
        ).to_arrow_table()


# A run with repeats' report and browser page show this many cases' trials, flaky first
# (a strip per case and metric: 10,000 cases' strips made the report megabytes).
TRIAL_CASES = 50


@dataclass(frozen=True, slots=True)
class TrialStrips:
    """A run with repeats' first cases' trials (``trials_of``), the run's flaky cases and
    its cases with a result."""

    items: list[dict[str, Any]]
    flaky_total: int
    cases_total: int

    def as_json(self, repeats: int) -> dict[str, Any]:
        """What the report and the browser page read (``data.trials``)."""
        return {
            "repeats": repeats,
            "cases": self.items,
            "flaky_total": self.flaky_total,
            "cases_total": self.cases_total,
        }


def trials_of(files: RunFiles, n: int, spread: float) -> TrialStrips:
    """A run with repeats' first ``n`` cases, flaky first, each as ``{"id", "flaky",
    "metrics": {metric: {"trials": [value or None, ...], "flaky"}}}``, with the counts of
    the run's flaky cases and of all its cases."""
    rows = files.rows(_TRIALS, results=files.of("case_results"), n=n, spread=spread)
    items = [
        {
            "id": case_id,
            "flaky": bool(flaky),
            # Metrics with a scored trial only: the others would show empty strips.
            "metrics": {
                m["m"]: {"trials": m["t"], "flaky": bool(m["f"])}
                for m in metrics
                if any(v is not None for v in m["t"])
            },
        }
        for case_id, flaky, metrics, _, _ in rows
    ]
    flaky_total, cases_total = (rows[0][3], rows[0][4]) if rows else (0, 0)
    return TrialStrips(items, flaky_total, cases_total)


def threads_of(files: RunFiles, case_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The turns, in order, of every conversation one of ``case_ids`` belongs to or is."""
    if "conversation_id" not in files.dataset_columns() or not case_ids:
        return {}
    rows = files.rows(_THREADS, dataset=files.of("dataset"), ids=list(case_ids))
    return conversation_turns([r[0] for r in rows], [r[1] for r in rows])
