"""Resources: where the store lives, the judge over its cache, and the thresholds of the
asset checks."""

from dataclasses import replace
from pathlib import Path

import dagster as dg
from pydantic import Field

from ragproof_core.config import store_root
from ragproof_core.interruption import Interruption
from ragproof_core.judge import JudgeSettings, LiteLLMJudge, judge_environment, make_judge
from ragproof_core.masking import Masker
from ragproof_core.run import shard_budget
from ragproof_core.store import RunStore
from ragproof_core.store_health import StoreHealth


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


class JudgeResource(dg.ConfigurableResource):
    """The judge, configured by the environment and the run's ``[judge]`` table, with its
    replies cached in the store's judge cache, keyed by (model, prompt hash, input hash)."""

    store: StoreResource

    def open_judge(
        self,
        *,
        use_cache: bool,
        concurrency: int,
        table: JudgeSettings | None = None,
        shards: int = 1,
        health: StoreHealth | None = None,
        shard: int = 0,
        anchor: float | None = None,
        masker: Masker | None = None,
        interruption: Interruption | None = None,
    ) -> LiteLLMJudge | None:
        """A judge over this store's cache, or None when no judge model is configured.

        ``table``: the run's ``[judge]`` table from its manifest; the environment
        (RAGPROOF_JUDGE_MODE, ...) overrides it. One of ``shards`` shards gets that
        share of the run's budget; shard ``shard`` takes its slots of the run's rate
        limit schedule anchored at ``anchor`` where no slot file is shared.
        ``interruption``: the step's stop on a signal (no request after it).
        """
        env = judge_environment(table or JudgeSettings())
        if shards > 1 and env.max_cost_usd is not None:
            env = replace(env, max_cost_usd=shard_budget(env.max_cost_usd, shards))
        return make_judge(
            env,
            self.store.store().layout.judge_cache_path,
            use_cache=use_cache,
            concurrency=concurrency,
            shards=shards,
            health=health,
            shard=shard,
            anchor=anchor,
            masker=masker,
            interruption=interruption,
        )


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
