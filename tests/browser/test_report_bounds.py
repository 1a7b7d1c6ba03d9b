"""A large run's report as a person sees it in Chromium: the cases table, the failures and
the obeyed injections say how many the run has, list the first few, and say where the
rest are (CONTRACT section 10); a run with repeats, the first cases' trials and how many
are left out (section 27). The runs are the fixtures of
tests/core/present/test_report_queries.py and test_trial_strips.py, with small limits
standing in for a million cases."""

from __future__ import annotations

from ragproof_core.present.html import write_html
from ragproof_core.present.report_data import ReportLimits, gather_report
from ragproof_core.present.report_queries import TRIAL_CASES
from ragproof_core.store.run_store import RunStore
from tests.core.present.test_report_queries import CASES, LIMITS, write_run
from tests.core.present.test_trial_strips import strips_in_order, write_trials_run
from tests.support.cli import cli_env
from tests.support.served import ServedApp


def opened(browser, url: str, ready: str, timeout_ms: int = 10_000):
    """A page of ``url`` once ``ready`` is there, and the script errors it raises."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.wait_for_selector(ready, timeout=timeout_ms)
    return page, errors


def test_bounded_sets_show_their_totals_and_where_the_rest_is(browser, tmp_path):
    store = RunStore(tmp_path / "store")
    write_run(store, "r1", seed=5)
    data = gather_report(store, "r1", limits=LIMITS)
    path = write_html(tmp_path / "report.html", data)
    page, errors = opened(browser, path.resolve().as_uri(), "body[data-ready='1']")

    listed = len(data["cases"]["ids"])
    assert page.locator("#cases h2").inner_text() == "Cases"
    assert page.locator("nav.top a[href='#cases']").inner_text() == "Cases"
    bound = page.locator("#cases-bound").inner_text()
    assert bound.startswith(f"This run has {CASES} cases.")
    assert f"the first {LIMITS.cases_listed} of the dataset" in bound
    assert "ragproof serve" in bound
    assert page.locator("#cases-table tr.case-row").count() == listed
    assert page.locator("#case-count").inner_text() == (
        f"{listed} of {listed} listed cases ({CASES} in the run)"
    )

    total = data["failures_total"]
    assert page.locator("#failures h2").inner_text() == f"Case failures ({total})"
    assert page.locator("#failures-table tr[data-case]").count() == LIMITS.failures
    assert (
        page.locator("#failures-more")
        .inner_text()
        .startswith(f"The first {LIMITS.failures} in dataset order are listed")
    )
    obeyed = data["injections_obeyed_total"]
    title = f"Injections the pipeline obeyed ({obeyed})"
    assert page.locator("#injections h2").inner_text() == title
    assert page.locator("#injections-more").is_visible()
    assert errors == []
    page.close()


def test_a_run_with_repeats_shows_the_first_cases_trials_and_says_how_many_are_left(
    browser, tmp_path
):
    store = RunStore(tmp_path / "store")
    expected = write_trials_run(store, "r1")
    ordered = strips_in_order(expected)
    data = gather_report(store, "r1", limits=ReportLimits(trial_cases=7))
    path = write_html(tmp_path / "report.html", data)
    page, errors = opened(browser, path.resolve().as_uri(), "body[data-ready='1']")

    flaky = sum(f for _, f in ordered)
    assert page.locator("#trials h2").inner_text() == f"Trials per case (3 a case; {flaky} flaky)"
    rows = page.locator("#trials-table tr[data-case]")
    assert [rows.nth(i).get_attribute("data-case") for i in range(rows.count())] == [
        cid for cid, _ in ordered[:7]
    ]
    assert page.locator("#trials-table tr.flaky").count() == flaky
    # One mark a trial: two metrics' strips of 3 marks on every row.
    assert page.locator("#trials-table span.trial").count() == 7 * 2 * 3
    assert page.locator("#trials-left-out").inner_text() == (
        "The first 7 of 12 cases, flaky first; 5 more not shown here. Every case:"
    )
    assert errors == []
    page.close()


def test_the_browser_shows_the_first_trial_cases_of_a_run_with_repeats(browser, tmp_path):
    # 61 cases: the page shows its first TRIAL_CASES, flaky first, and counts the rest.
    store = RunStore(tmp_path / "store")
    ordered = strips_in_order(write_trials_run(store, "r1", cases=61))
    flaky = sum(f for _, f in ordered)
    env = cli_env(RAGPROOF_STORE=str(store.layout.root))
    with ServedApp("serve", "--port", "0", env=env) as app:
        page, errors = opened(browser, f"{app.url}/runs/r1", "#trials-table", timeout_ms=20_000)
        assert (
            page.locator("#trials h2").inner_text() == f"Trials per case (3 a case; {flaky} flaky)"
        )
        rows = page.locator("#trials-table tr[data-case]")
        assert [rows.nth(i).get_attribute("data-case") for i in range(rows.count())] == [
            cid for cid, _ in ordered[:TRIAL_CASES]
        ]
        assert (
            f"The first {TRIAL_CASES} of 61 cases, flaky first ({61 - TRIAL_CASES} more not shown)"
            in page.locator("#trials p.sub").first.inner_text()
        )
        assert errors == []
        page.close()
