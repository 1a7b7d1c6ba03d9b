"""The asset factory: the evaluation's assets, their job and their resources for one
``EvaluationShape`` (``shape.py``).

ragproof's own code location is the factory applied to the defaults
(``definitions.py``), and a suite in a team's own Dagster project is the same
factory under ``ragproof/<name>/`` (``ragproof_assets.component``): one
evaluation path, which the command line drives too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import dagster as dg

from ragproof_assets.evaluation.assets import eval_dataset_asset
from ragproof_assets.evaluation.config import LaunchForm
from ragproof_assets.evaluation.io_managers import JudgeLedgerIOManager, TableIOManager
from ragproof_assets.evaluation.resources import CheckSettings, JudgeResource, StoreResource
from ragproof_assets.evaluation.shape import EvaluationShape
from ragproof_assets.evaluation.shards import evaluation_assets


@dataclass(frozen=True)
class Evaluation:
    """What the factory made for one shape."""

    shape: EvaluationShape
    assets: tuple[dg.AssetsDefinition, ...]
    job: dg.UnresolvedAssetJobDefinition

    def asset_keys(self) -> list[dg.AssetKey]:
        return [key for asset in self.assets for key in asset.keys]


def build_evaluation(
    shape: EvaluationShape | None = None, launch: LaunchForm | None = None
) -> Evaluation:
    """The assets eval_dataset to run_summary of ``shape`` (None: ragproof's own) and the
    job that runs them, one run partition at a time; ``launch``: the launch form the
    job's Launchpad starts from (a suite's dataset and config), else none."""
    shape = shape or EvaluationShape()
    assets = (eval_dataset_asset(shape), evaluation_assets(shape))
    job = dg.define_asset_job(
        shape.job_name,
        selection=dg.AssetSelection.assets(*(key for asset in assets for key in asset.keys)),
        config=None if launch is None else shape.run_config(launch),
        tags=dict(shape.job_tags) or None,
        description="Evaluate one dataset against one adapter: one run = one partition.",
    )
    return Evaluation(shape, assets, job)


def evaluation_resources(
    shape: EvaluationShape,
    store: StoreResource | None = None,
    checks: CheckSettings | None = None,
) -> dict[str, Any]:
    """The resources the shape's steps ask for, under its resource keys: the store (its
    root; empty means RAGPROOF_STORE), the judge over its cache, the two IO managers
    over it, and the checks' thresholds."""
    store = store or StoreResource()
    keys = shape.resource_keys
    return {
        keys.store: store,
        keys.judge: JudgeResource(store=store),
        keys.ledger: JudgeLedgerIOManager(store=store),
        keys.tables: TableIOManager(store=store),
        keys.checks: checks or CheckSettings(),
    }
