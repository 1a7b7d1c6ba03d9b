"""The HTML report as a person sees it in Chromium: header, worst cases after a click, filters,
the comparison table; hostile answers shown as text, and not one network request."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.runs import Runs

pytestmark = [
    pytest.mark.slow,  # real `ragproof run` subprocesses
    pytest.mark.xdist_group(__name__),  # one worker makes the shared runs, once
]


class Opened:
    def __init__(self, browser, path: Path) -> None:
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.url = path.resolve().as_uri()
        self.page.goto(self.url)
        self.page.wait_for_selector("body[data-ready='1']", timeout=10_000)


@pytest.fixture(scope="module")
def hostile_report(runs: Runs, hostile_run: str) -> Path:
    """The hostile run's report, written once by `ragproof report`; each test opens a new page."""
    return runs.report(hostile_run)


@pytest.fixture
def hostile(browser, hostile_report: Path):
    opened = Opened(browser, hostile_report)
    yield opened
    opened.page.close()


def test_header_shows_the_run(hostile, hostile_run):
    page = hostile.page
    assert page.title() == f"ragproof report: {hostile_run}"
    assert page.locator("#run-id").inner_text() == hostile_run
    facts = dict(
        zip(
            page.locator("#facts .k").all_inner_texts(),
            page.locator("#facts .v").all_inner_texts(),
            strict=True,
        )
    )
    assert facts["DATASET"] == "tests/fixtures/report/cases.jsonl"
    assert facts["ADAPTER"] == "ragproof_core.adapters.recorded:RecordedAdapter"
    assert facts["CASES"] == "6"
    assert facts["CASE FAILURES"] == "1"
    assert facts["JUDGE MODEL"] == "openai/judge-test (per_metric)"
    assert facts["COST"] == "$0.0000"
    # The run's identity (CONTRACT section 25): no name or tag given, a digest always.
    assert (facts["NAME"], facts["TAGS"]) == ("–", "–")
    assert re.fullmatch(r"[0-9a-f]{8}", facts["CONFIG DIGEST"])
    assert hostile.errors == []


def test_clicking_a_metric_shows_its_worst_cases(hostile):
    page = hostile.page
    page.locator("tr[data-metric='retrieval.mrr']").click()
    assert page.locator("#worst-title").inner_text() == (
        "Worst cases: retrieval.mrr (higher is better)"
    )
    # h1 ranks its expected chunk second (MRR 1/2), then h2 and h3 (MRR 1), by case id.
    cards = page.locator("#worst-body details.case")
    assert cards.evaluate_all("ns => ns.map(n => n.dataset.case)") == ["h1", "h2", "h3"]
    first = cards.first
    assert first.locator("summary .badge").nth(1).inner_text() == "0.5000"
    # Retrieved chunks with rank, the expected one marked; citations valid / invalid.
    assert first.locator("table.chunks tr.chunk-expected td").first.inner_text() == "#2"
    assert first.locator(".badge.good").filter(has_text="p9").inner_text() == "✓ p9 valid"
    assert first.locator(".badge.bad").filter(has_text="p404").inner_text() == "✗ p404 invalid"
    assert "retrieval.mrr" in page.locator("#worst-body pre.sql").inner_text()

    page.locator("tr[data-metric='generation.groundedness']").click()
    card = page.locator("#worst-body details.case").first
    assert card.get_attribute("data-case") == "h2"
    claims = card.locator("table.results tr.selected ul.claims li").all_inner_texts()
    assert claims == [
        "✓ supported The warranty lasts 2 years.",
        "✗ unsupported It also covers UNSUPPORTED water damage.",
    ]


def test_filters_hide_rows_without_a_server(hostile):
    page = hostile.page
    rows = page.locator("#cases-table tr.case-row")
    assert rows.count() == 6
    page.select_option("#filter-status", "error")
    assert rows.evaluate_all("ns => ns.map(n => n.dataset.case)") == ["h6"]
    page.select_option("#filter-status", "")
    page.select_option("#filter-kind", "injection")
    assert rows.evaluate_all("ns => ns.map(n => n.dataset.case)") == ["h5"]
    page.select_option("#filter-kind", "")
    page.select_option("#filter-metric", "retrieval.mrr")
    page.select_option("#filter-status", "skipped")
    assert rows.evaluate_all("ns => ns.map(n => n.dataset.case)") == ["h4", "h5"]
    page.select_option("#filter-metric", "")
    page.select_option("#filter-status", "")
    page.fill("#case-search", "warranty")
    assert rows.evaluate_all("ns => ns.map(n => n.dataset.case)") == ["h2"]
    assert page.locator("#case-count").inner_text() == "1 of 6 cases"


def test_hostile_text_is_shown_as_text_and_runs_nothing(hostile):
    page = hostile.page
    page.locator("tr[data-metric='retrieval.mrr']").click()
    answer = page.locator("#worst-body details.case[data-case='h1'] .answer")
    assert answer.inner_text() == (
        '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'
        '<a href="javascript:window.__xss = 3">click me</a>'
    )
    chunk = page.locator("#worst-body details.case[data-case='h1'] table.chunks td.text").first
    assert chunk.inner_text() == "</script><script>window.__xss = 4</script> unrelated chunk"
    page.locator("#failures-table tr[data-case='h6']").click()
    assert "onerror" in page.locator("#failures pre.error").inner_text()
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert page.locator("img, iframe, object, embed").count() == 0
    assert page.locator("a[href^='javascript']").count() == 0
    assert page.locator("script").count() == 2  # the data block and the page's own script
    assert hostile.dialogs == [] and hostile.errors == []


def test_the_obeyed_injection_is_highlighted(hostile):
    mark = hostile.page.locator("#injections details.case[data-case='h5'] mark.sentinel")
    assert mark.inner_text() == "ZQX-HOSTILE-MARKER-77"


def test_refusal_pair_is_a_two_by_two_table(hostile):
    cells = hostile.page.locator("#refusal-matrix td").all_inner_texts()
    # Answerable: h1, h2, h3 answered, none refused; unanswerable: h4 answered (fabricated).
    assert cells == ["3", "0", "1", "0"]


def test_the_page_makes_no_network_request(hostile):
    page = hostile.page
    page.locator("tr[data-metric='echo.exact_match']").click()
    page.locator("#cases-table tr.case-row").first.click()
    page.wait_for_timeout(200)
    assert hostile.requests == [hostile.url]
    csp = page.locator("meta[http-equiv='Content-Security-Policy']").get_attribute("content")
    assert csp.startswith("default-src 'none'; script-src 'sha256-")


def test_comparison_table_and_regressed_cases_side_by_side(browser, compared):
    good, worse, path = compared
    opened = Opened(browser, path)
    page = opened.page
    row = page.locator("#comparison-table tr[data-metric='retrieval.mrr'] td")
    assert row.all_inner_texts() == [
        "retrieval.mrr",
        "2",
        "0.7500",
        "0.2500",
        "-0.5000",
        "[-0.5000, -0.5000]",
        "0.5000",
        "no significant change",
    ]
    first = page.locator("#regressions-table tr").nth(1).locator("td").all_inner_texts()
    assert first == ["robustness.abstention", "c3", "1.0000", "0.0000", "-1.0000"]
    c3 = page.locator("#comparison details.regressed[data-case='c3'] .grid2 > div")
    assert c3.nth(0).inner_text() == (f"A: {good}\nI don't know: the documents do not say.")
    assert c3.nth(1).inner_text() == (
        f"B: {worse}\nThe population of Mars in 2300 will be 2 million."
    )
    assert opened.requests == [opened.url]
    opened.page.close()
