"""The report's trajectory view (CONTRACT section 17): steps in order, each hop's gold
chunks marked, made calls paired with expected ones by the metrics' maximal matching,
unmatched expected calls and missing hops named."""

from __future__ import annotations

from ragproof_core.adapters.coerce import to_steps
from ragproof_core.model import Answer, Case, ExpectedTool, ToolMatch
from ragproof_core.present.trajectory import trajectory


def clip(value):
    return None if value is None else {"t": value}


STEPS = to_steps(
    [
        {
            "type": "retrieve",
            "query": "refund policy",
            "chunks": [
                {
                    "id": "p3#0",
                    "text": "Refunds within 30 days.",
                    "metadata": {"document_id": "p3"},
                },
                {"id": "x#0", "text": "Shipping."},
            ],
        },
        {"type": "tool", "name": "search", "arguments": {"q": "a"}, "output": "hit"},
        {"type": "tool", "name": "search", "arguments": {"q": "b"}},
    ]
)
CASE = Case(
    "a1",
    "q?",
    expected_tools=(
        ExpectedTool("search"),
        ExpectedTool("search", {"q": "a"}),
        ExpectedTool("refund"),
    ),
    tool_match=ToolMatch.ANY_ORDER,
    expected_hops=(("p3",), ("orders",)),
)


def test_steps_hops_and_the_maximal_matching_are_shown():
    shown = trajectory(
        CASE, Answer("done", steps=STEPS), match_documents=True, clip=clip, chunks_shown=10
    )
    retrieve, first_call, second_call = shown["steps"]
    assert (retrieve["n"], retrieve["hop"], retrieve["query"], retrieve["gold"]) == (
        1,
        1,
        {"t": "refund policy"},
        ["p3"],
    )
    assert [(c["id"], c["gold"]) for c in retrieve["chunks"]] == [("p3#0", True), ("x#0", False)]
    # search(q=a) serves the expected search(q=a), so search(q=b) takes the bare search.
    assert (first_call["name"], first_call["arguments"], first_call["output"]) == (
        "search",
        {"t": '{"q": "a"}'},
        {"t": "hit"},
    )
    assert (first_call["matches_expected"], second_call["matches_expected"]) == (2, 1)
    assert shown["expected_tools"] == [
        {"name": "search", "arguments": None, "matched_step": 3},
        {"name": "search", "arguments": '{"q": "a"}', "matched_step": 2},
        {"name": "refund", "arguments": None, "matched_step": None},
    ]
    assert (shown["tool_match"], shown["missing_hops"]) == ("any_order", [2])


def test_chunk_mode_marks_by_chunk_id_and_no_steps_shows_no_trajectory():
    shown = trajectory(
        CASE, Answer("done", steps=STEPS), match_documents=False, clip=clip, chunks_shown=1
    )
    (chunk,) = shown["steps"][0]["chunks"]
    assert (chunk["id"], chunk["gold"], shown["steps"][0]["chunks_total"]) == ("p3#0", False, 2)
    assert (
        trajectory(CASE, Answer("done"), match_documents=True, clip=clip, chunks_shown=10) is None
    )
    assert (
        trajectory(Case("c", "q?"), None, match_documents=True, clip=clip, chunks_shown=10) is None
    )
    empty = trajectory(
        CASE, Answer("done", steps=()), match_documents=True, clip=clip, chunks_shown=10
    )
    assert (empty["steps"], empty["missing_hops"]) == ([], [1, 2])
