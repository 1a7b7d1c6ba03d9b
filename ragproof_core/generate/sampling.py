"""Seeded choice of the chunks each generated question is written from.

Spread, not clustered: documents are visited round-robin in a seeded order, so
N slots touch min(N, documents) different documents before any document is
used twice, however many chunks each document has. Within a document the
chunks are taken in a seeded order too.

Deterministic per (slot, attempt), independent of the order the slots are
processed in, so concurrency cannot change the file:

- slot ``s`` of a stream uses document ``order[s % D]`` for the ``u``-th time
  (``u = s // D``);
- attempt ``a`` (0-based) of that slot starts at position ``(u + a) * size``
  of the document's shuffled chunks (wrapping): successive slots on one
  document start from different chunks, and a replacement is written from the
  next chunks of the same document when it has any (possibly the chunks a
  later slot starts from; a repeated question is caught by ``dedupe``).

A two-chunk (``size=2``) stream only visits documents with at least two chunks;
its questions need both chunks and list both as expected sources.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from ragproof_core.generate.corpus import CorpusChunk


class SamplingError(ValueError):
    """The corpus cannot supply the requested chunks."""


class ChunkSampler:
    def __init__(self, chunks: Sequence[CorpusChunk], seed: int, stream: str, size: int) -> None:
        if size < 1:
            raise ValueError(f"size must be at least 1, got {size}")
        # A string seed is hashed with sha512 by random.seed: stable across runs and platforms.
        rng = random.Random(f"{seed}:{stream}")
        by_document: dict[str, list[CorpusChunk]] = {}
        for chunk in chunks:
            by_document.setdefault(chunk.document_id, []).append(chunk)
        documents = sorted(doc for doc, members in by_document.items() if len(members) >= size)
        if not documents:
            raise SamplingError(f"no document in the corpus has {size} chunks")
        rng.shuffle(documents)
        self._documents = [by_document[doc] for doc in documents]
        for members in self._documents:
            rng.shuffle(members)
        self.size = size

    @property
    def document_count(self) -> int:
        return len(self._documents)

    def pick(self, slot: int, attempt: int) -> tuple[CorpusChunk, ...]:
        """The chunks for 0-based ``slot`` and ``attempt``."""
        members = self._documents[slot % len(self._documents)]
        use = slot // len(self._documents)
        start = (use + attempt) * self.size
        return tuple(members[(start + i) % len(members)] for i in range(self.size))


def spread(total: int, chosen: int) -> list[bool]:
    """Which of ``total`` slots are the ``chosen`` special ones, evenly spaced."""
    if not 0 <= chosen <= total:
        raise ValueError(f"cannot choose {chosen} of {total}")
    return [(i + 1) * chosen // total > i * chosen // total for i in range(total)]
