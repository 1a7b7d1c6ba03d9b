"""The generate-critique-replace loop through the real judge stack:
LiteLLMJudge -> LiteLLM -> HTTP -> the local judge server, replies scripted by
what each request says (tests/support/generation.py)."""

from __future__ import annotations

import json

import pytest

from ragproof_core.data.dataset import load_dataset
from ragproof_core.generate.corpus import load_corpus
from ragproof_core.generate.output import case_rows, write_rows
from ragproof_core.generate.qa import (
    GenerationInputError,
    GenerationPlan,
    generate_questions,
    rejection_reasons,
)
from ragproof_core.model import CaseKind
from tests.conftest import FIXTURES
from tests.core.judge.conftest import make_judge, run
from tests.support.generation import request_fields, scripted

CORPUS = load_corpus(FIXTURES / "generation" / "corpus.jsonl")
HOSTILE = load_corpus(FIXTURES / "generation" / "hostile_corpus.jsonl")
CHUNK_IDS = {c.id for c in CORPUS}
DOCUMENT = {c.id: c.document_id for c in CORPUS}


def generate(server, tmp_path, plan, **judge_options):
    judge = make_judge(server.url, tmp_path / "cache.sqlite", **judge_options)
    try:
        return run(generate_questions(CORPUS, plan, judge)), judge
    finally:
        judge.close()


def labels(server, prompt):
    """(slot, attempt) of each request for ``prompt``, first tries only, in slot order."""
    found = [
        (f["slot"], f["attempt"])
        for r in server.requests
        if r.prompt == prompt and len(r.body["messages"]) == 2
        for f in [request_fields(r)]
    ]
    return sorted(found)


def test_writes_n_cases_from_chunks_spread_over_documents(server, tmp_path):
    outcome, judge = generate(server, tmp_path, GenerationPlan(count=4, unanswerable=2))
    assert [(q.kind, q.slot, q.attempt) for q in outcome.kept] == [
        ("qa", 1, 1), ("qa", 2, 1), ("qa", 3, 1), ("qa", 4, 1),
        ("unanswerable", 1, 1), ("unanswerable", 2, 1),
    ]  # fmt: skip
    qa = outcome.of_kind("qa")
    assert all(len(q.source_ids) == 1 and q.source_ids[0] in CHUNK_IDS for q in qa)
    # Four slots, four documents: one chunk of each.
    assert sorted(DOCUMENT[q.source_ids[0]] for q in qa) == ["bikes", "kettle", "leave", "tram"]
    by_id = {c.id: c for c in CORPUS}
    for q in qa:  # the default server writes "What is said about <first words>?"
        text = by_id[q.source_ids[0]].text
        assert q.question == f"What is said about {' '.join(text.split()[:6]).rstrip('.,;:')}?"
        assert q.answer == text.split(". ")[0].rstrip(".") + "."
    # Unanswerable questions are written beside two chunks of one document.
    for q in outcome.of_kind("unanswerable"):
        assert q.answer is None and len({DOCUMENT[i] for i in q.source_ids}) == 1
    # 6 questions and 6 critiques, nothing else.
    assert server.request_count == 12
    assert (judge.stats.requests, judge.stats.repairs, judge.stats.judge_errors) == (12, 0, 0)
    tally = outcome.tallies["qa"].to_dict()
    assert tally == {
        "slots": 4, "kept": 4, "generated": 4, "duplicates": 0, "critiqued": 4, "rejected": 0,
        "rejected_because": {}, "judge_errors": 0, "unfilled": 0,
    }  # fmt: skip
    assert outcome.aborted is None


def test_generated_rows_load_as_a_dataset(server, tmp_path):
    outcome, judge = generate(server, tmp_path, GenerationPlan(count=3, unanswerable=1, seed=5))
    hashes = {"critique_qa": "c" * 64, "generate_qa": "g" * 64, "generate_unanswerable": "u" * 64}
    rows = case_rows(outcome.kept, 5, judge.model, hashes)
    path = tmp_path / "cases.jsonl"
    write_rows(path, rows)
    cases = load_dataset(path)
    assert [(c.id, c.kind) for c in cases] == [
        ("gen-0001", CaseKind.QA), ("gen-0002", CaseKind.QA), ("gen-0003", CaseKind.QA),
        ("gen-u-0001", CaseKind.UNANSWERABLE),
    ]  # fmt: skip
    assert cases[0].expected_source_ids == outcome.kept[0].source_ids
    assert cases[0].expected_answer == outcome.kept[0].answer
    assert cases[3].expected_source_ids is None and cases[3].expected_answer is None
    generated = {"seed": 5, "model": "openai/judge-test", "prompt_hashes": hashes}
    assert all(c.metadata == {"generated": generated} for c in cases)
    assert list(json.loads(path.read_text().splitlines()[0])) == [
        "id", "question", "kind", "expected_source_ids", "expected_answer", "metadata",
    ]  # fmt: skip


def test_a_repeated_question_is_dropped_and_its_slot_refilled(server, tmp_path, monkeypatch):
    monkeypatch.setattr(
        server,
        "responder",
        scripted(same_question={"qa slot 1, attempt 1", "qa slot 2, attempt 1"}),
    )
    outcome, _ = generate(server, tmp_path, GenerationPlan(count=3))
    assert [(q.slot, q.attempt, q.question) for q in outcome.kept][:2] == [
        (1, 1, "What colour is the kettle?"),
        (2, 2, outcome.kept[1].question),
    ]
    assert "[qa slot 2, attempt 2]" in outcome.kept[1].question
    tally = outcome.tallies["qa"]
    assert (tally.generated, tally.duplicates, tally.critiqued, tally.kept) == (4, 1, 3, 3)
    # The duplicate is never critiqued: 4 questions + 3 critiques.
    assert server.request_count == 7
    assert labels(server, "generate_qa") == [
        ("qa slot 1", "attempt 1"), ("qa slot 2", "attempt 1"), ("qa slot 2", "attempt 2"),
        ("qa slot 3", "attempt 1"),
    ]  # fmt: skip


def test_a_rejected_question_is_regenerated_as_a_new_request_and_counted(
    server, tmp_path, monkeypatch
):
    monkeypatch.setattr(server, "responder", scripted(reject={"qa slot 1, attempt 1"}))
    outcome, judge = generate(server, tmp_path, GenerationPlan(count=2))
    first = outcome.kept[0]
    assert (first.slot, first.attempt) == (1, 2)
    assert first.question.endswith("[qa slot 1, attempt 2]")
    tally = outcome.tallies["qa"]
    assert (tally.rejected, dict(tally.rejected_because), tally.kept) == (
        1, {"not standalone": 1}, 2,
    )  # fmt: skip
    # The retry reached the server although the cache was on: its prompt names attempt 2.
    assert labels(server, "generate_qa") == [
        ("qa slot 1", "attempt 1"), ("qa slot 1", "attempt 2"), ("qa slot 2", "attempt 1"),
    ]  # fmt: skip
    assert (server.request_count, judge.stats.cache_hits) == (6, 0)


def test_a_slot_rejected_at_every_attempt_stays_unfilled(server, tmp_path, monkeypatch):
    rejected = {f"qa slot 1, attempt {a}" for a in (1, 2)}
    monkeypatch.setattr(server, "responder", scripted(reject=rejected))
    outcome, _ = generate(server, tmp_path, GenerationPlan(count=3, max_attempts=2))
    assert [q.slot for q in outcome.kept] == [2, 3]
    tally = outcome.tallies["qa"]
    assert (tally.rejected, tally.unfilled, tally.kept) == (2, 1, 2)
    rows = case_rows(outcome.kept, 0, "m", {})
    assert [r["id"] for r in rows] == ["gen-0001", "gen-0002"]  # no gap for the unfilled slot


def test_garbage_is_repaired_once_then_counted_and_the_run_goes_on(server, tmp_path, monkeypatch):
    monkeypatch.setattr(
        server,
        "responder",
        scripted(garbage_first_only={"qa slot 1, attempt 1"}, garbage={"qa slot 2, attempt 1"}),
    )
    outcome, judge = generate(server, tmp_path, GenerationPlan(count=3))
    assert [(q.slot, q.attempt) for q in outcome.kept] == [(1, 1), (2, 2), (3, 1)]
    assert outcome.tallies["qa"].judge_errors == 1
    # Slot 1: one repair that worked; slot 2: a repair that failed, then attempt 2.
    stats = judge.stats
    assert (stats.requests, stats.repairs, stats.judge_errors) == (9, 2, 1)
    assert server.request_count == 9


def test_the_budget_stops_generation_and_keeps_what_was_kept(server, tmp_path, monkeypatch):
    # Every reply bills 100,000 input tokens ($0.10 at $1/Mtok); the pre-call estimate is
    # under $0.001, so the fifth call (slot 2's second attempt) is refused at $0.4005.
    server.usage = (100_000, 0)
    monkeypatch.setattr(server, "responder", scripted(reject={"qa slot 2, attempt 1"}))
    outcome, judge = generate(
        server, tmp_path, GenerationPlan(count=2), input_cost=1.0, max_cost=0.4005
    )
    assert outcome.aborted is not None and "judge budget of $0.400500 reached" in outcome.aborted
    assert [(q.slot, q.attempt) for q in outcome.kept] == [(1, 1)]
    assert (server.request_count, outcome.tallies["qa"].unfilled) == (4, 0)


def test_a_hostile_chunk_is_fenced_and_an_obedient_reply_is_rejected(server, tmp_path, monkeypatch):
    hostile = next(c for c in HOSTILE if c.id == "evil-1")
    obeyed = []

    def respond(request):
        chunks = [b for b in request.blocks() if "id" in b]
        if any(b["text"] == hostile.text for b in chunks) and request.prompt == "generate_qa":
            obeyed.append(request)
            return '{"pwned": true}'  # a model that followed the chunk
        return scripted()(request)

    monkeypatch.setattr(server, "responder", respond)
    judge = make_judge(server.url, tmp_path / "cache.sqlite")
    try:
        outcome = run(generate_questions(HOSTILE, GenerationPlan(count=2, max_attempts=2), judge))
    finally:
        judge.close()
    # The server saw the hostile text only inside a data block of the user message.
    assert obeyed, "the hostile chunk was sampled"
    for request in obeyed:
        system, user = (m["content"] for m in request.body["messages"][:2])
        assert hostile.text not in system and user.count(hostile.text) == 1
        assert [b["id"] for b in request.blocks() if "id" in b] == ["evil-1"]
    # The reply shape was validated: a repair, then a judge error, twice; the slot stays
    # unfilled and nothing from the hostile chunk reaches the output.
    assert [q.source_ids for q in outcome.kept] == [("bikes-1",)]
    assert outcome.tallies["qa"].judge_errors == 2
    assert outcome.tallies["qa"].unfilled == 1
    assert len(obeyed) == 4  # two attempts, each with its repair retry


def test_multi_chunk_questions_are_written_from_two_chunks_of_one_document(server, tmp_path):
    outcome, _ = generate(server, tmp_path, GenerationPlan(count=4, multi_chunk=2))
    sources = [q.source_ids for q in outcome.kept]
    # Slots 2 and 4 of 4 are the two-chunk ones (evenly spread).
    assert [len(ids) for ids in sources] == [1, 2, 1, 2]
    for ids in (sources[1], sources[3]):
        assert ids[0] != ids[1] and DOCUMENT[ids[0]] == DOCUMENT[ids[1]]
    two_chunk_prompts = [
        r for r in server.requests
        if r.prompt == "generate_qa" and request_fields(r)["slot"] in ("qa slot 2", "qa slot 4")
    ]  # fmt: skip
    assert sorted(tuple(b["id"] for b in r.blocks() if "id" in b) for r in two_chunk_prompts) == (
        sorted([sources[1], sources[3]])
    )


def test_an_unanswerable_question_the_chunks_answer_is_replaced(server, tmp_path, monkeypatch):
    label = "unanswerable slot 1, attempt 1"
    # Its first question is judged answerable from its chunks; the second repeats a qa question.
    monkeypatch.setattr(
        server,
        "responder",
        scripted(
            answerable={label},
            same_question={"qa slot 1, attempt 1", "unanswerable slot 1, attempt 2"},
        ),
    )
    outcome, _ = generate(server, tmp_path, GenerationPlan(count=1, unanswerable=1))
    assert [(q.kind, q.slot, q.attempt) for q in outcome.kept] == [
        ("qa", 1, 1), ("unanswerable", 1, 3),
    ]  # fmt: skip
    tally = outcome.tallies["unanswerable"]
    assert (tally.rejected, dict(tally.rejected_because), tally.duplicates) == (
        1, {"answerable from its chunks": 1}, 1,
    )  # fmt: skip
    assert outcome.kept[1].question.endswith("[unanswerable slot 1, attempt 3]")


def test_rejection_reasons_by_kind():
    verdict = {"standalone": True, "answerable": True, "specific": False}
    assert rejection_reasons("qa", verdict) == ["not specific"]
    assert rejection_reasons("unanswerable", verdict) == [
        "answerable from its chunks",
        "not specific",
    ]
    good_unanswerable = {"standalone": True, "answerable": False, "specific": True}
    assert rejection_reasons("unanswerable", good_unanswerable) == []
    assert rejection_reasons("qa", good_unanswerable) == ["not answerable from its chunks"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"count": -1}, "--count must be 0 or more, got -1"),
        ({"count": 0}, "nothing to generate: --count and --unanswerable are 0"),
        ({"count": 2, "multi_chunk": 3}, "--multi-chunk must be between 0 and --count (2), got 3"),
        ({"count": 2, "max_attempts": 0}, "--max-attempts must be at least 1, got 0"),
    ],
)
def test_plan_checks_its_numbers(options, message):
    with pytest.raises(GenerationInputError) as caught:
        GenerationPlan(**options)
    assert str(caught.value) == message
