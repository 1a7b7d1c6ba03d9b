"""docs/dagster.md's picture, made as the docs say: a suite's ``run_summary`` Plots tab in
a team's own project charts each metric's mean run after run (CONTRACT section 30)."""

from __future__ import annotations

import pytest

from tests.browser.screenshot_dagster import PICTURE, make
from tests.support.browser import missing_reason


@pytest.mark.slow
def test_the_plots_tab_charts_a_suites_means(tmp_path):
    reason = missing_reason()
    if reason is not None:
        pytest.skip(reason)
    plots = make(tmp_path / "img", tmp_path / "work")
    # A chart per scored metric's mean and per count; nothing for what was not scored.
    assert {
        "mean/retrieval.recall_at_k",
        "mean/retrieval.mrr",
        "mean/generation.citation_validity",
        "cases",
        "case_failures",
    } <= set(plots.titles)
    assert "mean/generation.groundedness" not in plots.titles
    assert plots.picture.name == PICTURE
    assert plots.picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
