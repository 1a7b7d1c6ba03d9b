"""Every metric, one ``MetricSpec`` each, found by the registry (``registry.py``), and
the metrics of your own (``custom.py``). What the other layers use is exported here."""

from ragproof_core.metrics.aggregate import (
    summarize,
    summarize_counted,
)
from ragproof_core.metrics.combined_run import (
    combined_results,
)
from ragproof_core.metrics.context_relevance import (
    CONTEXT_RELEVANCE,
)
from ragproof_core.metrics.custom import (
    custom_metric,
    give_rubrics,
    run_registry,
    stored_registry,
    stored_tables,
)
from ragproof_core.metrics.custom_tables import (
    PREFIX,
    MetricTable,
    MetricTableError,
    check_functions,
    parse_metric_tables,
    tables_from_dicts,
    tables_to_dicts,
)
from ragproof_core.metrics.judge_plan import (
    JudgePlan,
    result_from_verdict,
    run_plan,
)
from ragproof_core.metrics.registry import (
    METRIC_NAMES,
    METRICS,
    REGISTRY,
    MetricGroup,
    MetricSelectionError,
    MetricSpec,
    Registry,
    higher_is_better,
    metric_order,
)
from ragproof_core.metrics.spec import (
    DEFAULT_PARAMS,
    SOURCE_MATCHES,
    named_only,
)

__all__ = [
    "CONTEXT_RELEVANCE",
    "DEFAULT_PARAMS",
    "JudgePlan",
    "METRICS",
    "METRIC_NAMES",
    "MetricGroup",
    "MetricSelectionError",
    "MetricSpec",
    "MetricTable",
    "MetricTableError",
    "PREFIX",
    "REGISTRY",
    "Registry",
    "SOURCE_MATCHES",
    "check_functions",
    "combined_results",
    "custom_metric",
    "give_rubrics",
    "higher_is_better",
    "metric_order",
    "named_only",
    "parse_metric_tables",
    "result_from_verdict",
    "run_plan",
    "run_registry",
    "stored_registry",
    "stored_tables",
    "summarize",
    "summarize_counted",
    "tables_from_dicts",
    "tables_to_dicts",
]
