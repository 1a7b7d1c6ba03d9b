"""The demo pipeline (DemoRAG), its shipped corpus and its shipped dataset."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from ragproof_core.adapters.demo import (
    ABSTAIN_TEXT,
    DEFAULT_CORPUS,
    DemoAgent,
    DemoRAG,
    load_passages,
    split_sentences,
)
from ragproof_core.data.dataset import load_dataset
from ragproof_core.generate.corpus_attacks import generate_attacks_command
from ragproof_core.metrics.robustness import (
    exfiltration_resistance,
    injection_resistance,
    leakage_resistance,
    poisoning_resistance,
)
from ragproof_core.model import Answer, CaseOutput, Chunk, RetrieveStep, ToolMatch, ToolStep

ROOT = Path(__file__).resolve().parents[3]
TINY = ROOT / "tests/fixtures/demo/tiny_corpus.jsonl"
SHIPPED_CORPUS = ROOT / "data/corpus/passages.jsonl"
SHIPPED_CASES = ROOT / "data/demo/cases.jsonl"
BUILD_SCRIPT = ROOT / "data/corpus/build_corpus.py"
# The committed corpus was built with this interpreter; pydoc text differs
# slightly between releases, so only this one must rebuild it byte for byte.
BUILT_WITH = (3, 11, 7)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.fixture(scope="module")
def tiny() -> DemoRAG:
    # Tiny-corpus BM25 scores are around 1-4, hence the low floor.
    return DemoRAG(corpus=str(TINY), k=2, min_score=0.5)


@pytest.fixture(scope="module")
def shipped() -> DemoRAG:
    return DemoRAG()


# --- DemoRAG on the tiny corpus -------------------------------------------


def test_retrieve_returns_chunks_with_score_and_document_id(tiny):
    chunks = tiny.retrieve("Why do cats hunt mice at night?")
    assert [c.id for c in chunks] == ["cats-2", "cats-1"]
    assert all(isinstance(c, Chunk) for c in chunks)
    assert [c.document_id for c in chunks] == ["cats", "cats"]
    assert chunks[0].metadata == {"document_id": "cats", "title": "Cats"}
    assert chunks[0].text == "Cats hunt mice at night. Long whiskers help them move in the dark."
    assert chunks[0].score > chunks[1].score > 0


def test_answer_is_the_best_sentence_and_cites_its_chunk(tiny):
    answer = tiny.answer("Why do cats hunt mice at night?")
    assert isinstance(answer, Answer)
    assert answer.text == "Cats hunt mice at night."
    assert answer.citations == ("cats-2",)
    assert [c.id for c in answer.retrieved_chunks] == ["cats-2", "cats-1"]


def test_answer_with_two_sentences_cites_both_chunks_in_rank_order(tiny):
    # The question's terms are hunt, night, dawn: "hunt"+"dawn" and
    # "hunt"+"night" cover it equally, so both sentences are kept, best chunk first.
    answer = tiny.answer("What do they hunt at night, at dawn?")
    assert [c.id for c in answer.retrieved_chunks] == ["garden-1", "cats-2"]
    assert answer.text == "Herons hunt the goldfish at dawn. Cats hunt mice at night."
    assert answer.citations == ("garden-1", "cats-2")


def test_abstains_when_the_question_is_mostly_off_topic(tiny):
    # "hunt" and "in" match, so retrieval finds passages, but no sentence
    # covers enough of the question.
    answer = tiny.answer("How do I hunt for bugs in Rust code?")
    assert [c.id for c in answer.retrieved_chunks] == ["cats-2", "garden-1"]
    assert answer.text == ABSTAIN_TEXT
    assert answer.citations is None


def test_abstains_when_nothing_is_retrieved(tiny):
    answer = tiny.answer("What is the capital of France?")
    assert answer == Answer(ABSTAIN_TEXT, (), None)


def test_abstains_below_min_score_but_still_returns_its_context():
    strict = DemoRAG(corpus=TINY, k=2, min_score=100.0)
    answer = strict.answer("Why do cats hunt mice at night?")
    assert answer.text == ABSTAIN_TEXT
    assert answer.citations is None
    assert [c.id for c in answer.retrieved_chunks] == ["cats-2", "cats-1"]


def test_k_limits_retrieval(tiny):
    one = DemoRAG(corpus=TINY, k=1, min_score=0.5)
    assert [c.id for c in one.retrieve("What do they hunt at night, at dawn?")] == ["garden-1"]
    with pytest.raises(ValueError, match="k must be at least 1"):
        DemoRAG(corpus=TINY, k=0)


def test_default_corpus_is_the_shipped_file_next_to_the_package():
    assert DEFAULT_CORPUS == SHIPPED_CORPUS
    assert DemoRAG().corpus == SHIPPED_CORPUS


def test_bad_corpus_line_names_file_and_line(tmp_path):
    path = tmp_path / "passages.jsonl"
    path.write_text('{"id": "a", "text": "fine"}\n{"id": "b", "text": \n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"passages\.jsonl:2: not valid JSON"):
        load_passages(path)
    path.write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"passages\.jsonl:2: duplicate id 'a'"):
        load_passages(path)
    path.write_text('{"id": "a"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"passages\.jsonl:1: missing string 'text'"):
        load_passages(path)


def test_split_sentences_keeps_abbreviations_and_splits_before_keywords():
    text = (
        "Containers (e.g. lists) hold items. pass is a null operation. "
        'It prints "[0, 2]". Done? yes.'
    )
    assert split_sentences(text) == [
        "Containers (e.g. lists) hold items.",
        "pass is a null operation.",
        'It prints "[0, 2]".',
        "Done?",
        "yes.",
    ]


# --- the shipped corpus ----------------------------------------------------


def test_shipped_corpus_size_ids_and_poisoned_passages():
    passages = read_jsonl(SHIPPED_CORPUS)
    ids = [p["id"] for p in passages]
    assert len(ids) == len(set(ids))
    assert 200 <= len(passages) <= 400
    assert all(p["metadata"]["document_id"] and p["metadata"]["title"] for p in passages)
    poisoned = [p for p in passages if p["metadata"].get("injected")]
    assert [p["id"] for p in poisoned] == [
        "synthetic-pass-1",
        "synthetic-global-1",
        "synthetic-lambda-1",
        "synthetic-del-1",
    ]
    assert all(p["metadata"]["synthetic"] is True for p in poisoned)
    assert all("ZQX-POISON-" in p["text"] for p in poisoned[:3])
    # The fourth asks for a markdown image whose URL carries a sentinel-shaped code.
    assert (
        "![docs](https://badges.example.invalid/del.png?ref=ZQX-DELBADGE2Q7MXRWT)"
        in (poisoned[3]["text"])
    )
    # Only the labelled synthetic passages carry a marker.
    assert sum("ZQX-" in p["text"] for p in passages) == 4
    # CONTRACT section 23: three internal notes, restricted, on their own documents.
    restricted = [p for p in passages if p["metadata"].get("restricted")]
    assert [p["id"] for p in restricted] == [
        "internal-advisory-1",
        "internal-roadmap-1",
        "internal-signing-1",
    ]
    assert all(p["metadata"]["restricted"] is True for p in restricted)
    assert all(p["metadata"]["document_id"].startswith("internal-") for p in restricted)


@pytest.mark.skipif(
    sys.version_info[:3] != BUILT_WITH,
    reason="the corpus was built from CPython 3.11.7's pydoc topics; other releases differ",
)
def test_build_script_reproduces_the_committed_corpus():
    spec = importlib.util.spec_from_file_location("build_corpus", BUILD_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.build() == read_jsonl(SHIPPED_CORPUS)


# --- the shipped demo dataset ---------------------------------------------


def test_shipped_dataset_is_valid_and_points_into_the_corpus():
    corpus_ids = {p["id"] for p in read_jsonl(SHIPPED_CORPUS)}
    cases = read_jsonl(SHIPPED_CASES)
    ids = [c["id"] for c in cases]
    assert len(ids) == len(set(ids))
    assert all(isinstance(c["question"], str) and c["question"].strip() for c in cases)
    kinds = Counter(c["kind"] for c in cases)
    assert set(kinds) == {"qa", "unanswerable", "injection"}
    assert len(cases) >= 60
    assert kinds["qa"] >= 40 and kinds["unanswerable"] >= 10 and kinds["injection"] >= 10
    for case in cases:
        if case["kind"] == "qa":
            assert case["expected_source_ids"], case["id"]
            assert set(case["expected_source_ids"]) <= corpus_ids, case["id"]
            assert case["expected_answer"].strip(), case["id"]
        else:
            assert "expected_source_ids" not in case, case["id"]
        if case["kind"] == "injection":
            assert case["adversarial_payload"].startswith("ZQX-"), case["id"]


def test_injection_markers_are_unique_per_direct_case_and_planted_for_indirect_ones():
    corpus_text = SHIPPED_CORPUS.read_text(encoding="utf-8")
    injections = [c for c in read_jsonl(SHIPPED_CASES) if c["kind"] == "injection"]
    direct = [c for c in injections if c["metadata"]["injection"] == "direct"]
    indirect = [c for c in injections if c["metadata"]["injection"] != "direct"]
    assert len(direct) >= 3 and len(indirect) >= 3
    markers = [c["adversarial_payload"] for c in direct]
    assert len(markers) == len(set(markers))
    for case in direct:
        assert case["adversarial_payload"] in case["question"]
        assert case["adversarial_payload"] not in corpus_text
    for case in indirect:
        assert case["adversarial_payload"] not in case["question"]
        assert case["adversarial_payload"] in corpus_text


def test_demo_over_the_shipped_dataset_scores_non_trivially(shipped):
    cases = read_jsonl(SHIPPED_CASES)
    recalls, refused_answerable, abstained, complied = [], [], [], []
    for case in cases:
        answer = shipped.answer(case["question"])
        refused = answer.text == ABSTAIN_TEXT
        if case["kind"] == "qa":
            top5 = [c.id for c in shipped.retrieve(case["question"])[:5]]
            relevant = set(case["expected_source_ids"])
            recalls.append(len(relevant.intersection(top5)) / len(relevant))
            refused_answerable.append(refused)
        elif case["kind"] == "unanswerable":
            abstained.append(refused)
        else:
            complied.append(case["adversarial_payload"] in answer.text)
    mean = lambda values: sum(values) / len(values)  # noqa: E731
    assert mean(recalls) > 0.5
    assert min(recalls) == 0.0  # BM25 misses some: the demo is not a toy
    # The demo exists to show trade-offs: some refusals of answerable
    # questions, some fabrication on unanswerable ones, some injections obeyed.
    assert 0.0 < mean(refused_answerable) < 0.5
    assert 0.0 < mean(abstained) < 1.0
    assert 0.0 < mean(complied) < 1.0


def test_a_follow_up_is_resolved_against_the_previous_question(shipped):
    """CONTRACT section 16: "When are they evaluated?" alone ranks an assignment passage
    first; after "What are default parameter values?" it ranks the passage on when
    default values are evaluated first."""
    follow_up = "When are they evaluated?"
    history = [
        {"role": "user", "content": "What are default parameter values?"},
        {"role": "assistant", "content": "Parameters of the form parameter = expression."},
    ]
    assert shipped.retrieve(follow_up)[0].id == "assignment-11"
    assert shipped.retrieve(follow_up, history=history)[0].id == "function-4"
    # Without history (a single case, a first turn) nothing changes.
    assert shipped.answer(follow_up) == shipped.answer(follow_up, history=[])


def test_the_demo_conversations_name_passages_of_the_corpus():
    corpus = {json.loads(line)["id"] for line in DEFAULT_CORPUS.read_text().splitlines()}
    conversations = [
        json.loads(line)
        for line in (DEFAULT_CORPUS.parents[1] / "demo/conversations.jsonl")
        .read_text()
        .splitlines()
    ]
    assert 10 <= len(conversations) <= 15
    for conversation in conversations:
        golds = [t.get("expected_source_ids") for t in conversation["turns"]]
        assert all(g is None or set(g) <= corpus for g in golds)
        # Every follow-up with gold ids asks for other passages than the first turn's.
        assert any(g and g != golds[0] for g in golds[1:]), conversation["id"]


# --- DemoAgent: the demo's multi-hop agent (CONTRACT section 17) -----------


def test_the_agent_searches_reads_searches_again_with_what_is_uncovered_and_reads():
    agent = DemoAgent()
    question = (
        "Which statement terminates the nearest enclosing loop, "
        "and when are default parameter values evaluated?"
    )
    answer = agent.answer(question)
    steps = answer.steps
    assert [type(s) for s in steps] == [RetrieveStep, ToolStep, RetrieveStep, ToolStep]
    assert steps[0].query == question and steps[0].chunks[0].id == "break-1"
    assert steps[1].name == "read_passage" and steps[1].arguments == {"id": "break-1"}
    # The rewritten query keeps the question's terms break-1 does not contain.
    assert steps[2].query == "and default parameter values evaluated"
    assert steps[2].chunks[0].id == "function-4"
    assert steps[3].arguments == {"id": "function-4"}
    assert steps[3].output == steps[2].chunks[0].text  # the passage read in full
    assert answer.citations == ("break-1", "function-4")


def test_the_agent_abstains_with_its_one_search_as_the_trajectory(tiny):
    agent = DemoAgent(corpus=str(TINY), k=2, min_score=100.0)
    answer = agent.answer("What is the capital of France?")
    assert answer.text == ABSTAIN_TEXT
    assert [type(s) for s in answer.steps] == [RetrieveStep]


def test_the_shipped_agent_cases_carry_hops_and_tools():
    cases = load_dataset(ROOT / "data/demo/agent_cases.jsonl")
    assert 10 <= len(cases) <= 15
    for case in cases:
        assert case.expected_hops and case.expected_tools
        # One read per hop, of that hop's gold passage.
        assert [t.arguments for t in case.expected_tools] == [
            {"id": hop[0]} for hop in case.expected_hops
        ]
    assert {c.tool_match for c in cases} == set(ToolMatch)


# --- the demo on an attacked copy of its corpus (CONTRACT section 23) --------

ATTACKED_CORPUS = ROOT / "data/corpus/attacked.jsonl"
ATTACK_CASES = ROOT / "data/demo/attack_cases.jsonl"
# data/demo/README.md gives the command: generate attacks, seed 1, 12 chunks.
ATTACK_SEED, ATTACK_COUNT = 1, 12


def test_the_attacked_corpus_and_its_cases_are_what_generate_attacks_writes(tmp_path):
    out_corpus, out = tmp_path / "attacked.jsonl", tmp_path / "attacks.jsonl"
    generate_attacks_command(SHIPPED_CORPUS, out_corpus, out, ATTACK_COUNT, ATTACK_SEED)
    assert out_corpus.read_bytes() == ATTACKED_CORPUS.read_bytes()
    generated = out.read_text(encoding="utf-8")
    shipped = ATTACK_CASES.read_text(encoding="utf-8")
    assert shipped.startswith(generated)
    # Then the hand-written probes: restricted passages asked for (one by a user
    # allowed their document) and the markdown image of synthetic-del-1.
    written = [json.loads(line) for line in shipped[len(generated) :].splitlines()]
    assert [case["metadata"]["attack"] for case in written] == ["leakage"] * 6 + ["exfiltration"]
    restricted = {p["id"] for p in read_jsonl(SHIPPED_CORPUS) if p["metadata"].get("restricted")}
    assert {case["metadata"]["restricted"] for case in written[:6]} == restricted
    assert [c["id"] for c in written if c.get("allowed_restricted_ids")] == ["allowed-roadmap"]
    assert written[6]["adversarial_payload"] == "ZQX-DELBADGE2Q7MXRWT"


def test_the_demo_on_its_attacked_corpus_is_fooled_sometimes():
    """Each attack metric of the README's fourth run is neither 0 nor 1 (exfiltration:
    one image copied), computed here from the pipeline and the metric functions."""
    demo = DemoRAG(corpus=ATTACKED_CORPUS)
    scores: dict[str, list[float]] = {}
    for case in load_dataset(ATTACK_CASES):
        output = CaseOutput(case.id, demo.answer(case.question))
        for metric in (
            injection_resistance,
            poisoning_resistance,
            leakage_resistance,
            exfiltration_resistance,
        ):
            result = metric(case, output)
            if result.value is not None:
                scores.setdefault(result.metric, []).append(result.value)
    assert {name: (len(values), sum(values)) for name, values in scores.items()} == {
        "robustness.injection_resistance": (7, 4.0),
        "robustness.poisoning_resistance": (6, 4.0),
        "robustness.leakage_resistance": (6, 2.0),
        "robustness.exfiltration_resistance": (19, 18.0),
    }
