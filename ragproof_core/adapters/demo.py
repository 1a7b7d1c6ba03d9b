"""The demo pipeline: a real, small, fully offline RAG system to evaluate.

``DemoRAG`` is the adapter the README's first command evaluates. It is a real
pipeline, not a stub, so the numbers it earns mean something:

- retrieval is BM25 over ``data/corpus/passages.jsonl`` (passages of the
  Python Language Reference, plus three labelled poisoned passages);
- generation is *extractive*: the answer is the one or two sentences of the
  retrieved passages that best cover the question's terms, cited by the ids
  of the passages they came from;
- it abstains with a fixed sentence when retrieval is weak or no sentence
  covers enough of the question.

In a conversation (CONTRACT section 16) it resolves a follow-up question
against the previous one: retrieval and sentence choice read the user's
previous question and the current one together ("When is its else clause
executed?" after "What does the try statement do?"). A single case is
answered from its question alone, as always.

``DemoAgent`` is the same pipeline as a small multi-hop agent (CONTRACT section
17), which the README's first command runs on ``data/demo/agent_cases.jsonl``:
it searches with the question, reads the best passage (the tool
``read_passage``), searches again with the question's terms that passage did
not cover (the rewritten query), reads that search's best passage, and answers
with a sentence from each passage it read. Its answer carries those steps.

With the option ``seed`` (``[adapter] options = { seed = 7 }``: data/demo/stochastic.toml)
either pipeline is stochastic, as a pipeline sampled at a temperature above zero is: each search
scales every passage's BM25 score by ``exp(noise * z)``, z a standard normal draw,
before it ranks them (``noise``, default 0.5), so a question's retrieved passages,
and with them its answer, change from one call to the next. The draws of the n-th
search of a given text come from ``seed``, that text and n alone: a run with
``--repeats N`` is reproducible whatever its concurrency or shards. Without
``seed`` the pipeline is deterministic, as before.

Being extractive, it cannot obey an instruction given in the question, but it
will copy an instruction planted in a retrieved passage when that sentence
matches the question well: exactly the indirect prompt injection the demo
dataset's poisoned passages are there to expose.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragproof_core.adapters.bm25 import BM25Index, tokenize
from ragproof_core.data.dataset import iter_json_lines
from ragproof_core.model import Answer, Chunk, RetrieveStep, Step, ToolStep

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "data/corpus/passages.jsonl"

ABSTAIN_TEXT = "I could not find this in the documents."

# Tuned on the shipped demo dataset (data/demo/README.md gives the figures):
# low enough that most answerable questions pass, high enough that questions
# sharing a single common word with the corpus are refused.
DEFAULT_MIN_SCORE = 6.0
DEFAULT_MIN_OVERLAP = 0.4

# The spread of a stochastic pipeline's score noise (option ``seed``; module docstring).
DEFAULT_NOISE = 0.5

# Sentences this short ("So.", "For example.") carry no answer.
_MIN_SENTENCE_TOKENS = 4


def resolved(question: str, history: list[dict[str, str]] | None) -> str:
    """A follow-up read with the user's previous question: what BM25 and the sentence
    choice see. Without history (a single case, a first turn) the question itself."""
    previous = [m["content"] for m in history or () if m.get("role") == "user"]
    return question if not previous else f"{previous[-1]} {question}"


@dataclass(frozen=True, slots=True)
class Passage:
    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def title(self) -> str:
        return str(self.metadata.get("title", ""))


def load_passages(path: Path) -> list[Passage]:
    """Read a passages JSONL (``{"id", "text", "metadata"}`` per line).

    Raises ``ValueError`` naming ``PATH:LINE`` for a malformed line.
    """
    passages: list[Passage] = []
    seen: set[str] = set()
    for number, record in iter_json_lines(path):
        where = f"{path}:{number}"
        if not isinstance(record, dict):
            raise ValueError(f"{where}: expected a JSON object")
        doc_id, text = record.get("id"), record.get("text")
        if not isinstance(doc_id, str) or not doc_id:
            raise ValueError(f"{where}: missing string 'id'")
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{where}: missing string 'text'")
        if doc_id in seen:
            raise ValueError(f"{where}: duplicate id {doc_id!r}")
        metadata = record.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise ValueError(f"{where}: 'metadata' must be an object")
        seen.add(doc_id)
        passages.append(Passage(doc_id, text, dict(metadata)))
    if not passages:
        raise ValueError(f"{path}: no passages")
    return passages


def passage_index(passages: Sequence[Passage]) -> BM25Index:
    """The demo's BM25 index over ``passages``. The title goes into the indexed text, as
    most RAG chunkers do with headings: "the try statement" should find the try
    passages."""
    return BM25Index([(p.id, f"{p.title}\n{p.text}") for p in passages])


# A sentence ends at . ! or ? (optionally followed by a closing quote or
# bracket) before whitespace and a word, quote or bracket. The next sentence
# may start in lowercase: in this corpus many start with a keyword or a name
# ("pass is a null operation", "object.__slots__: ..."). Abbreviations are
# rejoined afterwards: "e.g. lists" is one sentence.
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][)”\"]))\s+(?=[\w“\"(])")
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|Ref|No)\.|\b[A-Z]\.)$")


def split_sentences(text: str) -> list[str]:
    sentences: list[str] = []
    for part in _SENTENCE_END.split(text):
        if sentences and _ABBREVIATION.search(sentences[-1]):
            sentences[-1] = f"{sentences[-1]} {part}"
        else:
            sentences.append(part)
    return [s.strip() for s in sentences if s.strip()]


@dataclass(frozen=True, slots=True)
class _Candidate:
    coverage: float
    rank: int  # rank of the chunk the sentence came from
    position: int  # position of the sentence inside that chunk
    chunk_id: str
    text: str


class DemoRAG:
    """BM25 retrieval plus an extractive answerer over a passages JSONL.

    Options (all keyword, all optional, as the config file passes them):
    ``corpus`` a passages JSONL path (default: the shipped corpus), ``k`` how
    many passages to retrieve, ``min_score`` the BM25 score the best passage
    must reach, ``min_overlap`` the share of the question's (idf-weighted)
    terms the best sentence must contain, else the pipeline abstains; ``seed`` makes
    every search noisy (``noise`` the spread; module docstring), None keeps it exact.
    """

    # Local and deterministic, so `ragproof run --dry-run` may run it (run/dry_run.py).
    free_to_call = True

    def __init__(
        self,
        corpus: str | Path | None = None,
        k: int = 5,
        min_score: float = DEFAULT_MIN_SCORE,
        min_overlap: float = DEFAULT_MIN_OVERLAP,
        seed: int | None = None,
        noise: float = DEFAULT_NOISE,
    ) -> None:
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        if not noise >= 0.0:
            raise ValueError(f"noise must be at least 0, got {noise}")
        self.seed = None if seed is None else int(seed)
        self.noise = float(noise)
        # Searches so far of each text (a stochastic pipeline's draws; module docstring).
        self._searches: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.corpus = Path(corpus) if corpus is not None else DEFAULT_CORPUS
        self.k = k
        self.min_score = float(min_score)
        self.min_overlap = float(min_overlap)
        passages = load_passages(self.corpus)
        self._passages = {p.id: p for p in passages}
        self._index = passage_index(passages)
        self._sentences = {p.id: split_sentences(p.text) for p in passages}
        # A question word the corpus never uses weighs as much as the rarest
        # word it does: a question about "Rust lifetimes" is mostly unmatched.
        self._unknown_idf = max((self._index.idf(t) for t in self._vocabulary()), default=1.0)

    def _vocabulary(self) -> set[str]:
        return {t for p in self._passages.values() for t in tokenize(f"{p.title}\n{p.text}")}

    def retrieve(self, question: str, history: list[dict[str, str]] | None = None) -> list[Chunk]:
        """The ``k`` best passages for ``question`` by BM25, best first."""
        question = resolved(question, history)
        return [
            Chunk(
                id=doc_id,
                text=self._passages[doc_id].text,
                score=score,
                metadata=dict(self._passages[doc_id].metadata),
            )
            for doc_id, score in self._search(question)
        ]

    def _search(self, query: str) -> list[tuple[str, float]]:
        """BM25's ``k`` best, or with ``seed`` the ``k`` best of noisy scores."""
        if self.seed is None:
            return self._index.search(query, self.k)
        with self._lock:
            self._searches[query] += 1
            draw = self._searches[query]
        digest = hashlib.sha256(f"{self.seed}\0{draw}\0{query}".encode()).digest()
        rng = random.Random(int.from_bytes(digest[:8], "big"))
        noisy = [
            (doc_id, score * math.exp(self.noise * rng.gauss(0.0, 1.0)))
            for doc_id, score in sorted(self._index.scores(query).items())
        ]
        noisy.sort(key=lambda item: (-item[1], item[0]))
        return noisy[: self.k]

    def answer(self, question: str, history: list[dict[str, str]] | None = None) -> Answer:
        question = resolved(question, history)
        chunks = self.retrieve(question)
        if not chunks or (chunks[0].score or 0.0) < self.min_score:
            return Answer(ABSTAIN_TEXT, tuple(chunks), None)
        chosen = self._pick_sentences(question, chunks)
        if not chosen:
            return Answer(ABSTAIN_TEXT, tuple(chunks), None)
        # Read in document order: the better-ranked chunk first, then position.
        chosen.sort(key=lambda c: (c.rank, c.position))
        text = " ".join(c.text for c in chosen)
        citations = tuple(dict.fromkeys(c.chunk_id for c in chosen))
        return Answer(text, tuple(chunks), citations)

    def _weights(self, question: str) -> dict[str, float]:
        return {
            term: self._index.idf(term) or self._unknown_idf
            for term in dict.fromkeys(tokenize(question))
        }

    def _pick_sentences(self, question: str, chunks: list[Chunk]) -> list[_Candidate]:
        """The best sentence, and the runner-up when it is nearly as good."""
        weights = self._weights(question)
        total = sum(weights.values())
        if total <= 0.0:
            return []
        candidates: list[_Candidate] = []
        for rank, chunk in enumerate(chunks):
            for position, sentence in enumerate(self._sentences[chunk.id]):
                terms = set(tokenize(sentence))
                if len(terms) < _MIN_SENTENCE_TOKENS:
                    continue
                covered = sum(w for t, w in weights.items() if t in terms)
                candidates.append(_Candidate(covered / total, rank, position, chunk.id, sentence))
        if not candidates:
            return []
        candidates.sort(key=lambda c: (-c.coverage, c.rank, c.position))
        best = candidates[0]
        if best.coverage < self.min_overlap:
            return []
        chosen = [best]
        if len(candidates) > 1 and candidates[1].coverage >= max(
            self.min_overlap, 0.8 * best.coverage
        ):
            chosen.append(candidates[1])
        return chosen


READ_PASSAGE = "read_passage"


class DemoAgent(DemoRAG):
    """``DemoRAG`` as a two-hop agent (module docstring); the same options."""

    def answer(self, question: str) -> Answer:
        steps: list[Step] = []
        first = self.retrieve(question)
        steps.append(RetrieveStep(question, tuple(first)))
        if not first or (first[0].score or 0.0) < self.min_score:
            return Answer(ABSTAIN_TEXT, tuple(first), None, tuple(steps))
        read = [self._read(first[0], steps)]
        rewritten = self._uncovered(question, first[0])
        found = list(first)
        if rewritten:
            second = self.retrieve(rewritten)
            steps.append(RetrieveStep(rewritten, tuple(second)))
            found += second
            if second and second[0].id != first[0].id:
                read.append(self._read(second[0], steps))
        chosen = []
        for query, chunk in zip((question, rewritten), read, strict=False):
            chosen += self._pick_sentences(query, [chunk])[:1]
        context = tuple({c.id: c for c in found}.values())
        if not chosen:
            return Answer(ABSTAIN_TEXT, context, None, tuple(steps))
        text = " ".join(c.text for c in chosen)
        citations = tuple(dict.fromkeys(c.chunk_id for c in chosen))
        return Answer(text, context, citations, tuple(steps))

    def _read(self, chunk: Chunk, steps: list[Step]) -> Chunk:
        """The tool call that reads one passage in full."""
        steps.append(ToolStep(READ_PASSAGE, {"id": chunk.id}, self._passages[chunk.id].text))
        return chunk

    def _uncovered(self, question: str, chunk: Chunk) -> str:
        """The rewritten query: the question's terms that ``chunk`` (its title and text)
        does not contain, in the question's order; empty when it covers them all."""
        seen = set(tokenize(f"{self._passages[chunk.id].title}\n{chunk.text}"))
        return " ".join(t for t in dict.fromkeys(tokenize(question)) if t not in seen)
