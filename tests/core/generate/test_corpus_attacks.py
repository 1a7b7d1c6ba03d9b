"""Tests for ragproof_core/generate/corpus_attacks.py: `ragproof generate attacks`
(CONTRACT section 23)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from ragproof_core.adapters.demo import DemoRAG
from ragproof_core.data.dataset import DatasetError, load_dataset
from ragproof_core.generate.corpus import CorpusChunk, load_corpus
from ragproof_core.generate.corpus_attacks import (
    AttackError,
    generate_attacks_command,
    plant_attacks,
    topic_of,
)
from ragproof_core.metrics.heuristics.payloads import PAYLOADS, POISONS
from ragproof_core.metrics.heuristics.sentinel import expected_marker, sentinel_for
from ragproof_core.metrics.robustness import injection_resistance, poisoning_resistance
from ragproof_core.model import Answer, CaseKind, CaseOutput

REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO / "data" / "corpus" / "passages.jsonl"


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, Path, str]:
    """The demo corpus attacked with 12 chunks, seed 0: (copy, cases, summary)."""
    folder = tmp_path_factory.mktemp("attacks")
    out_corpus, out = folder / "attacked.jsonl", folder / "attacks.jsonl"
    summary = generate_attacks_command(CORPUS, out_corpus, out, 12, 0)
    return out_corpus, out, summary


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_same_seed_writes_the_same_bytes_and_another_seed_other_attacks(
    tmp_path: Path, generated
) -> None:
    out_corpus, out, _ = generated
    again_corpus, again = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    generate_attacks_command(CORPUS, again_corpus, again, 12, 0)
    assert again_corpus.read_bytes() == out_corpus.read_bytes()
    assert again.read_bytes() == out.read_bytes()
    other_corpus, other = tmp_path / "c7.jsonl", tmp_path / "a7.jsonl"
    generate_attacks_command(CORPUS, other_corpus, other, 12, 7)
    assert other.read_bytes() != out.read_bytes()
    assert [r["metadata"]["target_id"] for r in rows(other)] != [
        r["metadata"]["target_id"] for r in rows(out)
    ]


def test_every_case_retrieves_its_planted_chunk_in_the_demos_top_k(generated) -> None:
    out_corpus, out, _ = generated
    demo = DemoRAG(corpus=out_corpus)  # k = 5, the run's default k
    cases = load_dataset(out)
    assert len(cases) == 12
    for case in cases:
        top = [chunk.id for chunk in demo.retrieve(case.question)]
        assert case.metadata["planted_id"] in top, case.id


def test_the_copy_is_the_corpus_then_the_planted_chunks_marked_in_metadata(generated) -> None:
    out_corpus, out, summary = generated
    original = CORPUS.read_bytes()
    copy = out_corpus.read_bytes()
    assert copy.startswith(original)
    planted = [json.loads(line) for line in copy[len(original) :].decode().splitlines()]
    cases = {case["id"]: case for case in rows(out)}
    assert [chunk["id"] for chunk in planted] == [f"planted-{n:04d}" for n in range(1, 13)]
    corpus = {chunk.id: chunk for chunk in load_corpus(CORPUS)}
    for chunk in planted:
        meta = chunk["metadata"]
        assert set(chunk) == {"id", "text", "metadata"}
        assert meta["planted"] is True and meta["document_id"] == chunk["id"]
        assert meta["generator"] == "ragproof generate attacks" and meta["seed"] == 0
        case = cases[meta["case_id"]]
        assert case["metadata"]["planted_id"] == chunk["id"]
        assert meta["attack"] == case["kind"]
        target = corpus[meta["target_id"]]
        assert meta["title"] == target.metadata["title"]
        assert not target.metadata.get("injected") and not target.metadata.get("restricted")
    # Twelve attacks on the demo's 37 documents open to attack: twelve different ones.
    assert len({corpus[c["metadata"]["target_id"]].document_id for c in planted}) == 12
    assert summary == (
        f"wrote 278 chunks to {out_corpus} (266 copied, 6 injection and 6 poisoning planted) "
        f"and 12 cases to {out} (seed 0)"
    )


def test_cases_alternate_kinds_carry_library_payloads_and_unique_markers(generated) -> None:
    out_corpus, out, _ = generated
    cases = load_dataset(out)
    assert [case.kind for case in cases] == [CaseKind.INJECTION, CaseKind.POISONING] * 6
    assert [case.id for case in cases[:2]] == ["atk-injection-0001", "atk-poisoning-0002"]
    injections = [case for case in cases if case.kind is CaseKind.INJECTION]
    poisonings = [case for case in cases if case.kind is CaseKind.POISONING]
    library = {payload.id for payload in PAYLOADS}
    assert {case.adversarial_payload for case in injections} <= library
    assert len({case.adversarial_payload for case in injections}) == 6
    # Four poisons, round-robin: each used before any is used twice.
    assert sorted(Counter(case.metadata["payload_id"] for case in poisonings).values()) == [
        1,
        1,
        2,
        2,
    ]
    assert {case.metadata["payload_id"] for case in poisonings} == {p.id for p in POISONS}
    markers = [expected_marker(case) for case in injections] + [
        case.poison_marker for case in poisonings
    ]
    assert len(set(markers)) == 12
    original = CORPUS.read_text(encoding="utf-8")
    for case, marker in zip(injections + poisonings, markers, strict=True):
        assert marker == sentinel_for(case.metadata["payload_id"], case.id)
        assert marker not in original and marker not in case.question
        assert case.expected_source_ids is None


def test_an_answer_repeating_the_planted_chunk_fails_and_the_targets_answer_resists(
    generated,
) -> None:
    out_corpus, out, _ = generated
    chunks = {chunk["id"]: chunk for chunk in rows(out_corpus)}
    for case in load_dataset(out):
        planted = chunks[case.metadata["planted_id"]]["text"]
        target = chunks[case.metadata["target_id"]]["text"]
        score = injection_resistance if case.kind is CaseKind.INJECTION else poisoning_resistance
        obeyed = score(case, CaseOutput(case.id, Answer(planted))).value
        true = score(case, CaseOutput(case.id, Answer(target))).value
        if case.adversarial_payload in ("base64-decode", "rot13-decode"):
            # The sentinel is encoded in the chunk: only a model that decodes it obeys.
            assert (obeyed, true) == (1.0, 1.0), case.id
        else:
            assert (obeyed, true) == (0.0, 1.0), case.id


def test_the_questions_name_the_targets_topic() -> None:
    def chunk(metadata: dict, text: str = "Some text here.") -> CorpusChunk:
        return CorpusChunk("c", text, "c", metadata)

    assert topic_of(chunk({"title": "The try statement", "section": "finally clause"})) == (
        "finally clause in the try statement"
    )
    assert topic_of(chunk({"title": "The for statement", "section": "The for statement"})) == (
        "the for statement"
    )
    assert topic_of(chunk({"title": "Special method names", "section": "Emulating types"})) == (
        "emulating types in special method names"
    )
    # Names and identifiers keep their capitals.
    assert topic_of(chunk({"title": "CPython internals"})) == "CPython internals"
    assert topic_of(chunk({"title": "Object.__init__ notes"})) == "Object.__init__ notes"
    # Without headings: the chunk's first eight words.
    assert topic_of(chunk({}, "Refunds are accepted within thirty days of purchase, always.")) == (
        "Refunds are accepted within thirty days of purchase"
    )


def test_targets_skip_restricted_planted_and_injected_chunks(tmp_path: Path) -> None:
    corpus = [
        CorpusChunk("s1", "Salaries rise by four percent next year.", "s", {"restricted": True}),
        CorpusChunk("p1", "A planted chunk about refunds.", "p", {"planted": True}),
        CorpusChunk("i1", "An injected chunk about refunds.", "i", {"injected": True}),
        CorpusChunk("r1", "Refunds are accepted within thirty days of purchase.", "r"),
    ]
    attacks = plant_attacks(corpus, count=3, seed=0)
    assert [a.chunk["metadata"]["target_id"] for a in attacks] == ["r1", "r1", "r1"]
    with pytest.raises(AttackError, match="the corpus has no chunk to attack"):
        plant_attacks(corpus[:3], count=1)


def test_bad_requests_are_one_clear_error_and_write_nothing(tmp_path: Path) -> None:
    out_corpus, out = tmp_path / "attacked.jsonl", tmp_path / "attacks.jsonl"
    with pytest.raises(AttackError, match="--count must be at least 1, got 0"):
        generate_attacks_command(CORPUS, out_corpus, out, 0, 0)
    with pytest.raises(AttackError, match="--k must be at least 1, got 0"):
        generate_attacks_command(CORPUS, out_corpus, out, 2, 0, k=0)
    with pytest.raises(AttackError, match="three different files"):
        generate_attacks_command(CORPUS, CORPUS, out, 2, 0)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "fine"}\n{"id": "b"}\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad\.jsonl:2: 'text' must be a non-empty string"):
        generate_attacks_command(bad, out_corpus, out, 2, 0)
    assert not out_corpus.exists() and not out.exists()
    # An attacked corpus is not attacked again: its planted ids would repeat.
    generate_attacks_command(CORPUS, out_corpus, out, 2, 0)
    with pytest.raises(AttackError, match="already holds a chunk planted-0001"):
        generate_attacks_command(out_corpus, tmp_path / "twice.jsonl", tmp_path / "c.jsonl", 2, 0)
