"""Resources: where the store lives and the thresholds of the asset checks."""

from pathlib import Path

import dagster as dg
from pydantic import Field

from ragproof_core.config import store_root
from ragproof_core.store import RunStore


class StoreResource(dg.ConfigurableResource):
    """The run store. An empty root means RAGPROOF_STORE, read when the run starts."""

    root: str = Field(
        default="",
        description="Store folder or s3://bucket/prefix; empty means $RAGPROOF_STORE or "
        "data/store.",
    )

    def path(self) -> Path | str:
        """A local folder, or an fsspec URL such as ``s3://bucket/prefix``."""
        if not self.root:
            return store_root()
        return self.root if "://" in self.root else Path(self.root)

    def store(self) -> RunStore:
        return RunStore(self.path())


class CheckSettings(dg.ConfigurableResource):
    """Thresholds of the asset checks on a run summary."""

    regression_tolerance: float = Field(
        default=0.02,
        description="A metric fails the regression check only when it got significantly worse "
        "by more than this (absolute, in the metric's own direction).",
    )
    max_failure_share: float = Field(
        default=0.10,
        description="The failure-rate check fails above this share of cases with a case failure "
        "or a judge error.",
    )
