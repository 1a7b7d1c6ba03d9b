"""A conversation's thread in the report, as a person sees it in Chromium (CONTRACT section
16): a worst turn's card opens its conversation, every turn in order; a hostile turn is text."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.test_report_page import Opened
from tests.support.judge_server import JudgeServer
from tests.support.runs import Runs

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "report_conversations"

pytestmark = pytest.mark.slow  # a real `ragproof run` subprocess


@pytest.fixture
def opened(browser, runs: Runs):
    with JudgeServer() as server:
        run_id = runs.run_judged(FIXTURE, "ragproof.toml", server.url)
    page = Opened(browser, runs.report(run_id))
    yield page
    page.page.close()


def test_a_worst_turn_opens_its_conversation_thread_and_hostile_text_runs_nothing(opened):
    page = opened.page
    page.locator("tr[data-metric='retrieval.recall_at_k']").click()
    card = page.locator("#worst-body details.case").first
    assert card.get_attribute("data-case") == "c2#2"
    assert card.locator("summary .badge.turn").inner_text() == "turn 2 of 3"
    card.locator("button.thread-button").click()
    assert page.locator("#thread-title").inner_text() == "Conversation c2 (3 turns)"
    turns = page.locator("#thread-body ol.thread > li.turn")
    assert turns.evaluate_all("ns => ns.map(n => n.dataset.case)") == ["c2#1", "c2#2", "c2#3"]
    assert turns.nth(1).locator(".answer").inner_text() == "I FORGOT where you asked about."
    own = page.locator("#thread-body > table.results ul.claims li").all_inner_texts()
    assert own == ["✗ not retained turn 2", "✓ retained turn 3"]

    # The conversation's own metric lists conversations; each row opens its thread.
    page.locator("tr[data-metric='conversation.knowledge_retention']").click()
    rows = page.locator("#worst-body .conversation-row")
    assert rows.evaluate_all("ns => ns.map(n => n.dataset.conversation)") == ["c2", "c1"]
    rows.nth(1).locator("button.thread-button").click()
    hostile = page.locator("#thread-body li.turn[data-case='c1#2']")
    assert hostile.locator(".answer").inner_text() == (
        '<script>window.__xss=3</script><img src=x onerror="window.__xss=4"> 14 days.'
    )
    assert hostile.locator("table.chunks td.text").first.inner_text() == (
        '</script><img src=x onerror="window.__xss=2">'
    )
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert page.locator("img, iframe, object, embed").count() == 0
    assert page.locator("script").count() == 2
    assert opened.dialogs == [] and opened.errors == []
    assert opened.requests == [opened.url]
