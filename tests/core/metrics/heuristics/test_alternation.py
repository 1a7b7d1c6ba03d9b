"""The trie scan of an Alternation finds the same strings as one search per string, and
Alternations narrows each of several alternations exactly as its own scan does."""

from __future__ import annotations

import random
import re

from ragproof_core.metrics.heuristics import refusal
from ragproof_core.metrics.heuristics.alternation import (
    Alternation,
    fold,
    trie_pattern,
)


def _present(strings: list[str], text: str) -> set[str]:
    """Every string of ``strings`` occurring in ``text``, from the trie's longest matches."""
    finder = re.compile(trie_pattern(strings), re.DOTALL)
    found, match = set(), finder.search(text)
    while match is not None:
        found.update(s for s in strings if s in match.group())
        match = finder.search(text, match.start() + 1)
    return found


def test_trie_matches_the_longest_string_at_a_position() -> None:
    finder = re.compile(trie_pattern(["not", "not aware", "no", "n't"]))
    assert [m.group() for m in finder.finditer("i'm not aware; no, isn't")] == [
        "not aware",
        "no",
        "n't",
    ]


def test_trie_scan_finds_exactly_the_strings_present() -> None:
    strings = ["don't", "on't", "o not", "not", "no ", "知道", "不知道", "weiß", "ß"]
    rng = random.Random(5)
    for _ in range(2000):
        pieces = [rng.choice([*strings, " ", "x", "n", "知"]) for _ in range(rng.randint(0, 8))]
        text = "".join(pieces)
        assert _present(strings, text) == {s for s in strings if s in text}, text


def test_alternation_keeps_the_alternatives_a_text_may_match() -> None:
    parts = [r"\bi don't know\b", r"\bnot (?:aware|sure)\b", r"no idea", r"\w+ing"]
    alternation = Alternation(parts, re.IGNORECASE)
    full = re.compile("|".join(f"(?:{p})" for p in parts), re.IGNORECASE)
    for text in ["I don't know.", "Not aware of it", "NO IDEA", "nothing", "", "sure"]:
        assert [m.span() for m in alternation.finditer(text)] == [
            m.span() for m in full.finditer(text)
        ]
    pattern = alternation.pattern_for("i am not sure, no idea")
    assert pattern is not None and fold("no idea") in pattern.pattern
    assert "don't" not in pattern.pattern


def test_alternations_narrow_each_alternation_as_its_own_scan_does() -> None:
    families = refusal.CUE_FAMILIES.alternations
    answers = [row["answer"] for row in refusal.load_labelled_set()]
    texts = [*answers, *(answer.lower() for answer in answers)]
    rng = random.Random(7)
    words = [w for text in texts[:50] for w in text.split()] + ["İ", "ß", "不知道", "n't"]
    texts += [" ".join(rng.choice(words) for _ in range(rng.randint(0, 12))) for _ in range(500)]
    for text in texts:
        assert refusal.CUE_FAMILIES.patterns_for(text) == tuple(
            a.pattern_for(text) for a in families
        ), text
