"""`ragproof label` on a run with conversation turns, in Chromium (CONTRACT sections 16
and 22): a later turn's page shows the earlier turns its judge read, a first turn's
none. The run is the judged conversations fixture of
tests/cli/test_calibrate_conversations.py (tests/fixtures/calibrate_conversations)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.judge_server import JudgeServer
from tests.support.runs import Runs
from tests.support.served import ServedApp

pytestmark = pytest.mark.slow  # a real `ragproof run` and `ragproof label`

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "calibrate_conversations"
TURNS = 7  # groundedness is judge-scored on 5 turns and 2 single cases


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    runs = Runs(tmp_path_factory.mktemp("label-conversations"))
    with JudgeServer() as judge:
        run_id = runs.run_judged(FIXTURE, "ragproof.toml", judge.url)
    args = ("--metric", "generation.groundedness", "--sample", str(TURNS), "--annotator", "ann")
    with ServedApp("label", run_id, *args, env=runs.env) as served:
        yield served


def test_a_later_turns_label_page_shows_its_earlier_turns(browser, app):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(app.url + "/")
    shown: dict[str, list[str]] = {}
    for _ in range(TURNS):
        page.wait_for_selector("body[data-label-state='waiting']")
        case = page.locator("#label-case").get_attribute("data-case")
        shown[case] = page.locator("#label-history tr td").all_inner_texts()
        page.keyboard.press("3")
        page.wait_for_selector("body[data-label-state='scored']")
        page.keyboard.press("Enter")
        page.wait_for_selector("body[data-ready='1']")
    assert shown["c1#2"] == [
        "user",
        "I bought the kettle on 3 May. What is the refund window?",
        "assistant",
        "30 days.",
    ]
    assert len(shown["c2#3"]) == 8  # two earlier turns, question and answer each
    assert shown["c1#1"] == shown["s1"] == []
