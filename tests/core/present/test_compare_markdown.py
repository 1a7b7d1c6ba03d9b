"""`compare --format markdown` on the hand-made comparison fixture: the exact text."""

from pathlib import Path

from ragproof_core.compare.comparison import compare_runs
from ragproof_core.present.compare_markdown import headline, render_markdown
from tests.core.compare.test_comparison import side

EXPECTED = Path(__file__).parents[2] / "fixtures" / "compare" / "expected.md"


def comparison():
    return compare_runs(side("run-a", "results_a.csv"), side("run-b", "results_b.csv"))


def test_markdown_matches_the_reviewed_rendering():
    assert render_markdown(comparison()) == EXPECTED.read_text(encoding="utf-8")


def test_headline_names_regressions_and_improvements_and_the_margin():
    c = comparison()
    assert headline(c) == (
        "🔴 **Regression**: 1 metric(s) significantly worse: `generation.groundedness`; "
        "significantly better: `retrieval.recall_at_k`, `robustness.overrefusal`"
    )
    assert headline(c, margin=0.6) == (
        "🟢 **No significant regression** (margin 0.6); "
        "significantly better: `retrieval.recall_at_k`, `robustness.overrefusal`"
    )


def test_every_table_row_has_the_header_column_count():
    lines = [line for line in render_markdown(comparison()).splitlines() if line.startswith("|")]
    header = lines[0].count(" | ")
    metric_rows = lines[: 2 + 7]
    assert all(line.count(" | ") == header for line in metric_rows)
