"""Each dataset's scores under an asset key of its own, so plots compare like with like.

Every run is a partition of the same assets, so ``run_summary``'s plots put
the runs of every dataset on one axis (a 5-case import beside the demo).
Each finished run therefore also records an observation of
``scores_by_dataset/<dataset>``: the Dagster UI's Plots tab of that asset
shows only that dataset's runs, one point per run, in time order.
"""

from __future__ import annotations

import re

import dagster as dg

from ragproof_core.store import RunRecord

KEY_PREFIX = "scores_by_dataset"


def dataset_scores_key(dataset: str) -> dg.AssetKey:
    """The dataset as the run names it (``data/demo/cases.jsonl``) in asset-key characters."""
    name = re.sub(r"[^A-Za-z0-9_]+", "_", dataset).strip("_")
    return dg.AssetKey([KEY_PREFIX, name or "dataset"])


def mean_metadata(summaries) -> dict[str, dg.MetadataValue]:
    """One numeric entry per scored metric, so Dagster plots each mean across runs."""
    return {
        f"mean/{s.metric}": dg.MetadataValue.float(s.mean) for s in summaries if s.mean is not None
    }


def dataset_scores(record: RunRecord, summaries) -> dg.AssetObservation:
    """The run's means, cases and cost, observed under its dataset's key."""
    metadata: dict[str, object] = {
        "run_id": record.run_id,
        "dataset": record.dataset,
        "adapter": record.adapter,
        "status": record.status,
        "cases": record.cases,
        "case_failures": record.case_failures,
        "cost_usd": dg.MetadataValue.float(record.cost_usd),
        **mean_metadata(summaries),
    }
    return dg.AssetObservation(
        asset_key=dataset_scores_key(record.dataset),
        description=f"Run {record.run_id} of {record.dataset}",
        metadata=metadata,
    )
