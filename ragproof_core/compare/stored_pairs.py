"""The pairing of two stored runs, read from their ``case_results`` Parquet files by
DuckDB a metric at a time.

A million-case run has some twenty million result rows: as a pandas frame of
strings that is gigabytes per run, and a comparison holds two. Here DuckDB
scans the files for one metric (three columns of a million rows), joins the
two runs on the case id and hands Python two float arrays and the paired
case ids as Arrow; the next metric replaces them. The figures are the ones
``pairs.FramePairing`` gives for the same rows (pinned by
tests/core/compare/test_stored_pairs.py): the same counts, transitions and
values, the case ids in the same (code point) order.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import duckdb
import numpy as np

from ragproof_core.compare.pairs import (
    MetricPairs,
    duplicate_result,
    transition_counts,
)
from ragproof_core.model import Status
from ragproof_core.store.file_sql import file_reader
from ragproof_core.store.run_store import RunStore

_METRICS = "SELECT DISTINCT metric FROM read_parquet($files, union_by_name = true)"

# One metric of one run, kept while the metric is compared.
_SIDE = """
CREATE OR REPLACE TEMP TABLE {side} AS
SELECT CAST(case_id AS VARCHAR) AS case_id, CAST(status AS VARCHAR) AS status,
       CAST(value AS DOUBLE) AS value
FROM read_parquet($files, union_by_name = true)
WHERE metric = $metric
"""

_DUPLICATE = """
SELECT case_id FROM {side} GROUP BY case_id HAVING count(*) > 1 ORDER BY case_id LIMIT 1
"""

# As pandas reads them: a NaN value is no value.
_SCORED = f"status = '{Status.SCORED.value}' AND value IS NOT NULL AND NOT isnan(value)"

# A run with repeats (CONTRACT section 27): one row per case, its mean over its scored
# trials, scored when any trial is, else the first of its trials' statuses in code
# point order (``pairs._case_means``).
_SIDE_TRIALS = f"""
CREATE OR REPLACE TEMP TABLE {{side}} AS
SELECT CAST(case_id AS VARCHAR) AS case_id,
       CASE WHEN count(*) FILTER (WHERE {_SCORED}) > 0 THEN '{Status.SCORED.value}'
            ELSE CAST(min(status) AS VARCHAR) END AS status,
       avg(CAST(value AS DOUBLE)) FILTER (WHERE {_SCORED}) AS value,
       count(*) AS trials
FROM read_parquet($files, union_by_name = true)
WHERE metric = $metric
GROUP BY case_id
"""

_TOO_MANY_TRIALS = """
SELECT case_id FROM {side} WHERE trials > $trials ORDER BY case_id LIMIT 1
"""

_COUNTS = f"""
SELECT (SELECT count(*) FROM side_a WHERE {_SCORED}),
       (SELECT count(*) FROM side_b WHERE {_SCORED})
"""

_TRANSITIONS = """
SELECT a.status, b.status, count(*)
FROM side_a AS a JOIN side_b AS b USING (case_id)
WHERE a.status <> b.status
GROUP BY ALL
"""

_PAIRS = f"""
SELECT case_id, a.value AS xa, b.value AS xb
FROM (SELECT case_id, value FROM side_a WHERE {_SCORED}) AS a
JOIN (SELECT case_id, value FROM side_b WHERE {_SCORED}) AS b USING (case_id)
ORDER BY case_id
"""


class StoredPairing:
    """The pairing of runs ``run_a`` and ``run_b`` of one store, over one connection."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        files_a: list[str],
        files_b: list[str],
        run_ids: tuple[str, str],
        trials: tuple[int, int] = (1, 1),
    ) -> None:
        self._con = con
        self._files = {"side_a": files_a, "side_b": files_b}
        self._run_ids = dict(zip(("side_a", "side_b"), run_ids, strict=True))
        # Each run's trials per case: a run with repeats is paired by its per-case means.
        self._trials = dict(zip(("side_a", "side_b"), trials, strict=True))
        self.metrics_a = self._metrics(files_a)
        self.metrics_b = self._metrics(files_b)

    def _metrics(self, files: list[str]) -> frozenset[str]:
        rows = self._con.execute(_METRICS, {"files": files}).fetchall()
        return frozenset(str(metric) for (metric,) in rows)

    def _load(self, side: str, metric: str) -> None:
        trials = self._trials[side]
        params = {"files": self._files[side], "metric": metric}
        if trials == 1:
            self._con.execute(_SIDE.format(side=side), params)
            duplicate = self._con.execute(_DUPLICATE.format(side=side)).fetchone()
        else:
            self._con.execute(_SIDE_TRIALS.format(side=side), params)
            found = _TOO_MANY_TRIALS.format(side=side)
            duplicate = self._con.execute(found, {"trials": trials}).fetchone()
        if duplicate is not None:
            raise duplicate_result(self._run_ids[side], duplicate[0], metric)

    def pairs(self, metric: str) -> MetricPairs:
        self._load("side_a", metric)
        self._load("side_b", metric)
        scored_a, scored_b = self._con.execute(_COUNTS).fetchone()
        transitions = transition_counts(self._con.execute(_TRANSITIONS).fetchall())
        paired = self._con.sql(_PAIRS).to_arrow_table()
        return MetricPairs(
            scored_a=int(scored_a),
            scored_b=int(scored_b),
            transitions=transitions,
            case_ids=paired["case_id"].combine_chunks(),
            xa=paired["xa"].to_numpy().astype(np.float64, copy=False),
            xb=paired["xb"].to_numpy().astype(np.float64, copy=False),
        )


@contextmanager
def stored_pairing(
    store: RunStore, run_a: str, run_b: str, trials: tuple[int, int] = (1, 1)
) -> Iterator[StoredPairing]:
    """The pairing of two finished runs of ``store`` (their ``case_results`` files), each
    with its trials per case (``run.repeats``)."""
    files_a, files_b = store.case_result_files(run_a), store.case_result_files(run_b)
    with file_reader(store.layout) as con:
        yield StoredPairing(con, files_a, files_b, (run_a, run_b), trials)
