"""The evaluation job: every ragproof asset for one run partition (the partitioning
is inferred from the assets)."""

import dagster as dg

evaluate_job = dg.define_asset_job(
    "evaluate",
    selection=dg.AssetSelection.groups("evaluation"),
    description="Evaluate one dataset against one adapter: one run = one partition.",
)
