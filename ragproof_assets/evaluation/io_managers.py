"""The IO managers over the run store.

``TableIOManager``: the evaluation's tables (dataset, outputs, case scores)
pass between assets as ``StoredTable`` handles. The step that produces a
table streams it into the store itself (``ragproof_core/store/handles.py``
says why); the IO manager keeps the handle in the run's folder, beside the
rows it names, and gives it to every step downstream, on any machine that
sees the store. Nothing goes through Dagster's own (local-disk) IO storage.

``JudgeLedgerIOManager``: each run's judge ledger (model, prompt hashes,
requests, cache hits, cost), stored by the evaluation step's ``judge_verdicts``
output and given back to the run summary.

The design card puts judge calls behind an IO manager that does the caching.
The cache cannot wait for an output to be handed over at the end of a step
(a killed run must keep every verdict already paid for), so the caching is the
judge's own: the ``JudgeResource`` (``resources.py``) hands the evaluation step
a judge wired to the store's judge cache, which commits each reply as it
arrives; what the judge did is the ledger this IO manager stores.
"""

import dagster as dg

from ragproof_assets.evaluation.resources import StoreResource
from ragproof_core.judge import JudgeLedger
from ragproof_core.store import StoredTable

LEDGER = "judge"


def _handle_name(asset_key: dg.AssetKey) -> str:
    """The run document holding an asset's handle (``asset_case_scores``): named by the
    asset's last name, so a suite's run (``ragproof/<name>/case_scores``) has the files
    of any other run."""
    return "asset_" + asset_key.path[-1]


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


class JudgeLedgerIOManager(dg.ConfigurableIOManager):
    """Each run's judge ledger, a document in the run's folder of the store."""

    store: StoreResource

    def handle_output(self, context: dg.OutputContext, obj: JudgeLedger) -> None:
        self.store.store().write_document(context.partition_key, LEDGER, obj.to_dict())

    def load_input(self, context: dg.InputContext) -> JudgeLedger:
        data = self.store.store().read_document(context.asset_partition_key, LEDGER)
        return JudgeLedger.from_dict(data)
