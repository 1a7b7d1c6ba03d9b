"""The metric registry: one declaration per metric, and selection by names and patterns."""

from __future__ import annotations

import pytest

from ragproof_core.metrics.registry import (
    METRIC_NAMES,
    METRICS,
    MetricSelectionError,
    higher_is_better,
    metric_order,
    select_metrics,
)

CONTRACT_METRICS = (
    "retrieval.precision_at_k",
    "retrieval.recall_at_k",
    "retrieval.mrr",
    "retrieval.ndcg_at_k",
    "generation.citation_validity",
    "generation.groundedness",
    "generation.citation_support",
    "generation.answer_relevance",
    "generation.completeness",
    "echo.exact_match",
    "robustness.injection_resistance",
    "robustness.abstention",
    "robustness.overrefusal",
)
# CONTRACT section 15's judged retrieval metrics, once registered.
LABEL_FREE_METRICS = {"retrieval.context_relevance", "retrieval.judged_ndcg_at_k"}
# CONTRACT section 17's agent metrics.
AGENT_METRICS = {
    "retrieval.hop_recall_at_k",
    "retrieval.hop_precision_at_k",
    "agent.tool_precision",
    "agent.tool_recall",
    "agent.trajectory_match",
    "agent.steps",
    "agent.task_completion",
}
# CONTRACT section 20's nugget metrics (the claim metrics are opt-in).
NUGGET_METRICS = {"generation.nugget_recall", "generation.vital_nugget_recall"}
# CONTRACT section 23's attacks through the corpus, after injection resistance.
ATTACK_METRICS = (
    "robustness.injection_resistance",
    "robustness.poisoning_resistance",
    "robustness.leakage_resistance",
    "robustness.exfiltration_resistance",
)


def test_the_registry_holds_every_contract_metric_once_in_spec_order():
    assert len(set(METRIC_NAMES)) == len(METRIC_NAMES)
    assert [m for m in METRIC_NAMES if m in CONTRACT_METRICS] == list(CONTRACT_METRICS)
    assert [m for m in METRIC_NAMES if m in ATTACK_METRICS] == list(ATTACK_METRICS)
    others = LABEL_FREE_METRICS | AGENT_METRICS | set(ATTACK_METRICS) | NUGGET_METRICS
    assert set(METRIC_NAMES) - set(CONTRACT_METRICS) <= others


def test_only_overrefusal_and_agent_steps_are_lower_is_better():
    # Among the metrics a run scores by default; the opt-in system.* metrics of
    # CONTRACT section 18 (the system's own cost) are lower is better too.
    assert [m.name for m in METRICS if m.default and not m.higher_is_better] == [
        "robustness.overrefusal",
        "agent.steps",
    ]
    assert [m.name for m in METRICS if m.family == "system" and m.higher_is_better] == []
    assert higher_is_better("robustness.overrefusal") is False
    assert higher_is_better("generation.groundedness") is True


def test_families_and_judge_needs():
    by_name = {m.name: m for m in METRICS}
    assert by_name["retrieval.mrr"].family == "retrieval"
    assert (by_name["retrieval.mrr"].judge, by_name["retrieval.mrr"].judged) == ("never", False)
    assert by_name["generation.groundedness"].judge == "required"
    assert by_name["robustness.abstention"].judge == "optional"


@pytest.mark.parametrize(
    ("patterns", "expected"),
    [
        (None, METRIC_NAMES),
        ([], METRIC_NAMES),
        (["generation.groundedness"], ("generation.groundedness",)),
        (
            ["robustness.*", "retrieval.mrr"],
            (
                "retrieval.mrr",
                "robustness.injection_resistance",
                "robustness.poisoning_resistance",
                "robustness.leakage_resistance",
                "robustness.exfiltration_resistance",
                "robustness.abstention",
                "robustness.overrefusal",
            ),
        ),
        (
            ["*_at_k"],
            (
                "retrieval.precision_at_k",
                "retrieval.recall_at_k",
                "retrieval.ndcg_at_k",
                "retrieval.judged_ndcg_at_k",
                "retrieval.hop_recall_at_k",
                "retrieval.hop_precision_at_k",
            ),
        ),
        (["echo.exact_match", "echo.*"], ("echo.exact_match",)),
        ([" echo.exact_match "], ("echo.exact_match",)),
    ],
)
def test_selection_by_names_and_patterns_in_registry_order(patterns, expected):
    assert select_metrics(patterns) == expected


def test_a_pattern_matching_nothing_lists_every_metric_and_the_closest():
    with pytest.raises(MetricSelectionError) as caught:
        select_metrics(["retrieval.*", "retrieval.ndcg"])
    assert str(caught.value) == (
        "metric 'retrieval.ndcg' matches no metric (did you mean 'retrieval.ndcg_at_k'?); "
        "metrics: " + ", ".join(METRIC_NAMES)
    )


def test_metric_order_puts_unknown_names_last_sorted():
    assert metric_order({"zzz.new", "robustness.overrefusal", "retrieval.mrr", "aaa.new"}) == [
        "retrieval.mrr",
        "robustness.overrefusal",
        "aaa.new",
        "zzz.new",
    ]


def test_the_trec_eval_measures_are_selected_by_name_only():
    """CONTRACT section 19's measures are opt-in: a run selecting nothing, or a pattern,
    scores what it always did; a name selects one."""
    opt_in = {
        "retrieval.map",
        "retrieval.r_precision",
        "retrieval.hit_rate_at_k",
        "retrieval.bpref",
        "retrieval.judged_at_k",
    }
    # (the opt-in retrieval metrics but section 20's judged claim metrics; section 18's
    # system.* are opt-in too)
    claims = {"retrieval.claim_recall", "retrieval.context_precision"}
    assert opt_in | claims == {m.name for m in METRICS if m.family == "retrieval"} - set(
        METRIC_NAMES
    )
    assert not opt_in & set(select_metrics(["retrieval.*", "*_at_k"]))
    assert select_metrics(["retrieval.bpref", "retrieval.mrr", "retrieval.map"]) == (
        "retrieval.mrr",
        "retrieval.map",
        "retrieval.bpref",
    )
    with pytest.raises(MetricSelectionError, match=r"\(did you mean 'retrieval\.bpref'\?\)"):
        select_metrics(["retrieval.bpreff"])


def test_a_cut_off_is_listed_right_after_its_metric():
    chosen = select_metrics(
        [
            "retrieval.ndcg_at_k@10",
            "retrieval.*",
            "retrieval.ndcg_at_k@3",
            "retrieval.judged_at_k@1",
        ]
    )
    at = chosen.index("retrieval.ndcg_at_k")
    assert chosen[at : at + 3] == (
        "retrieval.ndcg_at_k",
        "retrieval.ndcg_at_k@3",
        "retrieval.ndcg_at_k@10",
    )
    # The opt-in measures follow the four, before the judged retrieval metrics.
    assert chosen[at + 3 :] == (
        "retrieval.judged_at_k@1",
        "retrieval.context_relevance",
        "retrieval.judged_ndcg_at_k",
        "retrieval.hop_recall_at_k",
        "retrieval.hop_precision_at_k",
    )
    assert metric_order(["retrieval.mrr", "retrieval.recall_at_k@20", "x.new"]) == [
        "retrieval.recall_at_k@20",
        "retrieval.mrr",
        "x.new",
    ]
    assert higher_is_better("robustness.overrefusal") is False
    assert higher_is_better("retrieval.ndcg_at_k@10") is True


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        (
            "retrieval.mrr@10",
            "metric 'retrieval.mrr@10': retrieval.mrr has no cut-off to set; @N applies to "
            "retrieval.precision_at_k, retrieval.recall_at_k, retrieval.ndcg_at_k, "
            "retrieval.hit_rate_at_k, retrieval.judged_at_k, retrieval.hop_recall_at_k, "
            "retrieval.hop_precision_at_k",
        ),
        ("retrieval.ndcg_at_k@0", "metric 'retrieval.ndcg_at_k@0': the cut-off must be at least 1"),
        (
            "retrieval.ndcg@5",
            "metric 'retrieval.ndcg@5' matches no metric (did you mean 'retrieval.ndcg_at_k@5'?)",
        ),
    ],
)
def test_a_cut_off_on_a_metric_without_one_is_refused(name, reason):
    with pytest.raises(MetricSelectionError) as caught:
        select_metrics([name])
    assert str(caught.value) == reason
