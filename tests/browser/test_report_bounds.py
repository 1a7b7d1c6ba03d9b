"""A large run's report as a person sees it in Chromium: the cases table, the failures and
the obeyed injections say how many the run has, list the first few, and say where the
rest are (CONTRACT section 10). The run is the bounded-report fixture of
tests/core/present/test_report_queries.py, with its small limits standing in for a
million cases."""

from __future__ import annotations

from ragproof_core.present.html import write_html
from ragproof_core.present.report_data import gather_report
from ragproof_core.store.run_store import RunStore
from tests.core.present.test_report_queries import CASES, LIMITS, write_run


def test_bounded_sets_show_their_totals_and_where_the_rest_is(browser, tmp_path):
    store = RunStore(tmp_path / "store")
    write_run(store, "r1", seed=5)
    data = gather_report(store, "r1", limits=LIMITS)
    path = write_html(tmp_path / "report.html", data)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.resolve().as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=10_000)

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
