"""Fixture tests for ragproof_core/metrics/hops.py (CONTRACT section 17, docs/metrics.md):
the i-th retrieve step against the i-th expected hop, with section 1's dedup, k and
source matching; a missing hop scores 0."""

from __future__ import annotations

import sys

from ragproof_core.adapters.coerce import to_steps
from ragproof_core.config.settings import RunSettings
from ragproof_core.metrics.hops import HOP_METRICS, HOP_PRECISION_AT_K, HOP_RECALL_AT_K, hop_results
from ragproof_core.model import Answer, Case, CaseOutput, Chunk, Status
from tests.core.metrics.fixture_cases import cases_for, unowned_lines

FIXTURE = "hop_cases.jsonl"
SHORT = {"hop_recall_at_k": HOP_RECALL_AT_K, "hop_precision_at_k": HOP_PRECISION_AT_K}


def check_fixtures(test_name: str) -> None:
    for line in cases_for(FIXTURE, test_name):
        case = Case("c", "q?", expected_hops=tuple(tuple(hop) for hop in line["expected_hops"]))
        output = CaseOutput("c", Answer("done", steps=to_steps(line["steps"])))
        settings = RunSettings(k=line["k"], source_match=line["source_match"])
        results = hop_results(case, output, settings, HOP_METRICS)
        assert all(r.status is Status.SCORED for r in results), line["name"]
        got = {r.metric: r.value for r in results}
        assert got == {SHORT[s]: v for s, v in line["expect"].items()}, line["name"]


def test_every_fixture_line_is_owned_by_a_test():
    assert unowned_lines(FIXTURE, sys.modules[__name__]) == []


def test_each_hop_scored_against_its_own_gold():
    check_fixtures("test_each_hop_scored_against_its_own_gold")


def test_duplicates_are_collapsed_before_the_cut():
    check_fixtures("test_duplicates_are_collapsed_before_the_cut")


def test_a_missing_hop_scores_zero():
    check_fixtures("test_a_missing_hop_scores_zero")


def test_a_cutoff_variant_scores_at_its_own_depth():
    case = Case("c", "q?", expected_hops=(("b",),))
    steps = to_steps(
        [
            {
                "type": "retrieve",
                "query": "q",
                "chunks": [{"id": "a", "text": "t"}, {"id": "b", "text": "t"}],
            }
        ]
    )
    output = CaseOutput("c", Answer("done", steps=steps))
    wanted = (HOP_RECALL_AT_K, f"{HOP_RECALL_AT_K}@1")
    results = hop_results(case, output, RunSettings(k=5), wanted)
    assert [(r.metric, r.value) for r in results] == [
        (HOP_RECALL_AT_K, 1.0),
        (f"{HOP_RECALL_AT_K}@1", 0.0),
    ]


def test_reads_neither_retrieve_nor_expected_source_ids():
    case = Case("c", "q?", expected_source_ids=("zzz",), expected_hops=(("a",),))
    steps = to_steps([{"type": "retrieve", "query": "q", "chunks": [{"id": "a", "text": "t"}]}])
    output = CaseOutput("c", Answer("done", steps=steps), retrieved=(Chunk("zzz", "t"),))
    results = hop_results(case, output, RunSettings(k=1), HOP_METRICS)
    assert [r.value for r in results] == [1.0, 1.0]


def test_skips_without_expected_hops_or_steps():
    hops = (("a",),)
    for case, output, reason in [
        (Case("c", "q?"), CaseOutput("c", Answer("a", steps=())), "case has no expected_hops"),
        (
            Case("c", "q?", expected_hops=()),
            CaseOutput("c", Answer("a", steps=())),
            "case has no expected_hops",
        ),
        (Case("c", "q?", expected_hops=hops), CaseOutput("c", Answer("a")), "answer has no steps"),
        (
            Case("c", "q?", expected_hops=hops),
            CaseOutput("c", None, ()),
            "adapter produced no answer",
        ),
    ]:
        results = hop_results(case, output, RunSettings(), HOP_METRICS)
        assert [(r.status, r.reason) for r in results] == [(Status.SKIPPED, reason)] * 2
