"""The store: Parquet files per run, DuckDB views over them, and each table declared
once (``tables.py``). What the other layers use is exported here."""

from ragproof_core.store.files import (
    write_json_lines,
)
from ragproof_core.store.handles import (
    StoredTable,
)
from ragproof_core.store.label_ledger import (
    LabelLedger,
)
from ragproof_core.store.labels import (
    LabelError,
    StoredLabel,
    check_annotator,
    new_label,
)
from ragproof_core.store.layout import (
    InvalidRunId,
    new_run_id,
)
from ragproof_core.store.query import (
    QueryRefused,
    QueryResult,
    run_read_only,
)
from ragproof_core.store.result_tally import (
    ResultTally,
    summarize_run,
)
from ragproof_core.store.retention import (
    GcReport,
    Retention,
    collect_garbage,
)
from ragproof_core.store.run_store import (
    RunDamaged,
    RunNotFound,
    RunRecord,
    RunStore,
    stored_run_settings,
)
from ragproof_core.store.schema import (
    UnknownStatus,
)
from ragproof_core.store.tables import (
    CASE_RESULTS,
    DATASET,
    METRIC_SUMMARIES,
    OUTPUTS,
    Table,
)
from ragproof_core.store.views import (
    StoreLocked,
)

__all__ = [
    "CASE_RESULTS",
    "GcReport",
    "Retention",
    "collect_garbage",
    "DATASET",
    "InvalidRunId",
    "LabelError",
    "LabelLedger",
    "METRIC_SUMMARIES",
    "OUTPUTS",
    "QueryRefused",
    "QueryResult",
    "ResultTally",
    "RunDamaged",
    "RunNotFound",
    "RunRecord",
    "RunStore",
    "StoreLocked",
    "StoredLabel",
    "StoredTable",
    "Table",
    "UnknownStatus",
    "check_annotator",
    "new_label",
    "new_run_id",
    "run_read_only",
    "stored_run_settings",
    "summarize_run",
    "write_json_lines",
]
