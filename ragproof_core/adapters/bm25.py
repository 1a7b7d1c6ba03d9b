"""A small, dependency-free Okapi BM25 index for the demo pipeline.

Scoring, for a query q and a document d of length |d| (in tokens), summed over
the *distinct* query terms t that occur in d::

    idf(t)      = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5))
    score(q, d) = sum_t idf(t) * tf(t, d) * (k1 + 1)
                          / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))

N is the number of documents, n(t) the number containing t, avgdl the mean
document length. The idf is the non-negative variant (Lucene's): the classic
Robertson form goes negative for terms in more than half the documents, which
would let a common word *lower* a document's score. A query term repeated in
the question counts once, so "what is what" does not weigh "what" twice.

Only documents sharing at least one term with the query are returned, best
first; equal scores are broken by id so results never depend on input order.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

K1 = 1.5
B = 0.75

# Deliberately small: English function words that carry no topic. Python
# keywords are never stopwords, however common in prose ("and", "or", "if",
# "as", "from", "is", "not", "in", "for"): in a corpus about a programming
# language they are what people ask about ("the if statement").
# fmt: off
STOPWORDS: frozenset[str] = frozenset((
    "a", "an", "are", "at", "be", "been", "but", "by", "can", "could", "do",
    "does", "did", "had", "has", "have", "how", "i", "into", "it", "its", "me",
    "my", "of", "on", "our", "so", "such", "than", "that", "the", "their", "them",
    "then", "there", "these", "they", "this", "those", "to", "was", "we", "were", "what",
    "when", "where", "which", "who", "whom", "why", "will", "would", "you", "your",
))
# fmt: on

_WORD = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    """Lowercase unicode word tokens, stopwords removed."""
    return [token for token in _WORD.findall(text.lower()) if token not in STOPWORDS]


class BM25Index:
    """An in-memory BM25 index over ``(id, text)`` pairs; ids must be unique."""

    def __init__(self, docs: Sequence[tuple[str, str]], k1: float = K1, b: float = B) -> None:
        self.k1 = k1
        self.b = b
        self.ids: tuple[str, ...] = tuple(doc_id for doc_id, _ in docs)
        if len(set(self.ids)) != len(self.ids):
            duplicates = sorted(i for i, c in Counter(self.ids).items() if c > 1)
            raise ValueError(f"duplicate document ids: {', '.join(duplicates)}")
        # term -> [(doc index, term frequency)]: a query only touches the
        # documents that contain its terms.
        self._postings: dict[str, list[tuple[int, int]]] = {}
        lengths: list[int] = []
        for index, (_, text) in enumerate(docs):
            counts = Counter(tokenize(text))
            lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                self._postings.setdefault(term, []).append((index, tf))
        self.doc_lengths = tuple(lengths)
        n_docs = len(self.ids)
        self.avgdl = sum(lengths) / n_docs if n_docs else 0.0
        self._idf = {
            term: math.log(1.0 + (n_docs - len(posts) + 0.5) / (len(posts) + 0.5))
            for term, posts in self._postings.items()
        }
        # The length normalisation depends only on the document: compute it once.
        self._norm = tuple(
            k1 * (1.0 - b + b * length / self.avgdl) if self.avgdl else k1 for length in lengths
        )

    def __len__(self) -> int:
        return len(self.ids)

    def idf(self, term: str) -> float:
        """The idf of an already tokenized term; 0.0 for a term no document contains."""
        return self._idf.get(term, 0.0)

    def scores(self, query: str) -> dict[str, float]:
        """BM25 score of every document that shares a term with ``query``."""
        totals: dict[int, float] = {}
        for term in dict.fromkeys(tokenize(query)):
            idf = self._idf.get(term)
            if idf is None:
                continue
            for index, tf in self._postings[term]:
                gain = idf * tf * (self.k1 + 1.0) / (tf + self._norm[index])
                totals[index] = totals.get(index, 0.0) + gain
        return {self.ids[index]: score for index, score in totals.items()}

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """The ``k`` best ``(id, score)`` pairs, best first, ties broken by id."""
        if k <= 0:
            return []
        ranked = sorted(self.scores(query).items(), key=lambda item: (-item[1], item[0]))
        return ranked[:k]
