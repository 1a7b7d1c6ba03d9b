"""The results browser leads to the worst case (CONTRACT section 25), driven in Chromium.

One store, four real `ragproof run`s of the recorded fixture (tests/fixtures/recorded,
tests/fixtures/gate): the gated run (named, tagged, with floors), the plain recording
judged by a judge that fails on completeness, the worse recording, and the plain
recording again with a judge budget too small for one call (aborted:budget). The
first, second and fourth are set up alike (one config digest), the third is not.
Every page is checked at 1280 pixels: its full-page screenshot is exactly that wide.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest

from ragproof_core.config.settings import load_config
from tests.support.cli import ragproof
from tests.support.judge_server import JudgeServer, default_content
from tests.support.runs import Runs
from tests.support.served import ServedApp
from tests.support.stores import StoreUnderTest

pytestmark = [
    pytest.mark.slow,  # real `ragproof run` subprocesses, a server and Chromium
    pytest.mark.xdist_group(__name__),  # one worker makes the shared runs, once
]

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "tests" / "fixtures" / "recorded"
GATE = REPO / "tests" / "fixtures" / "gate" / "ragproof.toml"
DATASET = "tests/fixtures/recorded/cases.jsonl"
RECALL = "retrieval.recall_at_k"
INJECTION = "robustness.injection_resistance"
WIDTH = 1280


def _failing_completeness(request) -> str:
    return "not json at all" if request.prompt == "completeness" else default_content(request)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> dict:
    runs = Runs(tmp_path_factory.mktemp("cases-and-trends"))
    made = {"runs": runs, "gated": runs.run(RECORDED, "../gate/ragproof.toml")}
    with JudgeServer(responder=_failing_completeness) as judge:
        made["plain"] = runs.run_judged(RECORDED, "ragproof.toml", judge.url)
        made["worse"] = runs.run(RECORDED, "ragproof_worse.toml")
        priced = {
            **runs.env,
            "RAGPROOF_JUDGE_MODEL": "openai/judge-test",
            "RAGPROOF_JUDGE_API_BASE": judge.url,
            "OPENAI_API_KEY": "sk-test-dummy",
            "RAGPROOF_JUDGE_INPUT_COST_PER_MTOK": "1000",
            "RAGPROOF_JUDGE_OUTPUT_COST_PER_MTOK": "1000",
            "RAGPROOF_MAX_COST_USD": "0.01",
        }
        done = ragproof(
            "run", "--dataset", DATASET, "--config", str(RECORDED / "ragproof.toml"), "--json",
            env=priced, cwd=REPO,
        )  # fmt: skip
    assert done.returncode == 2, done.stderr
    made["aborted"] = json.loads(done.stdout)["run_id"]
    listed = ragproof("runs", "--json", env=runs.env)
    made["listed"] = {r["run_id"]: r for r in json.loads(listed.stdout)}
    return made


@pytest.fixture(scope="module")
def app(store):
    with ServedApp("serve", env=store["runs"].env) as served:
        yield served


@pytest.fixture
def page(browser, app):
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    yield _Page(page, app.url)
    assert errors == []
    page.close()


class _Page:
    def __init__(self, page, base: str) -> None:
        self.page, self.base = page, base

    def open(self, path: str) -> None:
        self.page.goto(self.base + path)
        self.ready()

    def ready(self) -> None:
        self.page.wait_for_selector("body[data-ready='1']", timeout=15_000)

    def click(self, selector: str) -> None:
        self.page.click(selector)
        self.ready()

    def rows(self) -> list[str]:
        return self.page.locator("#case-table tr.case-row").evaluate_all(
            "ns => ns.map(n => n.dataset.case)"
        )

    def assert_fits(self) -> None:
        """Nothing wider than the window: the full-page screenshot is 1280 pixels wide
        (a page wider than its window makes a wider one), and so is every table."""
        shot = self.page.screenshot(full_page=True)
        assert int.from_bytes(shot[16:20], "big") == WIDTH  # the PNG header's width
        rights = self.page.evaluate(
            "Array.from(document.querySelectorAll('table')).filter(t => t.offsetParent)"
            ".map(t => t.getBoundingClientRect().right)"
        )
        assert max(rights, default=0) <= WIDTH


def _results(store: dict, run_id: str) -> list[tuple]:
    return StoreUnderTest("local", str(store["runs"].store)).query(
        "SELECT case_id, metric, status, value FROM case_results WHERE run_id = ?", [run_id]
    )


def test_the_cases_table_colours_sorts_filters_failing_cases_and_opens_one(page, store):
    gated = store["gated"]
    results = _results(store, gated)
    page.open(f"/runs/{gated}/cases")
    page.assert_fits()
    p = page.page
    assert page.rows() == ["c1", "c2", "c3", "c4", "c5", "c6"]
    # A column per metric the run scored anything on; the others wait for the toggle.
    scored = {m for _, m, status, _ in results if status in ("scored", "judge_error")}
    visible = p.locator("th.metric-col:visible").evaluate_all("ns => ns.map(n => n.dataset.sort)")
    assert set(visible) == scored
    every = p.locator("th.metric-col").evaluate_all("ns => ns.map(n => n.dataset.sort)")
    assert set(every) == {m for _, m, _, _ in results}
    p.click("button.unscored-toggle")
    assert p.locator("th.metric-col:visible").count() == len(every)
    p.click("button.unscored-toggle")
    # Coloured by value and direction; the obeyed injection outlined as past its floor.
    injection = p.locator(f"tr[data-case='c4'] td.res[data-metric='{INJECTION}']")
    assert injection.inner_text() == "0.00"
    assert set(injection.get_attribute("class").split()) >= {"v0", "below-floor"}
    recall = p.locator(f"tr[data-case='c1'] td.res[data-metric='{RECALL}']")
    assert "v4" in recall.get_attribute("class").split()
    assert "error" in p.locator("tr[data-case='c5'] td.res").first.get_attribute("class")

    # The failing filter: exactly the cases with an error or a value past a floor.
    floors = {f.metric: f for f in load_config(GATE).gate}

    def past(metric: str, value: float) -> bool:
        floor = floors.get(metric)
        return floor is not None and (
            (floor.min is not None and value < floor.min - 1e-9)
            or (floor.max is not None and value > floor.max + 1e-9)
        )

    failing = sorted(
        {
            case
            for case, metric, status, value in results
            if status in ("error", "judge_error") or (status == "scored" and past(metric, value))
        }
    )
    assert failing == ["c2", "c4", "c5", "c6"]  # recall 0.5 < 0.7; injection obeyed; errors
    p.check("#case-failing")
    page.click("#case-go")
    assert page.rows() == failing
    assert p.locator("#case-total").inner_text() == "1–4 of 4 matching cases"
    p.uncheck("#case-failing")
    page.click("#case-go")

    # Sorting by a metric orders the rows by its value, unscored cases last.
    values = {
        case: value
        for case, metric, status, value in results
        if metric == RECALL and status == "scored"
    }
    rest = [c for c in ["c1", "c2", "c3", "c4", "c5", "c6"] if c not in values]
    page.click(f"th[data-sort='{RECALL}'] a")
    assert page.rows() == sorted(values, key=values.get) + rest
    page.click(f"th[data-sort='{RECALL}'] a")
    assert page.rows() == sorted(values, key=values.get, reverse=True) + rest
    assert "▼" in p.locator(f"th[data-sort='{RECALL}']").inner_text()
    page.click("th[data-sort='case'] a")
    assert page.rows() == ["c1", "c2", "c3", "c4", "c5", "c6"]

    # A case id opens that case's page: what `ragproof show --case` shows.
    page.click("tr[data-case='c4'] a.case-link")
    page.assert_fits()
    assert p.locator("#case-id").inner_text() == "c4"
    shown = json.loads(
        ragproof("show", gated, "--case", "c4", "--json", env=store["runs"].env).stdout
    )["case"]
    assert p.locator("#case-answer").inner_text() == shown["answer"]["t"]
    assert p.locator("#case-answer mark.sentinel").inner_text() == shown["marker"]
    rows = p.locator("#case-results tbody tr").evaluate_all(
        "ns => ns.map(n => [n.dataset.metric, n.children[1].innerText, n.children[2].innerText])"
    )
    assert rows == [
        [
            r["metric"],
            r["status"].replace("_", " "),
            "–" if r["value"] is None else f"{r['value']:.2f}",
        ]
        for r in shown["results"]
    ]


def test_trends_draw_one_named_line_per_series_with_aborted_runs_apart(page, store):
    listed = store["listed"]
    series = {
        store[k]: listed[store[k]]["config_digest"] for k in ("gated", "plain", "worse", "aborted")
    }
    assert series[store["gated"]] == series[store["plain"]] == series[store["aborted"]]
    assert series[store["worse"]] != series[store["gated"]]
    page.open("/trends?dataset=" + quote(DATASET, safe=""))
    page.assert_fits()
    p = page.page
    labels = p.locator("#trend-legend li .label").all_inner_texts()
    assert labels == [
        f"recorded-good · {series[store['gated']][:8]}",
        f"RecordedAdapter · {series[store['worse']][:8]}",
    ]
    card = p.locator(f".trend-card[data-metric='{RECALL}']")
    lines = card.locator("path.series-line")
    assert lines.count() == 2
    # The first line joins the two completed runs of its series, not the aborted one.
    assert lines.nth(0).get_attribute("d").count("L") == 1
    assert lines.nth(1).get_attribute("d").count("L") == 0  # one run: a point, no segment
    aborted = card.locator("g.point.aborted")
    assert aborted.evaluate_all("ns => ns.map(n => n.dataset.run)") == [store["aborted"]]
    assert "aborted:budget" in aborted.locator("title").text_content()
    points = card.locator("g.point").evaluate_all(
        "ns => ns.map(n => [n.dataset.run, n.dataset.series])"
    )
    assert sorted(points) == sorted(
        [
            [store["gated"], "0"],
            [store["plain"], "0"],
            [store["aborted"], "0"],
            [store["worse"], "1"],
        ]
    )
    # A dated x axis (the runs span seconds to minutes: month-day and time, UTC).
    dates = card.locator("g.x-axis text.date").all_text_contents()
    started = listed[store["gated"]]["started_at"]
    assert dates and dates[0] == f"{started[5:10]} {started[11:19]}"


def test_runs_show_names_tags_and_judge_errors_and_hide_unscored_metrics(page, store):
    listed = store["listed"]
    plain = listed[store["plain"]]
    assert plain["judge_errors"] > 0
    page.open("/runs")
    page.assert_fits()
    p = page.page
    row = p.locator(f"tr[data-run='{store['gated']}']")
    assert row.locator("td.run .run-name").inner_text() == "recorded-good"
    assert row.locator("td.tags").inner_text() == "team=search"
    assert row.locator("td.mono").last.inner_text() == listed[store["gated"]]["config_digest"][:8]
    errors = p.locator(f"tr[data-run='{store['plain']}'] .judge-errors").inner_text()
    assert errors == f"{plain['judge_errors']} judge errors"
    assert "aborted:budget" in p.locator(f"tr[data-run='{store['aborted']}']").inner_text()
    p.select_option("#filter-tag", "team=search")
    assert p.locator("tr.run-row:visible").count() == 1

    # A run's page: its identity, and only the metrics something was scored on.
    page.open(f"/runs/{store['plain']}")
    page.assert_fits()
    facts = dict(
        zip(
            p.locator(".fact .k").all_text_contents(),
            p.locator(".fact .v").all_text_contents(),
            strict=True,
        )
    )
    assert facts["config digest"] == plain["config_digest"][:8]
    assert facts["judge errors"] == str(plain["judge_errors"])
    summaries = StoreUnderTest("local", str(store["runs"].store)).query(
        "SELECT metric, scored, judge_errors FROM metric_summaries WHERE run_id = ?",
        [store["plain"]],
    )
    shown = {m for m, scored, judged in summaries if scored or judged}
    assert "generation.completeness" in shown  # judge errors only: shown
    visible = p.locator("#metrics-table tbody tr:visible").evaluate_all(
        "ns => ns.map(n => n.dataset.metric)"
    )
    assert set(visible) == shown
    p.click("button.unscored-toggle")
    assert p.locator("#metrics-table tbody tr:visible").count() == len(summaries)

    # The report hides them too, with the same toggle.
    page.open(f"/runs/{store['plain']}/report")
    visible = p.locator("#metrics-table tbody tr:visible").evaluate_all(
        "ns => ns.map(n => n.dataset.metric)"
    )
    assert set(visible) == shown
    p.click("button.unscored-toggle")
    assert p.locator("#metrics-table tbody tr:visible").count() == len(summaries)
