"""The IO managers over the run store.

``TableIOManager``: the evaluation's tables (dataset, outputs, case scores)
pass between assets as ``StoredTable`` handles. The step that produces a
table streams it into the store itself (``ragproof_core/store/handles.py``
says why); the IO manager keeps the handle in the run's folder, beside the
rows it names, and gives it to every step downstream, on any machine that
sees the store. Nothing goes through Dagster's own (local-disk) IO storage.

``JudgeIOManager``: owns the judge cache and stores each run's judge ledger.

The design card puts judge calls behind an IO manager that does the caching.
The cache cannot wait for an output to be handed over at the end of a step
(a killed run must keep every verdict already paid for), so the IO manager
hands the evaluation step a judge wired to its cache, the cache commits each
reply as it arrives, and ``handle_output`` stores the run's ledger (model,
prompt hashes, requests, cache hits, cost), which ``load_input`` gives back
to the run summary.
"""

from dataclasses import replace

import dagster as dg

from ragproof_assets.evaluation.resources import StoreResource
from ragproof_core.config.settings import JudgeSettings
from ragproof_core.judge.environment import judge_environment
from ragproof_core.judge.factory import make_judge
from ragproof_core.judge.ledger import JudgeLedger
from ragproof_core.judge.session import LiteLLMJudge
from ragproof_core.run.shards import shard_budget
from ragproof_core.store.handles import StoredTable
from ragproof_core.store_health import StoreHealth

LEDGER = "judge"


def _handle_name(asset_key: dg.AssetKey) -> str:
    """The run document holding an asset's handle (``asset_case_scores``)."""
    return "asset_" + "_".join(asset_key.path)


class TableIOManager(dg.ConfigurableIOManager):
    """Tables in the run store, passed between the evaluation assets as handles."""

    store: StoreResource

    def handle_output(self, context: dg.OutputContext, obj: StoredTable) -> None:
        if not isinstance(obj, StoredTable):
            raise TypeError(f"{context.asset_key.to_user_string()}: expected a StoredTable")
        name = _handle_name(context.asset_key)
        self.store.store().write_document(context.partition_key, name, obj.to_dict())
        context.add_output_metadata(
            {
                "table": obj.table,
                "files": dg.MetadataValue.md("\n".join(f"- `{f}`" for f in obj.files) or "none"),
            }
        )

    def load_input(self, context: dg.InputContext) -> StoredTable:
        name = _handle_name(context.asset_key)
        return StoredTable.from_dict(
            self.store.store().read_document(context.asset_partition_key, name)
        )


class JudgeIOManager(dg.ConfigurableIOManager):
    """Judge replies cached in the run store, keyed by (model, prompt hash, input hash)."""

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
    ) -> LiteLLMJudge | None:
        """A judge over this store's cache, or None when no judge model is configured.

        ``table``: the run's ``[judge]`` table from its manifest; the environment
        (RAGPROOF_JUDGE_MODE, ...) overrides it. One of ``shards`` shards gets that
        share of the run's budget; shard ``shard`` takes its slots of the run's rate
        limit schedule anchored at ``anchor`` where no slot file is shared.
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
        )

    def handle_output(self, context: dg.OutputContext, obj: JudgeLedger) -> None:
        self.store.store().write_document(context.partition_key, LEDGER, obj.to_dict())

    def load_input(self, context: dg.InputContext) -> JudgeLedger:
        data = self.store.store().read_document(context.asset_partition_key, LEDGER)
        return JudgeLedger.from_dict(data)
