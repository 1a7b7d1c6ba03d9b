"""Near-duplicate questions: normalised text, then character n-gram Jaccard.

Cheap and deterministic (no embeddings, no model call). Normalising lowercases,
folds Unicode compatibility forms, drops punctuation and collapses spaces, so
"What is X?" and "what is x" are the same question. Beyond that, two questions
whose character 3-gram sets overlap by ``JACCARD_THRESHOLD`` or more are near
duplicates.

The threshold trades two errors; measured on questions about the demo corpus:
reordered clauses ("In a raise statement, which attribute holds ...?" vs
"Which attribute holds ... of a raise statement?") score 0.90, an added word
("What does assert do ...?" vs "What does an assert statement do ...?") 0.78,
a paraphrase ("How can automatic exception chaining be suppressed?" vs "How is
... suppressed?") 0.74, while genuinely different short questions can score
high ("What does the return statement return by default?" vs "... the yield
statement ...": 0.81). No threshold separates these; at 0.8 reorderings are
caught, light paraphrases are kept as distinct questions, and a false alarm
costs one replacement request.
"""

from __future__ import annotations

import re
import unicodedata

NGRAM = 3
JACCARD_THRESHOLD = 0.8

_NON_WORD = re.compile(r"[^\w\s]+")
_SPACES = re.compile(r"\s+")


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return _SPACES.sub(" ", _NON_WORD.sub(" ", text)).strip()


def ngrams(text: str, n: int = NGRAM) -> frozenset[str]:
    """Character n-grams of the normalised text (the whole text when shorter than n)."""
    norm = normalise(text)
    if len(norm) <= n:
        return frozenset({norm})
    return frozenset(norm[i : i + n] for i in range(len(norm) - n + 1))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


class QuestionIndex:
    """The questions kept so far; ``duplicate_of`` finds the one a new question repeats."""

    def __init__(self, threshold: float = JACCARD_THRESHOLD) -> None:
        self.threshold = threshold
        self._normalised: dict[str, str] = {}
        self._grams: list[tuple[str, frozenset[str]]] = []

    def __len__(self) -> int:
        return len(self._grams)

    def duplicate_of(self, question: str) -> str | None:
        norm = normalise(question)
        if norm in self._normalised:
            return self._normalised[norm]
        grams = ngrams(question)
        for kept, kept_grams in self._grams:
            if jaccard(grams, kept_grams) >= self.threshold:
                return kept
        return None

    def add(self, question: str) -> None:
        self._normalised.setdefault(normalise(question), question)
        self._grams.append((question, ngrams(question)))
