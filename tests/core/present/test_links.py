from ragproof_core.present.links import RunLinks, served_run_links


def test_a_served_run_has_its_page_and_report_under_the_results_browser():
    assert served_run_links("http://127.0.0.1:8765/", "20260101T000000-abc") == RunLinks(
        page="http://127.0.0.1:8765/runs/20260101T000000-abc",
        report="http://127.0.0.1:8765/runs/20260101T000000-abc/report",
    )
    assert served_run_links("https://evals.example/ragproof", "r1").report == (
        "https://evals.example/ragproof/runs/r1/report"
    )


def test_without_an_http_results_browser_there_are_no_links():
    for unset in (None, "", "  ", "file:///tmp/store", "127.0.0.1:8765"):
        assert served_run_links(unset, "r1") is None
