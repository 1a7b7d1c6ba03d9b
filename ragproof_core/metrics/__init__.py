# What the other layers use; inside this package, modules import each other directly.
from ragproof_core.metrics.aggregate import summarize, summarize_counted
from ragproof_core.metrics.citation import citation_validity
from ragproof_core.metrics.combined_run import combined_results
from ragproof_core.metrics.context_relevance import (
    CONTEXT_METRICS,
    CONTEXT_RELEVANCE,
    context_metric_functions,
    context_planners,
    context_relevance,
    context_relevance_results,
)
from ragproof_core.metrics.cutoff import split_cutoff
from ragproof_core.metrics.echo import exact_match
from ragproof_core.metrics.generation import (
    ANSWER_RELEVANCE,
    CITATION_SUPPORT,
    COMPLETENESS,
    GROUNDEDNESS,
    JUDGE_METRICS,
)
from ragproof_core.metrics.heuristics.payloads import PAYLOADS, Payload, get_payload, render
from ragproof_core.metrics.heuristics.sentinel import expected_marker, sentinel_for
from ragproof_core.metrics.registry import (
    METRIC_NAMES,
    METRICS,
    higher_is_better,
    metric_order,
    select_metrics,
)
from ragproof_core.metrics.retrieval import RETRIEVAL_METRICS, SCORED_RETRIEVAL, retrieval_results
from ragproof_core.metrics.robustness import (
    ABSTENTION,
    INJECTION_RESISTANCE,
    OVERREFUSAL,
    abstention,
    injection_resistance,
    overrefusal,
)

__all__ = [
    "ABSTENTION",
    "ANSWER_RELEVANCE",
    "CITATION_SUPPORT",
    "COMPLETENESS",
    "CONTEXT_METRICS",
    "CONTEXT_RELEVANCE",
    "GROUNDEDNESS",
    "INJECTION_RESISTANCE",
    "JUDGE_METRICS",
    "METRICS",
    "METRIC_NAMES",
    "OVERREFUSAL",
    "PAYLOADS",
    "Payload",
    "RETRIEVAL_METRICS",
    "SCORED_RETRIEVAL",
    "abstention",
    "citation_validity",
    "combined_results",
    "context_metric_functions",
    "context_planners",
    "context_relevance",
    "context_relevance_results",
    "exact_match",
    "expected_marker",
    "get_payload",
    "higher_is_better",
    "injection_resistance",
    "metric_order",
    "overrefusal",
    "render",
    "retrieval_results",
    "select_metrics",
    "sentinel_for",
    "split_cutoff",
    "summarize",
    "summarize_counted",
]
