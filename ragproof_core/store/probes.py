"""The stored result of ``ragproof probe RUN_ID``: one Parquet file per probe under its
run's folder (``runs/<run_id>/calibrations/probes/<id>.parquet``), one row per judge
metric and perturbation, read by the ``probes`` view.

A run's judge can be probed again (a bigger sample, another seed, a new judge
prompt); every probe is kept, and readers take a run's latest (by
``created_at``, then id) as its current one.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ragproof_core.store import tables

if TYPE_CHECKING:
    from ragproof_core.calibration.probe import ProbeResult

PROBES = "probes"
PROBES_SCHEMA = tables.PROBES.schema


def encode_probe(result: ProbeResult, probe_id: str, created_at: datetime) -> pa.Table:
    rows = []
    for row in result.rows:
        interval = row.interval
        rows.append(
            {
                "run_id": result.run_id,
                "probe_id": probe_id,
                "created_at": created_at,
                "judge_model": result.judge_model,
                "metric": row.metric,
                "perturbation": row.perturbation,
                "cases": row.cases,
                "changed": row.changed,
                "share": row.share,
                "ci_low": None if interval is None else interval[0],
                "ci_high": None if interval is None else interval[1],
                "unscored": row.unscored,
                "sample": result.sample,
                "seed": result.seed,
            }
        )
    return pa.Table.from_pylist(rows, schema=PROBES_SCHEMA)


def latest_probe(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of the latest probe among a run's probe rows, in stored order."""
    if not rows:
        return []
    newest = max((r["created_at"], r["probe_id"]) for r in rows)
    return [r for r in rows if (r["created_at"], r["probe_id"]) == newest]
