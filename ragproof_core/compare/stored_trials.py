"""A stored run's scored trials, grouped by metric and case by DuckDB (``trials.CaseTrials``
per metric), and the statistics of section 27 from them.

The stored ``case_results`` files are grouped by (metric, case) in one SQL pass: a
run of 10,000 cases and 5 trials has 50,000 rows a metric and Python sees 10,000
(one per case), as arrays.
"""

from __future__ import annotations

import numpy as np

from ragproof_core.compare.trials import CaseTrials, TrialStatistics, trial_statistics_by_metric
from ragproof_core.model import Status
from ragproof_core.store.file_sql import file_reader
from ragproof_core.store.run_store import RunStore

# As pandas and compare read them: a NaN value is no value.
_BY_CASE = f"""
SELECT metric, CAST(case_id AS VARCHAR) AS case_id, count(*) AS n, avg(value) AS mean,
       coalesce(var_samp(value), 0) * (count(*) - 1) AS m2,
       min(value) AS low, max(value) AS high,
       count(*) FILTER (WHERE value = 1.0) AS passes,
       bool_and(value = 0.0 OR value = 1.0) AS binary
FROM read_parquet($files, union_by_name = true)
WHERE status = '{Status.SCORED.value}' AND value IS NOT NULL AND NOT isnan(value)
GROUP BY metric, case_id
ORDER BY metric, case_id
"""


def stored_case_trials(store: RunStore, run_id: str) -> dict[str, CaseTrials]:
    """Each metric's scored trials of a stored run, grouped by case (metrics with none
    scored are absent)."""
    with file_reader(store.layout) as con:
        files = {"files": store.case_result_files(run_id)}
        grouped = con.sql(_BY_CASE, params=files).to_arrow_table()
    metrics = grouped.column("metric").to_numpy(zero_copy_only=False)
    if not len(metrics):
        return {}
    starts = np.flatnonzero(np.r_[True, metrics[1:] != metrics[:-1]])
    found = {}
    for start, stop in zip(starts, np.r_[starts[1:], len(metrics)], strict=True):
        rows = grouped.slice(int(start), int(stop - start))

        def floats(name: str, rows=rows) -> np.ndarray:
            return rows.column(name).to_numpy().astype(np.float64)

        def ints(name: str, rows=rows) -> np.ndarray:
            return rows.column(name).to_numpy().astype(np.int64)

        found[str(metrics[start])] = CaseTrials(
            case_ids=rows.column("case_id").combine_chunks(),
            n=ints("n"),
            mean=floats("mean"),
            m2=np.maximum(floats("m2"), 0.0),
            low=floats("low"),
            high=floats("high"),
            passes=ints("passes"),
            binary=bool(rows.column("binary").to_numpy(zero_copy_only=False).all()),
        )
    return found


def stored_trial_statistics(store: RunStore, run_id: str, k: int) -> dict[str, TrialStatistics]:
    """``trials.trial_statistics`` of every metric a stored run scored, pass@k at ``k``."""
    return trial_statistics_by_metric(stored_case_trials(store, run_id), k)
