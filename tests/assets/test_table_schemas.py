"""The column schemas the Dagster UI shows are the store's declared tables."""

from __future__ import annotations

import dagster as dg

from ragproof_assets.definitions import defs
from ragproof_core.store import schema

SHOWN = {
    "eval_dataset": "dataset",
    "adapter_outputs": "outputs",
    "case_scores": "case_results",
    "run_summary": "metric_summaries",
}


def test_each_assets_column_schema_is_its_tables_arrow_schema():
    graph = defs.resolve_asset_graph()
    for asset, table in SHOWN.items():
        metadata = graph.get(dg.AssetKey(asset)).metadata
        shown = metadata["dagster/column_schema"]
        arrow = schema.SCHEMAS[table]
        assert [c.name for c in shown.columns] == arrow.names, asset
        assert [c.constraints.nullable for c in shown.columns] == [f.nullable for f in arrow]
        assert all(c.description for c in shown.columns), asset
