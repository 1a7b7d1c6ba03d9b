"""The report shows a conversation as a thread (CONTRACT section 16, issue 21): a real
judged run over two recorded conversations beside single cases, one turn hostile."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.runs import Runs

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "report_conversations"
RETENTION = "conversation.knowledge_retention"
RECALL = "retrieval.recall_at_k"

pytestmark = [
    pytest.mark.slow,  # a real `ragproof run` subprocess
    pytest.mark.xdist_group(__name__),  # one worker makes the shared runs, once
]


@pytest.fixture(scope="module")
def report(tmp_path_factory, server) -> tuple[str, dict]:
    runs = Runs(tmp_path_factory.mktemp("report-conversations"))
    run_id = runs.run_judged(FIXTURE, "ragproof.toml", server.url)
    page = (runs.store / "runs" / run_id / "report.html").read_text(encoding="utf-8")
    return page, _data(page)


def _data(page: str) -> dict:
    block = re.search(
        r'<script id="report-data" type="application/json">(.*?)</script>', page, re.S
    )
    return json.loads(block.group(1))


def _metric(data: dict, name: str) -> dict:
    return next(m for m in data["metrics"] if m["name"] == name)


def test_each_conversation_is_a_thread_of_its_turns_in_order(report):
    _, data = report
    assert data["cases"]["ids"] == ["s1", "c1#1", "c1#2", "c2#1", "c2#2", "c2#3", "s2"]
    threads = data["conversations"]
    assert {cid: t["turns"] for cid, t in threads.items()} == {
        "c1": ["c1#1", "c1#2"],
        "c2": ["c2#1", "c2#2", "c2#3"],
    }
    details = data["details"]
    assert [details[t]["turn"] for t in threads["c2"]["turns"]] == [
        {"conversation": "c2", "turn": n, "turns": 3} for n in (1, 2, 3)
    ]
    assert (details["s1"]["turn"], details["s2"]["turn"]) == (None, None)
    # Each turn carries its own question, answer, chunks against its own gold, verdicts.
    second = details["c2#2"]
    assert second["question"]["t"] == "How long does it take?"
    assert second["answer"]["t"] == "I FORGOT where you asked about."
    assert [(c["id"], c["expected"]) for c in second["chunks"]] == [("policy-1", False)]
    recall = {r["metric"]: r for r in second["results"]}[RECALL]
    assert (recall["status"], recall["value"]) == ("scored", 0.0)
    assert [(c["id"], c["valid"]) for c in details["c1#2"]["citations"]] == [
        ("policy-4", True),
        ("policy-404", False),
    ]


def test_the_conversations_own_metric_links_to_its_thread_with_its_verdicts(report):
    _, data = report
    # c2 forgot in turn 2 (1 of 2 retained); c1 retained its one later turn.
    assert _metric(data, RETENTION)["worst"] == ["c2", "c1"]
    (own,) = data["conversations"]["c2"]["results"]
    assert (own["metric"], own["status"], own["value"]) == (RETENTION, "scored", 0.5)
    assert own["retained"] == [{"turn": 2, "retained": False}, {"turn": 3, "retained": True}]
    # The worst turn of a per-turn metric belongs to a thread the page can open.
    worst_recall = _metric(data, RECALL)["worst"][0]
    assert worst_recall == "c2#2"
    assert data["details"][worst_recall]["turn"]["conversation"] in data["conversations"]


def test_a_hostile_turn_stays_inert_text(report):
    page, data = report
    turn = data["details"]["c1#2"]
    assert turn["question"]["t"].endswith("</script><script>window.__xss=1</script>")
    assert turn["answer"]["t"].startswith("<script>window.__xss=3</script><img src=x onerror=")
    assert turn["chunks"][0]["text"]["t"] == '</script><img src=x onerror="window.__xss=2">'
    assert page.count("<script") == 2  # the data block and the page's own script
    assert "window.__xss" in page  # present, as escaped JSON ...
    assert "<script>window.__xss" not in page and "<img" not in page  # ... never as markup
