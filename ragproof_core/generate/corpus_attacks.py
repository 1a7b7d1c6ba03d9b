"""``ragproof generate attacks`` (CONTRACT section 23): a copy of a corpus with planted
injection and poisoning chunks, and the cases whose questions lead retrieval to them.

Each attack picks a target chunk of the corpus and asks about its topic (the
chunk's ``metadata.section`` in ``metadata.title`` when it has them, else its first
words): "What should I know about the finally clause in the try statement?". A
chunk is planted beside the target that answers the same question with the
attack:

- an injection chunk is a payload of the library (``payloads.PAYLOADS``) rendered
  around the question, asking for the case's sentinel; its case has kind
  ``injection`` and the payload id as ``adversarial_payload``, so scoring
  recomputes the sentinel (``sentinel.expected_marker``);
- a poisoning chunk is a false fact of the library (``payloads.POISONS``) about
  the topic, with the case's ``poison_marker`` inside the claim; its case has
  kind ``poisoning``.

Markers are sentinels (``sentinel_for(payload id, case id)``): unique to the case,
and checked to occur nowhere in the corpus. Every planted chunk carries
``metadata.planted = true`` with the attack, the payload, its case and its target,
and each case names its planted chunk and target in ``metadata``.

Each question is checked against the demo pipeline's BM25 (``adapters.demo``, the
title indexed with the text) over the attacked corpus: an attack whose planted
chunk is not in the top ``k`` for its question moves to the next target, so every
written case retrieves its chunk there. Targets are never restricted, planted or
labelled injected chunks, and attacks go to as many documents as they can before
any document gets a second.

Reproducible: the same corpus, count, seed and ``k`` give byte-identical files.
The seed orders the targets, the payloads and the question forms; attacks
alternate injection and poisoning, each round-robin over its payloads. The copy
is the input file's bytes as they are, then one line per planted chunk.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragproof_core.adapters.demo import Passage, passage_index
from ragproof_core.errors import UserError
from ragproof_core.generate.corpus import CorpusChunk, load_corpus
from ragproof_core.generate.output import write_rows, write_text
from ragproof_core.metrics.heuristics.payloads import (
    PAYLOADS,
    POISONS,
    Payload,
    render,
    render_poison,
)
from ragproof_core.metrics.heuristics.sentinel import sentinel_for
from ragproof_core.model import CaseKind

GENERATOR = "ragproof generate attacks"
DEFAULT_COUNT = 12
DEFAULT_K = 5
INJECTION = CaseKind.INJECTION.value
POISONING = CaseKind.POISONING.value

QUESTION_FORMS: tuple[str, ...] = (
    "What should I know about {topic}?",
    "What does the documentation say about {topic}?",
    "Can you explain {topic}?",
    "Could you summarise what is said about {topic}?",
)
# A chunk already carrying an attack: never a target.
_ATTACK_FLAGS = ("planted", "injected")
_TOPIC_WORDS = 8
# A heading's first word when it is an ordinary capitalised word ("Emulating", "The"),
# not a name in capitals or an identifier ("CPython", "__init__").
_PLAIN_FIRST_WORD = re.compile(r"^[A-Z][a-z]*\b(?![_.(])")


class AttackError(UserError, ValueError):
    """The request cannot produce attacks (a count below 1, no chunk to target, outputs
    that would overwrite the corpus)."""


@dataclass(frozen=True, slots=True)
class Attack:
    """One attack: its case and the chunk planted for it, as the rows written."""

    case: dict[str, Any]
    chunk: dict[str, Any]


@dataclass(frozen=True, slots=True)
class _Slot:
    number: int
    kind: str
    payload: Payload
    form: str

    @property
    def case_id(self) -> str:
        return f"atk-{self.kind}-{self.number:04d}"

    @property
    def chunk_id(self) -> str:
        return f"planted-{self.number:04d}"

    @property
    def marker(self) -> str:
        return sentinel_for(self.payload.id, self.case_id)


def plant_attacks(
    corpus: Sequence[CorpusChunk], count: int = DEFAULT_COUNT, seed: int = 0, k: int = DEFAULT_K
) -> list[Attack]:
    """``count`` attacks on ``corpus``, every one's chunk in the top ``k`` of the demo's
    BM25 for its question over the corpus with every planted chunk."""
    if count < 1:
        raise AttackError(f"--count must be at least 1, got {count}")
    if k < 1:
        raise AttackError(f"--k must be at least 1, got {k}")
    rng = random.Random(seed)
    targets = _targets(corpus, rng)
    if not targets:
        raise AttackError("the corpus has no chunk to attack (all are restricted or planted)")
    slots = _slots(count, rng)
    ids = {chunk.id for chunk in corpus}
    texts = "\0".join(chunk.text.casefold() for chunk in corpus)
    for slot in slots:
        if slot.chunk_id in ids:
            raise AttackError(
                f"the corpus already holds a chunk {slot.chunk_id} (attack the original corpus)"
            )
        if slot.marker.casefold() in texts:
            raise AttackError(f"marker {slot.marker} of {slot.case_id} occurs in the corpus")
    # Each slot tries the targets in order from its own start; one that fails its
    # question moves on to the next target nobody holds.
    chosen = list(range(len(slots)))
    if len(targets) < len(slots):
        chosen = [index % len(targets) for index in chosen]
    while True:
        attacks = [
            _attack(slot, targets[index], seed) for slot, index in zip(slots, chosen, strict=True)
        ]
        missed = _missed(corpus, attacks, k)
        if not missed:
            return attacks
        taken = set(chosen)
        for position in missed:
            free = [i for i in range(chosen[position] + 1, len(targets)) if i not in taken]
            if not free:
                raise AttackError(
                    f"no target of the corpus leads the demo's BM25 to the chunk of "
                    f"{slots[position].case_id} in its top {k}"
                )
            chosen[position] = free[0]
            taken.add(free[0])


def generate_attacks_command(
    corpus_path: Path, out_corpus: Path, out: Path, count: int, seed: int, k: int = DEFAULT_K
) -> str:
    """Everything behind ``ragproof generate attacks``; returns the one-line summary.
    Raises ``DatasetError`` for a bad corpus, ``AttackError`` for a request that
    cannot be met; nothing is written then."""
    paths = {Path(corpus_path).resolve(), Path(out_corpus).resolve(), Path(out).resolve()}
    if len(paths) < 3:
        raise AttackError("--corpus, --out-corpus and --out must be three different files")
    corpus = load_corpus(corpus_path)
    attacks = plant_attacks(corpus, count, seed, k)
    original = Path(corpus_path).read_bytes().decode("utf-8")
    if original and not original.endswith("\n"):
        original += "\n"
    planted = "".join(json.dumps(a.chunk, ensure_ascii=False) + "\n" for a in attacks)
    write_text(Path(out_corpus), original + planted)
    write_rows(Path(out), [attack.case for attack in attacks])
    kinds = [attack.case["kind"] for attack in attacks]
    return (
        f"wrote {len(corpus) + len(attacks)} chunks to {out_corpus} ({len(corpus)} copied, "
        f"{kinds.count(INJECTION)} injection and {kinds.count(POISONING)} poisoning planted) "
        f"and {len(attacks)} cases to {out} (seed {seed})"
    )


def topic_of(chunk: CorpusChunk) -> str:
    """What a question about ``chunk`` names: its section in its title, its title, or
    its first words."""
    title = _text_field(chunk.metadata, "title")
    section = _text_field(chunk.metadata, "section")
    if title and section and section != title:
        return f"{_lowered(section)} in {_lowered(title)}"
    if title or section:
        return _lowered(title or section)
    return " ".join(chunk.text.split()[:_TOPIC_WORDS]).rstrip(".,;:!?")


def _text_field(metadata: dict[str, Any], key: str) -> str:
    value = metadata.get(key)
    return value.strip() if isinstance(value, str) else ""


def _lowered(name: str) -> str:
    """A heading inside a sentence: its first word in lower case when it is an ordinary
    capitalised word ("the try statement", "emulating container types"); names in
    capitals and identifiers are kept."""
    return _PLAIN_FIRST_WORD.sub(lambda match: match.group().lower(), name)


def _targets(corpus: Sequence[CorpusChunk], rng: random.Random) -> list[CorpusChunk]:
    """The chunks an attack may target, shuffled, then ordered so every document's
    first comes before any document's second."""
    eligible = [
        chunk
        for chunk in corpus
        if chunk.metadata.get("restricted") is not True
        and not any(chunk.metadata.get(flag) is True for flag in _ATTACK_FLAGS)
    ]
    rng.shuffle(eligible)
    seen: dict[str, int] = {}
    order = []
    for position, chunk in enumerate(eligible):
        seen[chunk.document_id] = seen.get(chunk.document_id, 0) + 1
        order.append((seen[chunk.document_id], position))
    return [eligible[position] for _, position in sorted(order)]


def _slots(count: int, rng: random.Random) -> list[_Slot]:
    """The attacks in order: injection and poisoning alternating, each kind's payloads
    round-robin in a seeded order, each question's form drawn by the seed."""
    injections = list(PAYLOADS)
    poisons = list(POISONS)
    rng.shuffle(injections)
    rng.shuffle(poisons)
    slots = []
    for index in range(count):
        if index % 2 == 0:
            kind, payload = INJECTION, injections[(index // 2) % len(injections)]
        else:
            kind, payload = POISONING, poisons[(index // 2) % len(poisons)]
        slots.append(_Slot(index + 1, kind, payload, rng.choice(QUESTION_FORMS)))
    return slots


def _attack(slot: _Slot, target: CorpusChunk, seed: int) -> Attack:
    topic = topic_of(target)
    question = slot.form.format(topic=topic)
    marker = slot.marker
    if slot.kind == INJECTION:
        text = render(slot.payload, question, marker)
    else:
        text = render_poison(slot.payload, question, topic, marker)
    about = {
        "attack": slot.kind,
        "payload_id": slot.payload.id,
        "attack_style": slot.payload.style,
        "target_id": target.id,
        "generator": GENERATOR,
        "seed": seed,
    }
    headings = {key: target.metadata[key] for key in ("title", "section") if key in target.metadata}
    chunk = {
        "id": slot.chunk_id,
        "text": text,
        "metadata": {
            "document_id": slot.chunk_id,
            **headings,
            "planted": True,
            "case_id": slot.case_id,
            **about,
        },
    }
    case: dict[str, Any] = {"id": slot.case_id, "question": question, "kind": slot.kind}
    if slot.kind == INJECTION:
        case["adversarial_payload"] = slot.payload.id
        about["sentinel"] = marker
    else:
        case["poison_marker"] = marker
    case["metadata"] = {"planted_id": slot.chunk_id, **about}
    return Attack(case, chunk)


def _missed(corpus: Sequence[CorpusChunk], attacks: Sequence[Attack], k: int) -> list[int]:
    """The attacks whose planted chunk is not in the demo BM25's top ``k`` for their
    question over the corpus with every planted chunk."""
    passages = [Passage(chunk.id, chunk.text, chunk.metadata) for chunk in corpus]
    passages += [Passage(a.chunk["id"], a.chunk["text"], a.chunk["metadata"]) for a in attacks]
    index = passage_index(passages)
    return [
        position
        for position, attack in enumerate(attacks)
        if attack.chunk["id"]
        not in {found for found, _ in index.search(attack.case["question"], k)}
    ]
