"""The results browser (`ragproof serve` / `ragproof label`) driven in Chromium.

One store per module, filled by the real `ragproof run` (two judged runs of the hostile
serve fixture, good then worse, and one unjudged run of another dataset), and one
`ragproof label` server over it, whose other pages are the `serve` app's. Each test walks
a whole path a person takes: browse, compare and search; label; try to break it.
The last test serves the same store copied to moto's S3 server on loopback.
"""

from __future__ import annotations

import json
import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote, urlsplit

import httpx
import numpy as np
import pytest
import s3fs

from ragproof_core.calibration.probe import ProbeResult, ProbeRow
from ragproof_core.present.links import served_run_links
from ragproof_core.store.run_store import RunStore
from tests.support.cli import ragproof
from tests.support.judge_server import JudgeServer
from tests.support.runs import Runs
from tests.support.served import ServedApp
from tests.support.stores import StoreUnderTest

pytestmark = [
    pytest.mark.slow,  # real `ragproof run` subprocesses and servers
    pytest.mark.xdist_group(__name__),  # one worker makes the shared runs, once
]

REPO = Path(__file__).resolve().parents[2]
SERVE = REPO / "tests" / "fixtures" / "serve"
RECORDED = REPO / "tests" / "fixtures" / "recorded"
GROUNDEDNESS = "generation.groundedness"
HOSTILE_ID = 's2<img src=x onerror="window.__xss = 22">'
# Runs store the dataset as given: relative to the folder `ragproof run` ran in (the repo).
SERVE_DATASET = "tests/fixtures/serve/cases.jsonl"
RECORDED_DATASET = "tests/fixtures/recorded/cases.jsonl"
LABEL_ARGS = ("--metric", GROUNDEDNESS, "--sample", "6")


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> dict:
    runs = Runs(tmp_path_factory.mktemp("results-browser"))
    with JudgeServer() as judge:
        judged = {
            "RAGPROOF_JUDGE_MODEL": "openai/judge-test",
            "RAGPROOF_JUDGE_API_BASE": judge.url,
            "OPENAI_API_KEY": "sk-test-dummy",
            "RAGPROOF_JUDGE_INPUT_COST_PER_MTOK": "0",
        }
        good = runs.run(SERVE, "ragproof.toml", **judged)
        # Later start times than `good`: the worse run and the other dataset's run.
        with ThreadPoolExecutor(2) as pool:
            worse = pool.submit(runs.run, SERVE, "ragproof_worse.toml", **judged)
            other = pool.submit(runs.run, RECORDED, "ragproof.toml")
            worse, other = worse.result(), other.result()
    return {"runs": runs, "good": good, "worse": worse, "other": other}


@pytest.fixture(scope="module")
def app(store):
    with ServedApp(
        "label", store["good"], *LABEL_ARGS, "--annotator", "ann", env=store["runs"].env
    ) as served:
        yield served


class Page:
    """A page of the app with every request, dialog and script error it caused."""

    def __init__(self, browser, base: str) -> None:
        self.base = base
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def open(self, path: str):
        response = self.page.goto(self.base + path)
        self.ready()
        return response

    def ready(self) -> None:
        self.page.wait_for_selector("body[data-ready='1']", timeout=15_000)

    def visible_rows(self, selector: str, key: str) -> list[str]:
        return self.page.locator(selector).evaluate_all(
            f"ns => ns.filter(n => !n.hidden).map(n => n.dataset.{key})"
        )

    def assert_inert(self) -> None:
        page = self.page
        assert page.evaluate("typeof window.__xss") == "undefined"
        assert page.locator("img, iframe, object, embed").count() == 0
        assert page.locator("a[href^='javascript']").count() == 0
        assert page.locator("script").count() == 2  # the data block and the page's own script
        assert self.dialogs == [] and self.errors == []
        assert {urlsplit(u).netloc for u in self.requests} == {urlsplit(self.base).netloc}


def _values(store_dir: Path, run_id: str, metric: str) -> dict[str, float]:
    rows = StoreUnderTest("local", str(store_dir)).query(
        "SELECT case_id, value FROM case_results WHERE run_id = ? AND metric = ? "
        "AND status = 'scored'",
        [run_id, metric],
    )
    return dict(rows)


def _label_one(page, how: str, key_or_score: str) -> str:
    """Score the case on the page (clicking the band or pressing its key); its case id."""
    page.wait_for_selector("body[data-label-state='waiting']")
    case = page.locator("#label-case").get_attribute("data-case")
    # The judge's verdict is nowhere on the page, nor in its data, before the person scores.
    assert page.locator("#verdict").is_hidden()
    data = page.locator("#app-data").text_content()
    assert "judge_score" not in data and "claims" not in data
    if how == "click":
        page.locator(f"#bands button[data-score='{key_or_score}']").click()
    else:
        page.keyboard.press(key_or_score)
    page.wait_for_selector("body[data-label-state='scored']")
    assert page.locator("#verdict").is_visible()
    return case


def test_runs_list_trend_report_comparison_and_case_search(browser, store, app):
    good, worse, other = store["good"], store["worse"], store["other"]
    p = Page(browser, app.url)
    page = p.page
    p.open("/runs")
    rows = "#runs-table tr.run-row"
    shown = p.visible_rows(rows, "run")
    assert sorted(shown) == sorted([other, worse, good]) and shown[-1] == good  # newest first
    page.select_option("#filter-dataset", SERVE_DATASET)
    assert p.visible_rows(rows, "run") == [worse, good]
    assert page.locator("#run-count").inner_text() == "2 of 3 runs"
    cells = page.locator(f"tr[data-run='{good}'] td").all_inner_texts()
    # dataset, adapter (its class; the full name as the cell's title), settings, judge
    assert cells[4:8] == [
        SERVE_DATASET,
        "RecordedAdapter",
        f"k 5 · chunk · {cells[6].split(' · ')[2]}",
        "openai/judge-test\nper_metric",
    ]
    assert page.locator(f"tr[data-run='{good}'] td[title$=':RecordedAdapter']").count() == 1
    page.select_option("#filter-judge", "none")
    assert p.visible_rows(rows, "run") == []
    # A filter in the address (what a link from elsewhere carries).
    p.open("/runs?dataset=" + quote(RECORDED_DATASET, safe=""))
    assert p.visible_rows(rows, "run") == [other]

    # Two runs compared: the paired statistics of `ragproof compare`, the same numbers.
    p.open("/runs")
    page.check(f"tr[data-run='{good}'] input[name='run-a']")
    page.check(f"tr[data-run='{worse}'] input[name='run-b']")
    page.click("#compare-selected")
    p.ready()
    assert urlsplit(page.url).path == "/compare"
    done = ragproof("compare", good, worse, "--json", env=store["runs"].env)
    assert done.returncode == 0, done.stderr
    expected = json.loads(done.stdout)["metrics"]
    shown = page.locator("#comparison-table tbody tr").evaluate_all(
        "ns => ns.map(n => n.dataset.metric)"
    )
    assert shown == list(expected)
    m = expected[GROUNDEDNESS]
    assert page.locator(
        f"#comparison-table tr[data-metric='{GROUNDEDNESS}'] td"
    ).all_inner_texts() == [
        GROUNDEDNESS,
        str(m["paired"]),
        f"{m['mean_a']:.4f}",
        f"{m['mean_b']:.4f}",
        f"{m['delta']:+.4f}",
        f"[{m['ci_low']:.4f}, {m['ci_high']:.4f}]",
        f"{m['p_value']:.4f}",
        f"{m['p_adjusted']:.4f}",
        f"{m['mde']:.4f}",
        m["verdict"],
    ]
    # ... and the `report --against` view of the same pair, served.
    page.click("#against-link")
    page.wait_for_selector("body[data-ready='1']")
    assert page.title() == f"ragproof report: {worse}"
    assert page.locator(f"#comparison-table tr[data-metric='{GROUNDEDNESS}']").count() == 1

    # Runs judged differently are refused, as `compare` refuses them, unless asked.
    p.open(f"/compare?a={other}&b={good}")
    assert "were judged differently" in page.locator("#refused pre").inner_text()
    page.click("#allow-mixed")
    p.ready()
    assert "mixed judges" in page.locator("#compare-head").inner_text()
    assert page.locator("#comparison-table tbody tr").count() > 0

    # A trend: each run's mean with its interval, from the stored scores.
    p.open("/trends?dataset=" + quote(SERVE_DATASET, safe=""))
    card = page.locator(f".trend-card[data-metric='{GROUNDEDNESS}']")
    points = card.locator("g.point")
    assert points.evaluate_all("ns => ns.map(n => n.dataset.run)") == [good, worse]
    titles = card.locator("g.point title").all_text_contents()
    for run_id, title in zip((good, worse), titles, strict=True):
        values = np.array(list(_values(store["runs"].store, run_id, GROUNDEDNESS).values()))
        mean, half = values.mean(), 1.96 * values.std(ddof=1) / math.sqrt(values.size)
        low, high = max(0.0, mean - half), min(1.0, mean + half)
        assert title == f"{run_id}: {mean:.4f} [{low:.4f}, {high:.4f}], n = {values.size}"
    assert card.locator("g.point line.ci").count() == 2

    # A run's page links its report, served as `ragproof report` writes it.
    p.open(f"/runs/{good}")
    page.click("#report-link")
    page.wait_for_selector("body[data-ready='1']")
    assert page.title() == f"ragproof report: {good}"
    assert page.locator("#run-id").inner_text() == good

    # Case search: text (any case) and a metric's status.
    p.open(f"/runs/{good}/cases")
    page.fill("#case-q", "WARRANTY")
    page.select_option("#case-metric", GROUNDEDNESS)
    page.select_option("#case-status", "scored")
    page.click("#case-go")
    p.ready()
    assert p.visible_rows("#case-table tr.case-row", "case") == [HOSTILE_ID]
    assert page.locator("#case-total").inner_text() == "1–1 of 1 matching cases"
    page.fill("#case-q", "")
    page.select_option("#case-metric", "robustness.abstention")
    page.select_option("#case-status", "skipped")
    page.click("#case-go")
    p.ready()
    assert page.locator("#case-total").inner_text() == "1–8 of 8 matching cases"
    page.select_option("#case-metric", GROUNDEDNESS)
    page.click("#case-go")
    p.ready()
    assert page.locator("#case-total").inner_text() == "0 matching cases"
    p.assert_inert()
    page.close()


def test_labelling_five_cases_resuming_and_a_second_annotator(browser, store, app):
    good = store["good"]
    judge = _values(store["runs"].store, good, GROUNDEDNESS)
    p = Page(browser, app.url)
    page = p.page
    # `ragproof label`'s own address is its labelling page: 200, no redirect.
    response = p.open("/")
    assert response.status == 200 and response.request.redirected_from is None
    assert page.locator("#progress").inner_text() == "0 of 6 labelled by this annotator"
    steps = [("click", "1"), ("click", "0"), ("key", "2"), ("click", "0.5"), ("key", "3")]
    scores = {"1": 1.0, "0": 0.0, "0.5": 0.5, "2": 0.5, "3": 1.0}
    given: dict[str, float] = {}
    for number, (how, what) in enumerate(steps):
        case = _label_one(page, how, what)
        assert case not in given
        given[case] = scores[what]
        # The verdict after the score: the judge's stored score for this case.
        assert page.locator("#verdict .fact .v").nth(1).inner_text() == f"{judge[case]:.2f}"
        assert page.locator("#progress").inner_text() == (
            f"{number + 1} of 6 labelled by this annotator"
        )
        if number == 1:
            p.open("/")  # a reload resumes where the person stopped
            assert page.locator("#progress").inner_text() == "2 of 6 labelled by this annotator"
        elif number % 2:
            page.keyboard.press("Enter")
            p.ready()
        else:
            page.click("#label-next")
            p.ready()
    page.wait_for_selector("body[data-label-state='waiting']")
    last = page.locator("#label-case").get_attribute("data-case")
    assert last not in given and len(set(given) | {last}) == 6 and set(given) <= set(judge)
    tally = page.locator(f"#label-tally tr[data-metric='{GROUNDEDNESS}'] td").all_inner_texts()
    assert tally[1:3] == ["5", "1"]

    # A second annotator labels the same sample, from its start.
    page.fill("#annotator", "bob")
    page.click("#annotator-go")
    p.ready()
    assert page.locator("#progress").inner_text() == "0 of 6 labelled by this annotator"
    bob = {}
    for what in ("2", "1"):
        case = _label_one(page, "key", what)
        bob[case] = {"2": 0.5, "1": 0.0}[what]
        page.keyboard.press("Enter")
        p.ready()

    # Every label is in the store's `labels` view, as given.
    rows = StoreUnderTest("local", str(store["runs"].store)).query(
        "SELECT case_id, metric, score, annotator FROM labels WHERE run_id = ? "
        "AND annotator IN ('ann', 'bob')",
        [good],
    )
    assert sorted(rows) == sorted(
        [(c, GROUNDEDNESS, s, "ann") for c, s in given.items()]
        + [(c, GROUNDEDNESS, s, "bob") for c, s in bob.items()]
    )

    # The tally: 7 labels by 2 people; the corrected mean is section 12's PPI over
    # each case's mean human score, as numpy computes it.
    human: dict[str, list[float]] = {}
    for case, score in [*given.items(), *bob.items()]:
        human.setdefault(case, []).append(score)
    labelled = sorted(human)
    f_l = np.array([judge[c] for c in labelled])
    y_l = np.array([np.mean(human[c]) for c in labelled])
    f_u = np.array([judge[c] for c in sorted(set(judge) - set(human))])
    ppi = f_u.mean() + (y_l - f_l).mean()
    tally = page.locator(f"#label-tally tr[data-metric='{GROUNDEDNESS}'] td").all_inner_texts()
    assert tally[:5] == [
        GROUNDEDNESS,
        "7",
        "2",
        f"{np.mean(list(judge.values())):.4f}",
        f"{ppi:.4f}",
    ]
    # The run's page shows the same count and corrected mean, and the run's latest
    # judge bias probe (as `ragproof probe` stores it).
    rows = (
        ProbeRow(GROUNDEDNESS, "verbosity", 8, 2, 0),
        ProbeRow(GROUNDEDNESS, "position", 8, 0, 0),
    )
    RunStore(store["runs"].store).write_probe(ProbeResult(good, "openai/judge-test", 8, 0, rows))
    p.open(f"/runs/{good}")
    row = page.locator(f"#metrics-table tr[data-metric='{GROUNDEDNESS}'] td").all_inner_texts()
    assert row[5:7] == ["7", f"{ppi:.4f}"]
    probes = page.locator("#probes-table tbody tr")
    assert probes.nth(0).locator("td").all_inner_texts()[:5] == [
        GROUNDEDNESS,
        "verbosity",
        "8",
        "2",
        "0.250",
    ]
    assert probes.count() == 2
    p.assert_inert()
    page.close()


def test_foreign_host_and_origin_are_refused_and_hostile_text_is_inert(browser, store, app):
    good, worse = store["good"], store["worse"]
    own = f"http://127.0.0.1:{app.port}"
    label = {
        "run_id": good,
        "case_id": "s3",
        "metric": GROUNDEDNESS,
        "score": 1,
        "annotator": "mallory",
        "sample": 8,
        "seed": 0,
        "metric_filter": GROUNDEDNESS,
    }
    with httpx.Client(base_url=app.url) as client:
        assert client.get("/").status_code == 200
        assert client.get("/", headers={"Host": f"localhost:{app.port}"}).status_code == 200
        # DNS rebinding: a hostile name resolving to 127.0.0.1 carries that name as Host.
        for host in ("evil.example", f"evil.example:{app.port}", "127.0.0.1:1"):
            refused = client.get("/runs", headers={"Host": host})
            assert refused.status_code == 403, host
            assert "Host" in refused.text
        # A cross-site form or fetch carries the other site's Origin (or none from a tool).
        for headers in ({"Origin": "http://evil.example"}, {"Origin": "http://127.0.0.1:1"}, {}):
            refused = client.post("/api/labels", json=label, headers=headers)
            assert refused.status_code == 403, headers
        mallory = StoreUnderTest("local", str(store["runs"].store)).query(
            "SELECT count(*) FROM labels WHERE annotator = 'mallory'"
        )
        assert mallory == [(0,)]
        # The same request from the app's own page is taken.
        assert client.post("/api/labels", json=label, headers={"Origin": own}).status_code == 200
        # What the Dagster UI links with RAGPROOF_SERVE_URL set is served here.
        links = served_run_links(app.url, good)
        for url in (links.page, links.report):
            answer = client.get(url)
            assert answer.status_code == 200 and good in answer.text, url

    # Hostile questions, answers, chunk texts and ids are text on every page.
    p = Page(browser, app.url)
    page = p.page
    for path in (
        "/runs",
        f"/runs/{good}",
        "/trends?dataset=" + quote(SERVE_DATASET, safe=""),
        f"/compare?a={good}&b={worse}",
        f"/runs/{good}/cases?q=script",
        f"/runs/{good}/cases?q=img",
    ):
        p.open(path)
        p.assert_inert()
    p.open(f"/runs/{good}/cases?q=script")
    assert page.locator("#case-table tr.case-row td.mono").all_inner_texts() == ["s1", HOSTILE_ID]
    assert page.locator(
        f"#case-table tr[data-case='{HOSTILE_ID}'] td.text .answer"
    ).inner_text() == (
        "<script>window.__xss = 26</script>The warranty lasts 2 years. "
        "It also covers UNSUPPORTED water damage."
    )
    p.open(f"/compare?a={good}&b={worse}")
    assert HOSTILE_ID in page.locator("#regressions-table").inner_text()
    for path in (f"/runs/{good}/report", f"/runs/{worse}/report?against={good}"):
        page.goto(app.url + path)
        page.wait_for_selector("body[data-ready='1']")
        p.assert_inert()
    # Every sampled case on the labelling page, each scored by keyboard.
    p.open(f"/label/{good}?annotator=xss-check&metric={GROUNDEDNESS}&sample=8")
    seen = {}
    for _ in range(8):
        p.assert_inert()
        case = _label_one(page, "key", "3")
        seen[case] = page.locator("#label-case").inner_text()
        page.keyboard.press("Enter")
        p.ready()
    assert page.locator("#label-finished").count() == 1
    assert "<script>window.__xss = 21</script>" in seen["s1"]
    assert 'd9"><script>window.__xss = 23</script>' in seen["s1"]
    assert "</script><script>window.__xss = 24</script>" in seen["s1"]
    assert HOSTILE_ID in seen[HOSTILE_ID]
    p.assert_inert()
    page.close()


def test_the_same_app_over_an_s3_store(browser, store, s3_server, monkeypatch):
    # The session's moto server (tests/conftest.py), in a bucket of this test's own.
    good, s3 = store["good"], s3_server
    bucket = s3.new_bucket()
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    fs = s3fs.S3FileSystem(
        endpoint_url=s3.endpoint, key="testing-key-id", secret="testing-secret-key"
    )
    fs.put(str(store["runs"].store / "runs"), f"{bucket}/store/", recursive=True)
    location = f"s3://{bucket}/store"
    env = {**store["runs"].env, **s3.env(), "RAGPROOF_STORE": location}
    with ServedApp("serve", env=env) as served:
        p = Page(browser, served.url)
        page = p.page
        p.open("/")
        assert sorted(p.visible_rows("#runs-table tr.run-row", "run")) == sorted(
            [good, store["worse"], store["other"]]
        )
        assert location in page.locator("nav.top .store").inner_text()
        page.goto(f"{served.url}/runs/{good}/report")
        page.wait_for_selector("body[data-ready='1']")
        assert page.locator("#run-id").inner_text() == good
        p.open(f"/label/{good}?annotator=s3-ann&metric={GROUNDEDNESS}&sample=6")
        first = _label_one(page, "click", "0")
        page.keyboard.press("Enter")
        p.ready()
        second = _label_one(page, "key", "3")
        p.open(f"/label/{good}?annotator=s3-ann&metric={GROUNDEDNESS}&sample=6")
        assert page.locator("#progress").inner_text() == "2 of 6 labelled by this annotator"
        p.assert_inert()
        page.close()
    rows = StoreUnderTest("s3", location).query(
        "SELECT case_id, score FROM labels WHERE run_id = ? AND annotator = 's3-ann'", [good]
    )
    assert sorted(rows) == sorted([(first, 0.0), (second, 1.0)])
