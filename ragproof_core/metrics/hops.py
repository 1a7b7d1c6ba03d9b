"""Per-hop retrieval: each retrieve step of an agent scored against its own gold
(CONTRACT section 17, docs/metrics.md).

The i-th retrieve step of the answer's ``steps`` (tool steps between them do not
count) is scored against the case's i-th expected hop with the rules of the
retrieval metrics: its chunks deduplicated by matched source id
(``run.source_match``), cut at ``k``, precision over ``k`` and recall over the
hop's gold ids. The case's value is the mean over its expected hops; a hop the
agent never reached (fewer retrieve steps than expected hops) scores 0, and
retrieve steps past the last expected hop are not scored. Neither ``retrieve()``
nor ``expected_source_ids`` is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ragproof_core.metrics.agent import stepped_rows, steps_grid
from ragproof_core.metrics.cutoff import split_cutoff
from ragproof_core.metrics.result_columns import ResultColumns
from ragproof_core.metrics.retrieval import matched_ids, precision_at_k, recall_at_k
from ragproof_core.metrics.spec import MetricGroup, MetricSpec
from ragproof_core.model import (
    Case,
    CaseOutput,
    MetricResult,
    RetrieveStep,
    Status,
    scored,
    skipped,
)

HOP_RECALL_AT_K = "retrieval.hop_recall_at_k"
HOP_PRECISION_AT_K = "retrieval.hop_precision_at_k"
HOP_METRICS: tuple[str, ...] = (HOP_RECALL_AT_K, HOP_PRECISION_AT_K)

NO_EXPECTED_HOPS = "case has no expected_hops"
NO_ANSWER = "adapter produced no answer"
NO_STEPS = "answer has no steps"

_KERNELS = {HOP_RECALL_AT_K: recall_at_k, HOP_PRECISION_AT_K: precision_at_k}


def hop_scores(
    name: str,
    hops: Sequence[Sequence[str]],
    retrievals: Sequence[RetrieveStep],
    source_match: str,
    k: int,
) -> list[float]:
    """One score per expected hop: the metric's kernel on the matching retrieve step,
    0.0 for a hop with no retrieve step."""
    kernel = _KERNELS[name]
    scores = []
    for index, gold in enumerate(hops):
        if index >= len(retrievals):
            scores.append(0.0)
            continue
        ranked = matched_ids(retrievals[index].chunks, source_match)
        scores.append(kernel(ranked, frozenset(gold), k))
    return scores


def hop_results(
    case: Case, output: CaseOutput, params: Any, wanted: Sequence[str]
) -> list[MetricResult]:
    """The ``wanted`` hop metrics (``@N`` cut-offs included) of one case that did not fail."""
    reason = _skip_reason(case, output)
    if reason is not None:
        return [skipped(case.id, name, reason) for name in wanted]
    retrievals = output.answer.retrievals
    results = []
    for name in wanted:
        base, cutoff = split_cutoff(name)
        scores = hop_scores(
            base, case.expected_hops, retrievals, params.source_match, cutoff or params.k
        )
        results.append(scored(case.id, name, sum(scores) / len(scores)))
    return results


def _skip_reason(case: Case, output: CaseOutput) -> str | None:
    if not case.expected_hops:
        return NO_EXPECTED_HOPS
    if output.answer is None:
        return NO_ANSWER
    if output.answer.steps is None:
        return NO_STEPS
    return None


def hop_columns(
    dataset: pa.Table, outputs: pa.Table, params: Any, wanted: Sequence[str]
) -> ResultColumns:
    """``hop_results`` from the columns: a case with no expected hops, no answer or no
    steps skips at once (``_skip_reason``'s order); the rest are scored by
    ``hop_results`` itself."""
    grid = steps_grid(dataset, outputs, wanted)
    hops = dataset.column("expected_hops").combine_chunks()
    no_hops = pc.list_value_length(hops).fill_null(0).to_numpy(zero_copy_only=False) == 0
    grid.set(no_hops, Status.SKIPPED, NO_EXPECTED_HOPS)
    for row, output, expected in stepped_rows(dataset, outputs, ~no_hops, "expected_hops"):
        case = Case(output.case_id, "", expected_hops=tuple(tuple(hop) for hop in expected))
        grid.put(row, hop_results(case, output, params, wanted))
    return grid.columns()


# After the judged retrieval metrics (20), before citation validity (30).
REPORT_ORDER = 25
HOP_GROUP = MetricGroup("retrieval_hops", HOP_METRICS, score=hop_results, score_columns=hop_columns)
_NEEDS = ("steps", "expected_hops")

METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        HOP_RECALL_AT_K,
        True,
        "never",
        _NEEDS,
        "mean over expected hops of the i-th retrieve step's recall@k (a missing step: 0)",
        group=HOP_GROUP,
        cutoff="k",
        reads=frozenset({"tool_calls"}),
    ),
    MetricSpec(
        HOP_PRECISION_AT_K,
        True,
        "never",
        _NEEDS,
        "mean over expected hops of the i-th retrieve step's precision@k (a missing step: 0)",
        group=HOP_GROUP,
        cutoff="k",
        reads=frozenset({"tool_calls"}),
    ),
)
