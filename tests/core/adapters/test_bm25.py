"""BM25 index of the demo pipeline: tokenizer, exact scores, exact ranking."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ragproof_core.adapters.bm25 import BM25Index, tokenize

TINY = Path(__file__).resolve().parents[2] / "fixtures/demo/tiny_corpus.jsonl"


def tiny_index() -> BM25Index:
    records = [json.loads(line) for line in TINY.read_text(encoding="utf-8").splitlines()]
    return BM25Index([(r["id"], r["text"]) for r in records])


def test_tokenize_lowercases_keeps_unicode_words_and_drops_stopwords():
    assert tokenize("The Café's naïve __init__ is NOT in the list!") == [
        "café",
        "s",
        "naïve",
        "__init__",
        "is",
        "not",
        "in",
        "list",
    ]


def test_tokenize_keeps_python_keywords_but_drops_english_function_words():
    assert tokenize("What is it? If not, the answer is in a for loop, and so on.") == [
        "is",
        "if",
        "not",
        "answer",
        "is",
        "in",
        "for",
        "loop",
        "and",
    ]
    assert tokenize("what the") == []


def test_tiny_corpus_tokens_and_lengths():
    index = tiny_index()
    assert index.ids == ("cats-1", "cats-2", "dogs-1", "garden-1")
    assert index.doc_lengths == (7, 10, 10, 8)
    assert index.avgdl == 8.75


def test_exact_ranking_on_tiny_corpus():
    # "cats" is in cats-1 and cats-2, "hunt" in cats-2 and garden-1, "goldfish"
    # (twice) in garden-1 only; dogs-1 shares no term and is not returned.
    ranked = tiny_index().search("Cats hunt goldfish", k=10)
    assert [doc_id for doc_id, _ in ranked] == ["garden-1", "cats-2", "cats-1"]


def test_hand_checked_score_of_one_document():
    # garden-1 = garden pond holds goldfish herons hunt goldfish dawn: |d| = 8.
    # N = 4, avgdl = (7 + 10 + 10 + 8) / 4 = 8.75, k1 = 1.5, b = 0.75.
    # norm  = k1 * (1 - b + b * |d| / avgdl) = 1.5 * (0.25 + 0.75 * 8 / 8.75)
    #       = 1.4035714285714286
    # "cats":     not in garden-1, contributes 0.
    # "hunt":     n = 2, idf = ln(1 + (4 - 2 + 0.5) / (2 + 0.5)) = ln 2
    #             tf = 1 -> ln 2 * 1 * 2.5 / (1 + norm) = 0.72095546...
    # "goldfish": n = 1, idf = ln(1 + (4 - 1 + 0.5) / (1 + 0.5)) = ln(10/3)
    #             tf = 2 -> ln(10/3) * 2 * 2.5 / (2 + norm) = 1.76869037...
    # total = 2.48964583...
    norm = 1.5 * (0.25 + 0.75 * 8 / 8.75)
    expected = math.log(2) * 2.5 / (1 + norm) + math.log(10 / 3) * 2 * 2.5 / (2 + norm)
    scores = dict(tiny_index().search("Cats hunt goldfish", k=10))
    assert scores["garden-1"] == pytest.approx(expected, rel=1e-12)
    assert scores["garden-1"] == pytest.approx(2.4896458363, rel=1e-9)


def test_idf_is_never_negative_for_a_term_in_every_document():
    index = BM25Index([("a", "shared alpha"), ("b", "shared beta"), ("c", "shared gamma")])
    # ln(1 + (3 - 3 + 0.5) / (3 + 0.5)) = ln(8/7) > 0
    assert index.idf("shared") == pytest.approx(math.log(8 / 7), rel=1e-12)
    assert [doc_id for doc_id, _ in index.search("shared", k=3)] == ["a", "b", "c"]


def test_equal_scores_are_ordered_by_id_not_by_input_order():
    index = BM25Index([("zeta", "same words"), ("alpha", "same words"), ("mid", "other text")])
    ranked = index.search("same", k=5)
    assert [doc_id for doc_id, _ in ranked] == ["alpha", "zeta"]
    assert ranked[0][1] == ranked[1][1]


def test_k_truncates_and_non_positive_k_returns_nothing():
    index = tiny_index()
    assert [doc_id for doc_id, _ in index.search("cats hunt goldfish", k=1)] == ["garden-1"]
    assert index.search("cats hunt goldfish", k=0) == []


def test_query_without_known_terms_returns_nothing():
    index = tiny_index()
    assert index.search("quantum chromodynamics", k=5) == []
    assert index.search("the and of", k=5) == []


def test_repeated_query_term_counts_once():
    index = tiny_index()
    assert index.search("hunt hunt hunt", k=5) == index.search("hunt", k=5)


def test_duplicate_ids_are_rejected():
    with pytest.raises(ValueError, match="duplicate document ids: a"):
        BM25Index([("a", "one"), ("b", "two"), ("a", "three")])


def test_empty_index_searches_to_nothing():
    index = BM25Index([])
    assert len(index) == 0
    assert index.search("anything", k=3) == []
