"""Claim-level diagnostics and nuggets (CONTRACT section 20): exact values worked out by
hand from scripted ``claim_check`` and ``nugget_support`` replies, through LiteLLM over
HTTP to the local judge server, per metric and in combined mode.

The hand-made case: context c1 c2 c3 c2 c4 c5 c6 (c2 twice), k = 3 (top: c1 c2 c3).

    reference claims G            in_response  chunk_ids
      g1                          yes          c1
      g2                          no           c2
      g3                          yes          -
      g4                          no           c5 (outside the top 3), zz (not in the context)
    answer claims R               in_reference chunk_ids
      r1 grounded                 yes          c1
      r2 self-knowledge           yes          -
      r3 noise                    no           c4 (named by no reference claim: irrelevant)
      r4 hallucination            no           -
      r5 hallucination            no           zz (ignored: not in the context)

    claim precision      2/5 = 0.4   (r1, r2)
    claim recall         2/4 = 0.5   (g1, g3)
    retrieval recall     3/4 = 0.75  (g1, g2, g4)
    context precision    2/3         (c1, c2 of the top 3 are named by G; c5 is past k)
                         3/5 = 0.6   at k = 5 (c1 c2 c3 c4 c5: c1, c2, c5)
    utilization          1/3         (g1 of the supported g1, g2, g4)
    hallucination        2/5 = 0.4   (r4, r5)
    self-knowledge       1/5 = 0.2   (r2)
    noise sensitivity    1/5 = 0.2   (r3: supported only by the irrelevant c4)
"""

from __future__ import annotations

import json

import pytest

from ragproof_core.adapters.recorded import RecordedAdapter
from ragproof_core.config.settings import RunSettings
from ragproof_core.data.dataset import load_dataset
from ragproof_core.metrics import diagnostics as d
from ragproof_core.metrics.registry import REGISTRY, select_metrics, spec
from ragproof_core.model import Answer, Case, CaseOutput, Chunk, Nugget, Status
from ragproof_core.run.evaluate import Selection, evaluate, judged_results
from tests.conftest import FIXTURES
from tests.core.judge.conftest import make_judge, run
from tests.support.judge_server import JudgeServer, ReceivedRequest, default_content

pytestmark = pytest.mark.filterwarnings("ignore:.*ReadOnly. qualifier:UserWarning")

CONTEXT = tuple(Chunk(i, f"text of {i}") for i in ("c1", "c2", "c3", "c2", "c4", "c5", "c6"))
CASE = Case("q1", "What does the policy say?", expected_answer="The reference answer.")
OUTPUT = CaseOutput("q1", Answer("The answer.", retrieved_chunks=CONTEXT))


def r(name: str, in_reference: bool, *chunks: str) -> dict:
    return {"claim": name, "in_reference": in_reference, "chunk_ids": list(chunks)}


def g(name: str, in_response: bool, *chunks: str) -> dict:
    return {"claim": name, "in_response": in_response, "chunk_ids": list(chunks)}


REPLY = {
    "response_claims": [
        r("r1", True, "c1"),
        r("r2", True),
        r("r3", False, "c4"),
        r("r4", False),
        r("r5", False, "zz"),
    ],
    "reference_claims": [
        g("g1", True, "c1"),
        g("g2", False, "c2"),
        g("g3", True),
        g("g4", False, "c5", "zz"),
    ],
}
HAND = {
    d.CLAIM_PRECISION: 0.4,
    d.CLAIM_RECALL: 0.5,
    d.RETRIEVAL_CLAIM_RECALL: 0.75,
    d.CONTEXT_PRECISION: 2 / 3,
    d.CONTEXT_UTILIZATION: 1 / 3,
    d.HALLUCINATION: 0.4,
    d.SELF_KNOWLEDGE: 0.2,
    d.NOISE_SENSITIVITY: 0.2,
}


def claims_asked(server: JudgeServer, reply: dict, k: int = 3, case: Case = CASE):
    """The eight claim metrics of ``case`` in per_metric mode: one scripted reply."""
    server.script(json.dumps(reply))
    params = RunSettings(k=k)
    return run(d.CLAIM_GROUP.ask(case, OUTPUT, make_judge(server.url), params))


def values(results) -> dict[str, tuple]:
    return {x.metric: (x.status.value, x.value, x.reason) for x in results}


def test_the_ten_metrics_are_declared_in_one_family_module():
    names = [m.name for m in d.METRICS]
    assert names == [*d.CLAIM_METRICS, *d.NUGGET_METRICS]
    assert all(REGISTRY.spec(n) is m for n, m in zip(names, d.METRICS, strict=True))
    lower = {m.name for m in d.METRICS if not m.higher_is_better}
    assert lower == {d.HALLUCINATION, d.NOISE_SENSITIVITY, d.SELF_KNOWLEDGE}
    assert {spec(n).family for n in names} == {"generation", "retrieval"}
    assert spec(d.RETRIEVAL_CLAIM_RECALL).family == spec(d.CONTEXT_PRECISION).family == "retrieval"
    # One prompt each family; one metric of each calibrates its prompt.
    assert {m.prompt for m in d.METRICS} == {"claim_check", "nugget_support"}
    assert REGISTRY.for_prompt("claim_check").name == d.HALLUCINATION
    assert REGISTRY.for_prompt("nugget_support").name == d.NUGGET_RECALL
    # The claim metrics are opt-in (a run naming nothing asks no claim_check); nuggets are
    # scored by default, only cases with nuggets asking.
    assert not set(d.CLAIM_METRICS) & set(select_metrics(None))
    assert set(d.NUGGET_METRICS) <= set(select_metrics(None))
    assert set(select_metrics(["generation.claim_*"])) == {d.CLAIM_PRECISION, d.CLAIM_RECALL}


def test_claim_figures_by_hand():
    claims = d.claim_set(REPLY, [c.id for c in CONTEXT], 3)
    assert claims.top_ids == ("c1", "c2", "c3")
    assert claims.relevant == {"c1", "c2", "c5"}  # zz is not in the context
    assert {m: f(claims) for m, f in d.CLAIM_FIGURES.items()} == {
        m: (pytest.approx(v, abs=1e-15), None) for m, v in HAND.items()
    }
    at_5 = d.claim_set(REPLY, [c.id for c in CONTEXT], 5)
    assert at_5.top_ids == ("c1", "c2", "c3", "c4", "c5")
    assert d.context_precision(at_5) == (0.6, None)


def test_eight_metrics_from_one_request_with_the_reply_stored_verbatim(server: JudgeServer):
    results = claims_asked(server, REPLY)
    assert server.request_count == 1
    assert [x.metric for x in results] == list(d.CLAIM_METRICS)
    for x in results:
        assert x.status is Status.SCORED
        assert x.value == pytest.approx(HAND[x.metric], abs=1e-15)
        assert json.loads(x.judge_raw_json) == REPLY
    (request,) = server.requests
    assert request.prompt == "claim_check"
    blocks = request.blocks()
    assert {b["name"]: b["text"] for b in blocks if "id" not in b} == {
        "question": CASE.question,
        "answer": "The answer.",
        "expected_answer": "The reference answer.",
    }
    # The whole context, as groundedness is shown it.
    assert [b["id"] for b in blocks if b["name"] == "chunk"] == [c.id for c in CONTEXT]


def test_a_chunk_past_k_supports_claims_but_is_not_in_context_precision(server: JudgeServer):
    at_5 = values(claims_asked(server, REPLY, k=5))
    assert at_5[d.CONTEXT_PRECISION] == ("scored", 0.6, None)
    # Recall and utilization read every chunk of the context, whatever k.
    assert at_5[d.RETRIEVAL_CLAIM_RECALL] == ("scored", 0.75, None)


def test_a_claim_supported_only_by_an_irrelevant_chunk_is_noise(server: JudgeServer):
    reply = {
        "response_claims": [r("only c4 says it", False, "c4")],
        "reference_claims": [g("g1", True, "c1")],
    }
    got = values(claims_asked(server, reply))
    assert got[d.NOISE_SENSITIVITY] == ("scored", 1.0, None)
    assert got[d.HALLUCINATION] == ("scored", 0.0, None)
    # c4 is named by no reference claim: not relevant (c1 is, in the top 3).
    assert got[d.CONTEXT_PRECISION] == ("scored", pytest.approx(1 / 3), None)


def test_empty_response_claims_make_the_answer_metrics_not_applicable(server: JudgeServer):
    reply = {"response_claims": [], "reference_claims": [g("g1", False, "c1"), g("g2", False)]}
    got = values(claims_asked(server, reply))
    for metric in (d.CLAIM_PRECISION, d.HALLUCINATION, d.SELF_KNOWLEDGE, d.NOISE_SENSITIVITY):
        assert got[metric] == ("not_applicable", None, "the answer makes no factual claims")
    assert got[d.CLAIM_RECALL] == ("scored", 0.0, None)
    assert got[d.RETRIEVAL_CLAIM_RECALL] == ("scored", 0.5, None)
    assert got[d.CONTEXT_UTILIZATION] == ("scored", 0.0, None)
    assert got[d.CONTEXT_PRECISION] == ("scored", pytest.approx(1 / 3), None)


def test_empty_reference_claims_make_the_reference_metrics_not_applicable(server: JudgeServer):
    reply = {"response_claims": [r("r1", False, "c1"), r("r2", False)], "reference_claims": []}
    got = values(claims_asked(server, reply))
    empty = "the expected answer makes no factual claims"
    for metric in (
        d.CLAIM_RECALL, d.RETRIEVAL_CLAIM_RECALL, d.CONTEXT_PRECISION, d.CONTEXT_UTILIZATION,
    ):  # fmt: skip
        assert got[metric] == ("not_applicable", None, empty)
    assert got[d.CLAIM_PRECISION] == ("scored", 0.0, None)
    assert got[d.HALLUCINATION] == ("scored", 0.5, None)
    assert got[d.NOISE_SENSITIVITY] == ("scored", 0.5, None)


def test_utilization_is_not_applicable_when_no_reference_claim_is_supported(server: JudgeServer):
    reply = {"response_claims": [r("r1", True)], "reference_claims": [g("g1", True, "zz")]}
    got = values(claims_asked(server, reply))
    assert got[d.CONTEXT_UTILIZATION] == (
        "not_applicable", None, "no claim of the expected answer is supported by a chunk",
    )  # fmt: skip
    assert got[d.RETRIEVAL_CLAIM_RECALL] == ("scored", 0.0, None)
    assert got[d.SELF_KNOWLEDGE] == ("scored", 1.0, None)


def test_cases_without_what_claims_need_skip_without_a_request(server: JudgeServer):
    no_reference = Case("q2", "Why?")
    got = values(
        run(d.CLAIM_GROUP.ask(no_reference, OUTPUT, make_judge(server.url), RunSettings()))
    )
    assert set(got.values()) == {("skipped", None, "case has no expected_answer")}
    blank = Case("q3", "Why?", expected_answer="   ")
    assert {x.reason for x in run(d.CLAIM_GROUP.ask(blank, OUTPUT, None, RunSettings()))} == {
        "no judge configured (set RAGPROOF_JUDGE_MODEL)"
    }
    no_context = CaseOutput("q1", Answer("The answer."))
    got = run(d.CLAIM_GROUP.ask(CASE, no_context, make_judge(server.url), RunSettings()))
    assert {x.reason for x in got} == {
        "no context: the answer has no retrieved_chunks and the adapter does not expose retrieval"
    }
    no_answer = run(
        d.CLAIM_GROUP.ask(CASE, CaseOutput("q1"), make_judge(server.url), RunSettings())
    )
    assert {x.reason for x in no_answer} == {"adapter produced no answer"}
    assert server.request_count == 0


def test_a_reply_of_the_wrong_shape_is_repaired_once_then_a_judge_error(server: JudgeServer):
    bad = {
        "response_claims": [{"claim": "x", "in_reference": "yes", "chunk_ids": []}],
        "reference_claims": [],
    }
    server.script(json.dumps(bad), json.dumps(bad))
    got = run(d.CLAIM_GROUP.ask(CASE, OUTPUT, make_judge(server.url), RunSettings()))
    assert {x.status for x in got} == {Status.JUDGE_ERROR}
    assert "response_claims[0].in_reference must be a JSON boolean" in got[0].reason
    assert server.request_count == 2


# --- nuggets --------------------------------------------------------------------------------

NUGGETS = (Nugget("n0", True), Nugget("n1", False), Nugget("n2", True), Nugget("n3", False))


def nuggets_asked(server: JudgeServer, verdicts: list[dict], nuggets=NUGGETS) -> dict:
    server.script(json.dumps({"nuggets": verdicts}))
    case = Case("q1", "What does the policy say?", nuggets=nuggets)
    return values(run(d.NUGGET_GROUP.ask(case, OUTPUT, make_judge(server.url), RunSettings())))


def test_nugget_recall_by_hand_with_missing_out_of_range_and_repeated_verdicts(server: JudgeServer):
    # n0 full; n1 partial and none (the lowest: none); n2 has no verdict (none);
    # n3 partial; index 7 does not exist (ignored).
    verdicts = [
        {"index": 0, "support": "full"},
        {"index": 1, "support": "partial"},
        {"index": 1, "support": "none"},
        {"index": 3, "support": "partial"},
        {"index": 7, "support": "full"},
    ]
    got = nuggets_asked(server, verdicts)
    assert got[d.NUGGET_RECALL] == ("scored", (1 + 0 + 0 + 0.5) / 4, None)
    assert got[d.VITAL_NUGGET_RECALL] == ("scored", (1 + 0) / 2, None)  # n0 and n2
    (request,) = server.requests
    assert request.prompt == "nugget_support"
    blocks = [b for b in request.blocks() if b["name"] == "nugget"]
    # Vitality is not shown to the judge: it must not sway the support verdicts.
    assert [(b["index"], b["text"]) for b in blocks] == [(0, "n0"), (1, "n1"), (2, "n2"), (3, "n3")]


def test_no_vital_nugget_makes_vital_recall_not_applicable(server: JudgeServer):
    okay = (Nugget("a", False), Nugget("b", False))
    got = nuggets_asked(server, [{"index": 0, "support": "full"}], okay)
    assert got[d.NUGGET_RECALL] == ("scored", 0.5, None)
    assert got[d.VITAL_NUGGET_RECALL] == ("not_applicable", None, "no nugget is vital")


def test_cases_without_nuggets_or_with_an_empty_list_ask_nothing(server: JudgeServer):
    judge = make_judge(server.url)
    none = run(d.NUGGET_GROUP.ask(Case("q1", "Q?"), OUTPUT, judge, RunSettings()))
    assert {(x.status, x.reason) for x in none} == {(Status.SKIPPED, "case has no nuggets")}
    empty = run(d.NUGGET_GROUP.ask(Case("q1", "Q?", nuggets=()), OUTPUT, judge, RunSettings()))
    assert {(x.status, x.reason) for x in empty} == {
        (Status.NOT_APPLICABLE, "the case's nuggets list is empty")
    }
    assert server.request_count == 0


# --- a run, per metric and combined -----------------------------------------------------------

FOLDER = FIXTURES / "diagnostics"
SELECTED = (
    "generation.groundedness",
    "generation.completeness",
    "generation.answer_relevance",
    *d.CLAIM_METRICS,
    *d.NUGGET_METRICS,
)


def _evaluate(judge):
    cases = load_dataset(FOLDER / "cases.jsonl")
    adapter = RecordedAdapter(str(FOLDER / "outputs.jsonl"))
    settings = RunSettings(concurrency=2, k=2, metrics=SELECTED)
    return run(evaluate(cases, adapter, settings, judge))


def _rows(evaluation) -> list[tuple]:
    return sorted(
        (x.case_id, x.metric, x.status.value, x.value, x.reason) for x in evaluation.results
    )


def test_a_run_per_metric_and_combined_gives_the_same_exact_values(server: JudgeServer):
    """tests/fixtures/diagnostics, the server's default replies (a claim per sentence;
    in the other text, or supported by a chunk, when that text holds half its words)."""
    per_metric = _evaluate(make_judge(server.url))
    rows = {(c, m): (s, v) for c, m, s, v, _ in _rows(per_metric)}
    # d1: answer "The refund window is 30 days. Opened items get store credit only."
    # reference "Refunds within 30 days of delivery. A receipt is required."
    # R: both claims supported by p1/p2; only the first is in the reference.
    # G: "Refunds within 30 days of delivery." in the answer and in p1; the receipt
    # sentence in p3 (past k = 2) and not in the answer.
    assert rows[("d1", d.CLAIM_PRECISION)] == ("scored", 0.5)
    assert rows[("d1", d.CLAIM_RECALL)] == ("scored", 0.5)
    assert rows[("d1", d.RETRIEVAL_CLAIM_RECALL)] == ("scored", 1.0)
    assert rows[("d1", d.CONTEXT_PRECISION)] == ("scored", 0.5)  # p1 relevant, p2 not; k = 2
    assert rows[("d1", d.CONTEXT_UTILIZATION)] == ("scored", 0.5)
    assert rows[("d1", d.HALLUCINATION)] == ("scored", 0.0)
    assert rows[("d1", d.NOISE_SENSITIVITY)] == ("scored", 0.5)
    assert rows[("d1", d.SELF_KNOWLEDGE)] == ("scored", 0.0)
    # Nuggets: "refund window 30 days" all words in the answer (full), "receipt required"
    # none (none), vital only the first.
    assert rows[("d1", d.NUGGET_RECALL)] == ("scored", 0.5)
    assert rows[("d1", d.VITAL_NUGGET_RECALL)] == ("scored", 1.0)
    # d2 has no expected_answer and no nuggets: every diagnostic skips, unasked.
    assert rows[("d2", d.HALLUCINATION)] == ("skipped", None)
    assert rows[("d2", d.NUGGET_RECALL)] == ("skipped", None)
    # d3: an invented answer: its one claim is in neither the reference nor a chunk.
    assert rows[("d3", d.HALLUCINATION)] == ("scored", 1.0)
    assert rows[("d3", d.RETRIEVAL_CLAIM_RECALL)] == ("scored", 1.0)
    assert rows[("d3", d.CONTEXT_UTILIZATION)] == ("scored", 0.0)
    # per_metric: groundedness, answer relevance for 3 cases; completeness and claims for
    # the 2 with a reference; nuggets for the one with nuggets.
    assert server.request_count == 3 + 3 + 2 + 2 + 1
    server.reset()
    combined = _evaluate(make_judge(server.url, mode="combined"))
    assert server.request_count == 3  # one request a case
    assert sorted(tuple(x.parts) for x in server.requests) == [
        ("groundedness", "answer_relevance"),
        ("groundedness", "answer_relevance", "completeness", "claim_check"),
        ("groundedness", "answer_relevance", "completeness", "claim_check", "nugget_support"),
    ]
    assert _rows(combined) == _rows(per_metric)


CASE_WITH_NUGGETS = Case(
    "q1", "What does the policy say?", expected_answer="The reference answer.",
    nuggets=(Nugget("n0", True),),
)  # fmt: skip


def combined_results(server: JudgeServer) -> dict[str, tuple]:
    """The selected metrics of CASE_WITH_NUGGETS in combined mode: one case's request."""
    settings = RunSettings(k=3, metrics=SELECTED)
    judge = make_judge(server.url, mode="combined")
    selection = Selection.from_settings(settings)
    return values(
        run(judged_results(CASE_WITH_NUGGETS, OUTPUT, judge, lambda: None, selection, 3, settings))
    )


def broken_claim_check(request: ReceivedRequest) -> str:
    """The server's valid reply for every part but claim_check, whose claim lacks its flag."""
    reply = json.loads(default_content(request))
    reply["claim_check"] = {
        "response_claims": [{"claim": "x", "chunk_ids": []}],
        "reference_claims": [],
    }
    return json.dumps(reply)


def test_combined_mode_carries_both_prompts_in_the_case_request(server: JudgeServer):
    got = combined_results(server)
    (request,) = server.requests
    assert request.prompt == "combined"
    assert request.parts == [
        "groundedness", "answer_relevance", "completeness", "claim_check", "nugget_support",
    ]  # fmt: skip
    # The context is sent once (groundedness and claim_check share it), the nuggets as blocks.
    names = [b["name"] for b in request.blocks()]
    assert names.count("chunk") == len(CONTEXT) and names.count("nugget") == 1
    assert {got[m][0] for m in (*d.CLAIM_METRICS, *d.NUGGET_METRICS)} <= {
        "scored",
        "not_applicable",
    }


def test_a_failed_claim_check_part_is_repaired_alone(server: JudgeServer):
    server.script(broken_claim_check, json.dumps({"claim_check": REPLY}))
    got = combined_results(server)
    first, repair = server.requests
    assert repair.prompt == "combined"
    instruction = repair.body["messages"][-1]["content"]
    assert 'the key(s) "claim_check"' in instruction
    assert "response_claims[0]" in instruction and "nugget_support" not in instruction
    # The repaired part scores exactly as REPLY does; the others kept their first verdicts.
    for metric, value in HAND.items():
        assert got[metric][:2] == ("scored", pytest.approx(value, abs=1e-15))
    assert got[d.NUGGET_RECALL] == ("scored", 0.0, None)  # "n0" is not in "The answer."
    assert got["generation.completeness"] == ("scored", 1.0, None)


def test_a_claim_check_part_failing_twice_fails_its_metrics_alone(server: JudgeServer):
    server.script(broken_claim_check, broken_claim_check)
    got = combined_results(server)
    assert server.request_count == 2
    assert {got[m][0] for m in d.CLAIM_METRICS} == {"judge_error"}
    assert "reply failed validation twice" in got[d.HALLUCINATION][2]
    others = ("generation.groundedness", "generation.answer_relevance", d.NUGGET_RECALL)
    assert {got[m][0] for m in others} == {"scored"}
