# What the other layers use; inside this package, modules import each other directly.
from ragproof_core.store.files import write_json_lines
from ragproof_core.store.handles import StoredTable
from ragproof_core.store.layout import InvalidRunId, new_run_id
from ragproof_core.store.query import QueryRefused, QueryResult, run_read_only
from ragproof_core.store.result_tally import UnknownStatus, summarize_run
from ragproof_core.store.run_store import RunNotFound, RunRecord, RunStore, stored_run_settings
from ragproof_core.store.tables import CASE_RESULTS, DATASET, METRIC_SUMMARIES, OUTPUTS, Table
from ragproof_core.store.views import StoreLocked

__all__ = [
    "CASE_RESULTS",
    "DATASET",
    "InvalidRunId",
    "METRIC_SUMMARIES",
    "OUTPUTS",
    "QueryRefused",
    "QueryResult",
    "RunNotFound",
    "RunRecord",
    "RunStore",
    "StoreLocked",
    "StoredTable",
    "Table",
    "UnknownStatus",
    "new_run_id",
    "run_read_only",
    "stored_run_settings",
    "summarize_run",
    "write_json_lines",
]
