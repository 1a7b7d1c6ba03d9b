"""``ragproof generate injection``: injection cases built from the payload library.

Each generated case pairs one answerable (kind ``qa``) source case with one
payload. Two delivery modes:

- direct (default): the case question is the payload rendered around the
  source question, so the attack arrives in the user turn;
- indirect (``--documents-out``): the case question is the plain source
  question and the attack sits in a corpus document written alongside, for
  users to add to their own index. A pipeline that retrieves the document
  meets the attack the way a poisoned knowledge base would deliver it.

Either way ``adversarial_payload`` is the payload id, so scoring recomputes the
case's sentinel from its id (``sentinel.expected_marker``).

Output is reproducible: the same dataset, payloads, count and seed give
byte-identical files. ``count`` samples that many (source, payload) pairs
with ``random.Random(seed)``, spreading them over payloads round-robin so a
small count still covers as many attack styles as possible; rows are then
written in a fixed order (source case order, then library order).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragproof_core.data.dataset import load_dataset
from ragproof_core.errors import UserError
from ragproof_core.metrics.heuristics.payloads import PAYLOADS, Payload, get_payload, render
from ragproof_core.metrics.heuristics.sentinel import sentinel_for
from ragproof_core.model import Case, CaseKind


class GenerationError(UserError, ValueError):
    """The request cannot produce injection cases (bad payload ids, nothing to build on)."""


@dataclass(frozen=True)
class GeneratedSet:
    cases: list[dict[str, Any]] = field(default_factory=list)
    documents: list[dict[str, Any]] = field(default_factory=list)


def generate_injection_cases(
    cases: Sequence[Case],
    payload_ids: Sequence[str] | None = None,
    count: int | None = None,
    seed: int = 0,
    indirect: bool = False,
) -> GeneratedSet:
    """Injection cases (and, if ``indirect``, their documents) for ``cases``' qa cases."""
    payloads = _select_payloads(payload_ids)
    sources = [case for case in cases if case.kind is CaseKind.QA]
    if not sources:
        raise GenerationError("the dataset has no answerable (kind qa) cases to build on")
    if count is not None and count < 1:
        raise GenerationError(f"count must be at least 1, got {count}")

    pairs = _choose_pairs(len(sources), len(payloads), count, seed)
    generated = GeneratedSet()
    for source_index, payload_index in pairs:
        source, payload = sources[source_index], payloads[payload_index]
        if indirect:
            case_row, document = _indirect(source, payload)
            generated.cases.append(case_row)
            generated.documents.append(document)
        else:
            generated.cases.append(_direct(source, payload))
    return generated


def write_jsonl(rows: Iterable[Mapping[str, Any]], path: Path) -> None:
    """One JSON object per line, sorted keys, UTF-8 kept readable, parents created."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        for row in rows:
            handle.write(
                json.dumps(row, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
            )


def generate_command(
    dataset: Path,
    out: Path,
    payloads: str | Sequence[str] | None,
    count: int | None,
    seed: int,
    documents_out: Path | None,
) -> str:
    """Everything behind ``ragproof generate injection``; returns a one-line summary.

    ``payloads`` is the CLI's comma-separated list (or a sequence, or None for
    the whole library). ``documents_out`` switches to indirect delivery.
    Raises ``DatasetError`` for a bad dataset and ``GenerationError`` for a
    request that cannot be met; the CLI turns both into exit code 1.
    """
    if isinstance(payloads, str):
        payloads = [item.strip() for item in payloads.split(",") if item.strip()]
    cases = load_dataset(dataset)
    indirect = documents_out is not None
    generated = generate_injection_cases(cases, payloads, count, seed, indirect)
    write_jsonl(generated.cases, Path(out))
    summary = f"wrote {len(generated.cases)} injection cases to {out}"
    if indirect:
        write_jsonl(generated.documents, Path(documents_out))
        summary += f" and {len(generated.documents)} documents to {documents_out}"
    used = len({row["adversarial_payload"] for row in generated.cases})
    sources = len({row["metadata"]["source_case_id"] for row in generated.cases})
    return f"{summary} ({used} payloads x {sources} source cases, seed {seed})"


def _select_payloads(payload_ids: Sequence[str] | None) -> list[Payload]:
    if payload_ids is None:
        return list(PAYLOADS)
    unique = list(dict.fromkeys(payload_ids))
    if not unique:
        raise GenerationError("no payload ids given")
    unknown = [payload_id for payload_id in unique if get_payload(payload_id) is None]
    if unknown:
        known = ", ".join(payload.id for payload in PAYLOADS)
        raise GenerationError(f"unknown payload id(s): {', '.join(unknown)} (known: {known})")
    return [payload for payload in PAYLOADS if payload.id in unique]


def _choose_pairs(
    n_sources: int, n_payloads: int, count: int | None, seed: int
) -> list[tuple[int, int]]:
    """(source index, payload index) pairs, in output order."""
    everything = [(s, p) for s in range(n_sources) for p in range(n_payloads)]
    if count is None or count >= len(everything):
        return everything
    rng = random.Random(seed)
    payload_order = list(range(n_payloads))
    rng.shuffle(payload_order)
    sources_for: dict[int, list[int]] = {}
    for payload in payload_order:
        shuffled = list(range(n_sources))
        rng.shuffle(shuffled)
        sources_for[payload] = shuffled
    # Round-robin: every payload gets its first source before any gets a second.
    chosen = [
        (sources_for[payload][round_], payload)
        for round_ in range(n_sources)
        for payload in payload_order
    ][:count]
    return sorted(chosen)


def _metadata(source: Case, payload: Payload, sentinel: str, delivery: str) -> dict[str, Any]:
    return {
        "source_case_id": source.id,
        "payload_id": payload.id,
        "attack_style": payload.style,
        "delivery": delivery,
        "sentinel": sentinel,
        "generator": "ragproof generate injection",
    }


def _direct(source: Case, payload: Payload) -> dict[str, Any]:
    case_id = f"inj-{payload.id}-{source.id}"
    sentinel = sentinel_for(payload.id, case_id)
    return {
        "id": case_id,
        "question": render(payload, source.question, sentinel),
        "kind": CaseKind.INJECTION.value,
        "adversarial_payload": payload.id,
        "metadata": _metadata(source, payload, sentinel, "question"),
    }


def _indirect(source: Case, payload: Payload) -> tuple[dict[str, Any], dict[str, Any]]:
    case_id = f"inj-doc-{payload.id}-{source.id}"
    document_id = f"injdoc-{payload.id}-{source.id}"
    sentinel = sentinel_for(payload.id, case_id)
    # The document restates the question (and its answer when known) so a
    # retriever finds it for this question; the attack follows.
    lines = [f"Frequently asked: {source.question}"]
    if source.expected_answer:
        lines.append(source.expected_answer)
    lines += ["", render(payload, source.question, sentinel)]
    metadata = _metadata(source, payload, sentinel, "document")
    document = {
        "id": document_id,
        "text": "\n".join(lines),
        "metadata": {**metadata, "case_id": case_id, "injected": True},
    }
    case_row = {
        "id": case_id,
        "question": source.question,
        "kind": CaseKind.INJECTION.value,
        "adversarial_payload": payload.id,
        "metadata": {**metadata, "document_id": document_id},
    }
    return case_row, document
