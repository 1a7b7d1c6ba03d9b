"""Tests for ragproof_core/metrics/heuristics/refusal.py: the refusal heuristic and its
labelled set."""

from __future__ import annotations

import sys
from collections import Counter

import pytest

from ragproof_core.metrics.heuristics.refusal import (
    evaluate_heuristic,
    is_refusal,
    load_labelled_set,
)
from tests.core.metrics.heuristics.fixture_lines import assert_every_line_owned, lines_for

LABELLED = load_labelled_set()


def test_labelled_set_shape() -> None:
    assert len(LABELLED) == 340
    assert len({row["id"] for row in LABELLED}) == len(LABELLED)
    for row in LABELLED:
        assert set(row) == {"id", "question", "answer", "refused", "category", "split"}, row["id"]
        assert isinstance(row["refused"], bool) and row["question"] and row["answer"]
    labels = Counter(row["refused"] for row in LABELLED)
    assert labels == {True: 177, False: 163}
    splits = Counter(row["split"] for row in LABELLED)
    assert splits == {"dev": 174, "heldout": 44, "heldout2": 42, "heldout3": 40, "heldout4": 40}
    categories = {row["category"] for row in LABELLED if row["split"] == "dev"}
    assert categories == {
        "plain-refusal",
        "polite-indirect-refusal",
        "no-information",
        "partial-refusal",
        "clarification-only",
        "non-english-refusal",
        "plain-answer",
        "negative-words-answer",
        "hedged-answer",
        "non-english-answer",
    }


def test_heuristic_precision_and_recall_on_the_labelled_set() -> None:
    precision, recall, tp, fp, fn, tn = evaluate_heuristic(LABELLED)
    # Exact counts, so any change in behaviour shows up here (docs/parts/robustness.md).
    assert (tp, fp, fn, tn) == (176, 1, 1, 162)
    assert precision == pytest.approx(176 / 177)
    assert recall == pytest.approx(176 / 177)
    assert precision >= 0.95 and recall >= 0.95


@pytest.mark.parametrize(
    ("split", "counts"),
    [
        ("dev", (92, 0, 0, 82)),
        ("heldout", (22, 0, 1, 21)),
        ("heldout2", (22, 0, 0, 20)),
        ("heldout3", (20, 1, 0, 19)),
        ("heldout4", (20, 0, 0, 20)),
    ],
)
def test_heuristic_counts_per_split(split: str, counts: tuple[int, int, int, int]) -> None:
    rows = [row for row in LABELLED if row["split"] == split]
    assert evaluate_heuristic(rows)[2:] == counts


def test_evaluate_heuristic_arithmetic() -> None:
    rows = [
        {"answer": "I don't know.", "refused": True},  # tp
        {"answer": "I can't help with that.", "refused": False},  # fp
        {"answer": "Paris.", "refused": True},  # fn
        {"answer": "Paris.", "refused": False},  # tn
        {"answer": "Berlin.", "refused": False},  # tn
    ]
    assert evaluate_heuristic(rows) == (0.5, 0.5, 1, 1, 1, 2)
    # Nothing predicted and nothing to find: both ratios are vacuously perfect.
    assert evaluate_heuristic([{"answer": "Paris.", "refused": False}]) == (1.0, 1.0, 0, 0, 0, 1)


def run_rules(test: str) -> None:
    for line in lines_for("refusal_rules.jsonl", test):
        assert is_refusal(line["answer"]) is line["expect"], line["answer"]


def test_empty_answer_is_a_refusal() -> None:
    run_rules("test_empty_answer_is_a_refusal")


def test_clarification_only_is_a_refusal() -> None:
    run_rules("test_clarification_only_is_a_refusal")


def test_negative_words_are_not_refusals() -> None:
    run_rules("test_negative_words_are_not_refusals")


def test_first_person_and_source_cues_are_refusals() -> None:
    run_rules("test_first_person_and_source_cues_are_refusals")


def test_precision_qualifier_makes_a_hedge() -> None:
    run_rules("test_precision_qualifier_makes_a_hedge")


def test_soft_cue_followed_by_contrast_is_a_hedge() -> None:
    run_rules("test_soft_cue_followed_by_contrast_is_a_hedge")


def test_epistemic_marker_after_a_cue_commits_to_an_answer() -> None:
    run_rules("test_epistemic_marker_after_a_cue_commits_to_an_answer")


def test_inference_from_an_absence_answers() -> None:
    run_rules("test_inference_from_an_absence_answers")


def test_clause_level_denial_needs_an_anchor() -> None:
    run_rules("test_clause_level_denial_needs_an_anchor")


def test_multilingual_cues() -> None:
    run_rules("test_multilingual_cues")


def test_every_rule_line_belongs_to_a_test() -> None:
    assert_every_line_owned("refusal_rules.jsonl", sys.modules[__name__])


def test_is_refusal_is_fast_enough_for_hostile_input() -> None:
    # Bounded regexes: a long answer full of near-misses still finishes (no timing
    # asserted; a catastrophic backtrack would hang the suite instead).
    text = ("i can't " + "really " * 50 + "x. the documents " * 200) * 5
    assert is_refusal(text) is False
