"""The trec_eval measures and graded relevance (CONTRACT section 19) on hand-computed
cases (tests/fixtures/metrics/trec_measures_cases.jsonl, each value worked out in its
``why``). Per-query equality with trec_eval itself on generated collections is in
tests/core/data/importers/test_trec_eval_equality.py."""

from __future__ import annotations

import json
import math
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from ragproof_core.config.settings import RunSettings
from ragproof_core.data.dataset import load_dataset
from ragproof_core.metrics.retrieval import (
    NO_EXPECTED_SOURCES,
    SCORED_RETRIEVAL,
    ndcg_at_k,
    retrieval_results,
)
from ragproof_core.metrics.trec_measures import (
    average_precision,
    bpref,
    graded_ndcg_at_k,
    hit_rate_at_k,
    judged_at_k,
    r_precision,
)
from ragproof_core.model import CaseOutput, Status
from tests.core.metrics.fixture_cases import cases_for, chunks, unowned_lines

FIXTURE = "trec_measures_cases.jsonl"


def test_every_fixture_line_has_its_test():
    assert unowned_lines(FIXTURE, sys.modules[__name__]) == []


def _case(tmp_path, line):
    path = tmp_path / "cases.jsonl"
    row = {"id": "c", "question": "q?", "expected_source_ids": line["expected_source_ids"]}
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return load_dataset(path)[0]


def test_hand_computed_values(tmp_path):
    for line in cases_for(FIXTURE, "test_hand_computed_values"):
        case = _case(tmp_path, line)
        output = CaseOutput(case.id, retrieved=chunks(line["retrieve"]))
        settings = RunSettings(k=line["k"], source_match=line["source_match"])
        results = retrieval_results(case, output, settings, SCORED_RETRIEVAL)
        got = {r.metric.removeprefix("retrieval."): r.value for r in results}
        assert set(got) == set(line["expect"]), line["name"]
        for name, want in line["expect"].items():
            assert math.isclose(got[name], want, rel_tol=1e-12, abs_tol=1e-15), (
                line["name"],
                name,
                got[name],
                want,
            )


def test_all_zero_grades_skip_as_a_case_without_expected_sources(tmp_path):
    case = _case(tmp_path, {"expected_source_ids": {"d1": 0, "d2": 0}})
    output = CaseOutput(case.id, retrieved=chunks([{"id": "d1"}]))
    results = retrieval_results(case, output, RunSettings(), SCORED_RETRIEVAL)
    assert [(r.status, r.reason) for r in results] == [(Status.SKIPPED, NO_EXPECTED_SOURCES)] * 9


def test_measures_without_a_cut_off_ignore_k():
    ranked, grades = ["x", "a", "y", "b"], {"a": 1, "b": 2, "y": 0}
    for kernel in (average_precision, r_precision, bpref):
        assert kernel(ranked, grades, 1) == kernel(ranked, grades, 100), kernel.__name__
    assert (hit_rate_at_k(ranked, grades, 1), hit_rate_at_k(ranked, grades, 2)) == (0.0, 1.0)
    assert (judged_at_k(ranked, grades, 1), judged_at_k(ranked, grades, 4)) == (0.0, 3 / 4)


def test_cut_off_variants_score_at_their_own_k(tmp_path):
    case = _case(tmp_path, {"expected_source_ids": {"a": 1, "b": 2}})
    output = CaseOutput(case.id, retrieved=chunks([{"id": "x"}, {"id": "y"}, {"id": "b"}]))
    wanted = ("retrieval.ndcg_at_k", "retrieval.ndcg_at_k@2", "retrieval.precision_at_k@3")
    results = retrieval_results(case, output, RunSettings(k=5), wanted)
    assert [r.metric for r in results] == list(wanted)
    ndcg_5, ndcg_2, precision_3 = (r.value for r in results)
    assert ndcg_5 == (2 / math.log2(4)) / (2 + 1 / math.log2(3))
    assert (ndcg_2, precision_3) == (0.0, 1 / 3)


ids = st.sampled_from("abcdefgh")


@settings(max_examples=300, deadline=None)
@given(
    ranked=st.lists(ids, unique=True, max_size=8),
    relevant=st.sets(ids, min_size=1),
    k=st.integers(1, 10),
)
def test_graded_ndcg_with_every_grade_1_is_the_binary_kernel_bit_for_bit(ranked, relevant, k):
    """A list is grade 1 each (item 7): the graded formula gives the same float."""
    grades = dict.fromkeys(sorted(relevant), 1)
    assert graded_ndcg_at_k(ranked, grades, k) == ndcg_at_k(ranked, frozenset(relevant), k)


@settings(max_examples=300, deadline=None)
@given(
    ranked=st.lists(ids, unique=True, max_size=8),
    grades=st.dictionaries(ids, st.integers(0, 3), min_size=1),
    k=st.integers(1, 10),
)
def test_every_measure_lies_in_the_unit_interval(ranked, grades, k):
    for kernel in (graded_ndcg_at_k, average_precision, r_precision, hit_rate_at_k, bpref):
        assert 0.0 <= kernel(ranked, grades, k) <= 1.0 + 1e-12, kernel.__name__
    assert 0.0 <= judged_at_k(ranked, grades, k) <= 1.0
