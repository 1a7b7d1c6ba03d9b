"""Each metric is one declaration that holds how it is scored; everything else reads it."""

from __future__ import annotations

import duckdb
import pytest

from ragproof_core.calibration.report import prompt_metrics
from ragproof_core.judge.prompts import PROMPT_NAMES
from ragproof_core.metrics.registry import METRICS, REGISTRY, MetricSelectionError
from ragproof_core.metrics.spec import JUDGE_MODES, MetricSpec
from ragproof_core.run.evaluate import Selection
from ragproof_core.store.views import view_ddl


@pytest.mark.parametrize("declared", METRICS, ids=lambda m: m.name)
def test_each_declaration_is_complete(declared: MetricSpec):
    assert declared.name.startswith(f"{declared.family}.")
    assert declared.judge in JUDGE_MODES
    assert declared.needs and declared.description
    # Exactly one way to score it: alone, by plan, or through its group.
    ways = [declared.score is not None, declared.plan is not None and declared.group is None]
    assert sum(ways) == 1 or declared.group is not None
    if declared.group is not None:
        assert declared.name in declared.group.members
    if declared.judged:
        assert declared.plan is not None and declared.prompt in PROMPT_NAMES
    else:
        assert declared.plan is None and declared.prompt is None


def test_a_declaration_missing_its_scoring_is_refused():
    with pytest.raises(ValueError, match="exactly one of score, plan or group"):
        MetricSpec("custom.x", True, "never", ("answer",), "nothing to score it")
    with pytest.raises(ValueError, match="a judged metric has a plan"):
        MetricSpec("custom.x", True, "required", ("answer",), "d", score=lambda c, o, p: None)


def test_cutoffs_are_declared_on_the_metrics_that_cut_at_k():
    cut = {m.name for m in METRICS if m.cutoff == "k"}
    assert cut == {
        "retrieval.precision_at_k",
        "retrieval.recall_at_k",
        "retrieval.ndcg_at_k",
        "retrieval.hit_rate_at_k",
        "retrieval.judged_at_k",
        "retrieval.context_relevance",
        "retrieval.judged_ndcg_at_k",
        "retrieval.hop_recall_at_k",
        "retrieval.hop_precision_at_k",
        "retrieval.context_precision",
    }


def test_selection_reads_the_registry():
    chosen = Selection.from_settings(_Settings(("retrieval.mrr", "generation.*", "robustness.*")))
    assert [g.name for g in chosen.deterministic_groups] == ["retrieval"]
    assert [m.name for m in chosen.deterministic] == [
        "generation.citation_validity",
        "robustness.injection_resistance",
        "robustness.poisoning_resistance",
        "robustness.leakage_resistance",
        "robustness.exfiltration_resistance",
    ]
    assert [m.name for m in chosen.judged] == [
        "generation.groundedness",
        "generation.citation_support",
        "generation.answer_relevance",
        "generation.completeness",
        "robustness.abstention",
        "robustness.overrefusal",
    ]
    # The nugget metrics are on by default and scored by one group (CONTRACT section 20).
    assert [g.name for g in chosen.judged_groups] == ["generation.nugget_recall"]
    with pytest.raises(MetricSelectionError):
        REGISTRY.select(["custom.*"])


def test_a_runs_own_metric_joins_the_registry_after_the_shipped_ones():
    own = MetricSpec("custom.x", False, "never", ("answer",), "d", score=lambda c, o, p: None)
    registry = REGISTRY.with_metrics([own])
    assert registry.names[-1] == "custom.x"
    assert registry.select(["custom.*"]) == ("custom.x",)
    assert registry.higher_is_better("custom.x") is False
    assert REGISTRY.spec("custom.x") is None  # the shipped registry is unchanged


def test_calibration_maps_each_prompt_to_the_metric_declared_for_it():
    assert {p: m.name for p, m in prompt_metrics().items()} == {
        "groundedness": "generation.groundedness",
        "citation_support": "generation.citation_support",
        "answer_relevance": "generation.answer_relevance",
        "completeness": "generation.completeness",
        "refusal": "robustness.overrefusal",
        "context_relevance": "retrieval.context_relevance",
        "knowledge_retention": "conversation.knowledge_retention",
        "task_completion": "agent.task_completion",
        "claim_check": "generation.hallucination",
        "nugget_support": "generation.nugget_recall",
    }
    assert set(prompt_metrics()) == set(PROMPT_NAMES)


def test_the_metrics_view_is_the_registry(tmp_path):
    from ragproof_core.store.layout import StoreLayout

    statement = view_ddl(StoreLayout(tmp_path))[-1]
    with duckdb.connect() as con:
        # No stored run declared a metric of its own: the view is the registry alone.
        con.execute("CREATE TABLE runs (config_json VARCHAR, started_at TIMESTAMP)")
        con.execute(statement)
        rows = con.execute("SELECT metric, family, higher_is_better, judge FROM metrics").fetchall()
    assert rows == [(m.name, m.family, m.higher_is_better, m.judge) for m in METRICS]


class _Settings:
    def __init__(self, metrics):
        self.metrics = metrics
