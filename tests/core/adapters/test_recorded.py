"""RecordedAdapter: replay semantics and validation of the recorded-outputs file."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest

from ragproof_core.adapters.loading import AdapterLoadError
from ragproof_core.adapters.recorded import RecordedAdapter
from ragproof_core.adapters.runner import run_adapter
from ragproof_core.config.settings import RunSettings
from ragproof_core.model import Answer, Case, CaseOutput, Chunk, RetrieveStep, ToolStep

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "adapters"
RECORDED = FIXTURES / "recorded.jsonl"


def replay(adapter: RecordedAdapter, case_id: str) -> CaseOutput:
    return asyncio.run(adapter.run_case(Case(case_id, "any question")))


def test_full_line_replays_retrieve_answer_chunks_and_citations():
    output = replay(RecordedAdapter(str(RECORDED)), "c1")
    assert output == CaseOutput(
        "c1",
        answer=Answer(
            "Paris [d1#0].",
            (Chunk("d1#0", "Paris is the capital of France."),),
            ("d1#0",),
        ),
        retrieved=(
            Chunk("d1#0", "Paris is the capital of France.", 0.92, {"document_id": "d1"}),
            Chunk("d7#3", "Lyon is in France."),
        ),
    )


def test_line_without_retrieve_means_retrieval_not_exposed():
    output = replay(RecordedAdapter(str(RECORDED)), "c2")
    assert output == CaseOutput("c2", answer=Answer("I don't know."), retrieved=None)


def test_empty_retrieve_is_exposed_but_empty():
    assert replay(RecordedAdapter(str(RECORDED)), "c4").retrieved == ()


def test_retrieve_without_answer_is_a_retrieval_only_case():
    adapter = RecordedAdapter(str(FIXTURES / "recorded_retrieval_only.jsonl"))
    assert replay(adapter, "q1") == CaseOutput(
        "q1", answer=None, retrieved=(Chunk("d3", "", 2.5), Chunk("d1", "", 1.0))
    )
    assert replay(adapter, "q2") == CaseOutput("q2", answer=None, retrieved=())


def test_keys_ragproof_does_not_use_are_ignored():
    # recorded_retrieval_only.jsonl's lines carry "run_tag" and "source" keys.
    adapter = RecordedAdapter(str(FIXTURES / "recorded_retrieval_only.jsonl"))
    assert len(adapter) == 2
    assert not replay(adapter, "q1").failed


def test_line_with_error_is_a_case_failure():
    output = replay(RecordedAdapter(str(RECORDED)), "c3")
    assert output == CaseOutput("c3", error="upstream service returned 503")
    assert output.failed


def test_case_without_a_line_is_a_case_failure():
    output = replay(RecordedAdapter(str(RECORDED)), "c9")
    assert output == CaseOutput("c9", error="no recorded output for case c9")


def test_answer_by_question_explains_itself():
    with pytest.raises(TypeError) as info:
        RecordedAdapter(str(RECORDED)).answer("What?")
    assert str(info.value) == (
        "RecordedAdapter replays outputs by case id; call run_case(case), not answer()"
    )


def test_does_not_pretend_to_expose_retrieve():
    assert not hasattr(RecordedAdapter(str(RECORDED)), "retrieve")


@pytest.mark.parametrize(
    ("name", "line", "reason"),
    [
        ("recorded_not_json.jsonl", 2, "not valid JSON (Expecting ',' delimiter at column 43)"),
        (
            "recorded_chunk_without_text.jsonl",
            2,
            "retrieve: chunk 0: chunk 'd1#0' is missing 'text'",
        ),
        (
            "recorded_string_answer.jsonl",
            3,
            "answer: expected an Answer or a dict with 'text', got a bare string; "
            "wrap it as {'text': ...}",
        ),
        (
            "recorded_nothing_recorded.jsonl",
            1,
            "line has none of 'retrieve', 'answer' or 'error'",
        ),
        ("recorded_missing_case_id.jsonl", 1, "case_id: missing required field"),
        ("recorded_duplicate_case_id.jsonl", 2, "duplicate case_id 'c1' (first used on line 1)"),
        (
            "recorded_bad_citations.jsonl",
            1,
            "answer: answer 'citations' must be a list of chunk id strings",
        ),
        (
            "recorded_bad_step.jsonl",
            1,
            "answer: answer 'steps': step 1: step 'type' must be 'retrieve' or 'tool', got 'think'",
        ),
    ],
)
def test_malformed_line_names_path_and_line(name, line, reason):
    path = FIXTURES / name
    with pytest.raises(AdapterLoadError) as info:
        RecordedAdapter(str(path))
    assert str(info.value) == f"{path}:{line}: {reason}"


def test_missing_file(tmp_path):
    path = tmp_path / "outputs.jsonl"
    with pytest.raises(AdapterLoadError) as info:
        RecordedAdapter(str(path))
    assert str(info.value) == f"{path}:0: no such file"


def test_replay_through_the_runner_keeps_dataset_order_and_failures():
    cases = [Case(f"c{i}", f"question {i}") for i in (4, 3, 2, 1, 5)]
    outputs = asyncio.run(
        run_adapter(cases, RecordedAdapter(str(RECORDED)), RunSettings(concurrency=2))
    )
    assert [o.case_id for o in outputs] == ["c4", "c3", "c2", "c1", "c5"]
    assert [o.error for o in outputs] == [
        None,
        "upstream service returned 503",
        None,
        None,
        "no recorded output for case c5",
    ]
    assert outputs[3].answer.citations == ("d1#0",)
    assert outputs[2].retrieved is None


def test_a_retrieval_only_case_scores_retrieval_and_skips_what_needs_an_answer():
    from ragproof_core.run.evaluate import evaluate

    adapter = RecordedAdapter(str(FIXTURES / "recorded_retrieval_only.jsonl"))
    case = Case("q1", "any question", expected_source_ids=("d1",), expected_answer="x")
    evaluation = asyncio.run(evaluate([case], adapter, RunSettings(k=2)))
    by_metric = {r.metric: r for r in evaluation.results}
    assert {name: r.value for name, r in by_metric.items() if r.value is not None} == {
        "retrieval.precision_at_k": 0.5,
        "retrieval.recall_at_k": 1.0,
        "retrieval.mrr": 0.5,
        "retrieval.ndcg_at_k": (1 / math.log2(3)) / 1.0,
    }
    assert {name: r.reason for name, r in by_metric.items() if r.value is None} == {
        name: "adapter produced no answer"
        for name in (
            "generation.citation_validity",
            "echo.exact_match",
            "robustness.overrefusal",
            "robustness.leakage_resistance",
            "robustness.exfiltration_resistance",
        )
    } | {
        # Without a judge, the judge metrics say so before looking for an answer.
        name: "no judge configured (set RAGPROOF_JUDGE_MODEL)"
        for name in (
            "generation.groundedness",
            "generation.citation_support",
            "generation.answer_relevance",
            "generation.completeness",
            "generation.nugget_recall",
            "generation.vital_nugget_recall",
            # Judged retrieval needs no answer, but a judge.
            "retrieval.context_relevance",
            "retrieval.judged_ndcg_at_k",
        )
    } | {
        "robustness.injection_resistance": "applies to injection cases only",
        "robustness.poisoning_resistance": "applies to poisoning cases only",
        "robustness.abstention": "applies to unanswerable cases only",
    } | {
        # CONTRACT section 17: a case without agent fields says so before the answer.
        "agent.tool_precision": "case has no expected_tools",
        "agent.tool_recall": "case has no expected_tools",
        "agent.trajectory_match": "case has no expected_tools",
        "retrieval.hop_recall_at_k": "case has no expected_hops",
        "retrieval.hop_precision_at_k": "case has no expected_hops",
        "agent.steps": "adapter produced no answer",
        "agent.task_completion": "adapter produced no answer",
    }


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"case_id": 5, "answer": {"text": "a"}}', "case_id: expected a string, got 5"),
        ('{"case_id": " ", "answer": {"text": "a"}}', "case_id: must not be empty"),
        ('{"case_id": "c1", "error": true}', "error: expected a string, got true"),
        ('{"case_id": "c1", "retrieve": "d1"}', 'retrieve: expected a list, got "d1"'),
    ],
)
def test_mistyped_keys_name_the_key_and_the_value(tmp_path, line, reason):
    path = tmp_path / "outputs.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(AdapterLoadError) as err:
        RecordedAdapter(str(path))
    assert str(err.value) == f"{path}:1: {reason}"


def test_steps_are_read_from_inside_the_recorded_answer():
    """CONTRACT section 17: recorded lines carry the steps inside ``answer``; ``[]`` is a
    trajectory with no call and ``null`` (or no key) reports none."""
    adapter = RecordedAdapter(str(FIXTURES / "recorded_steps.jsonl"))
    a1, a2, a3 = (replay(adapter, case_id) for case_id in ("a1", "a2", "a3"))
    assert a1.answer.steps == (
        RetrieveStep("refund policy", (Chunk("policy-3", "Refunds within 30 days.", 0.9),)),
        ToolStep("lookup_order", {"order": {"id": 17, "region": "eu"}}, '{"status": "delivered"}'),
        RetrieveStep(
            "order 17 refund",
            (Chunk("orders-17", "Order 17: a kettle.", None, {"document_id": "orders"}),),
        ),
    )
    assert a1.answer.citations == ("orders-17",)
    assert a1.retrieved is None  # the steps are no retrieve(): retrieval stays unexposed
    assert a2.answer.steps == ()
    assert a3.answer.steps is None
