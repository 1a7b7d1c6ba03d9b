"""`compare --format markdown` on the hand-made comparison fixture: the exact text."""

import re
from dataclasses import replace
from html import escape as html_escape
from pathlib import Path

from markdown_it import MarkdownIt

from ragproof_core.compare.comparison import compare_runs
from ragproof_core.present.compare_markdown import code, headline, render_markdown, text
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


HOSTILE_CASE = 'c1 <img src=x onerror="alert(1)">|pwned\nnext | line'
HOSTILE_JUDGE = "<script>alert('judge')</script> **bold** [link](javascript:alert(1))"
HOSTILE_METRIC = "custom.<b>x</b>|`y`_z_"


def hostile_comparison():
    """The fixture's comparison with hostile case ids, judge names and metric names."""
    c = comparison()
    metrics = tuple(
        replace(m, metric=HOSTILE_METRIC, transitions={"scored -> <i>error</i>|x": 1})
        if i == 0
        else m
        for i, m in enumerate(c.metrics)
    )
    regressions = tuple(replace(r, case_id=HOSTILE_CASE) for r in c.regressions)
    return replace(
        c,
        judge_model_a=HOSTILE_JUDGE,
        judge_model_b="`` ` ``<img src=y onerror=alert(2)>",
        judge_differences=(f"judge {HOSTILE_JUDGE}\nsecond line",),
        metrics=metrics,
        regressions=regressions,
    )


def _html(markdown: str) -> str:
    """The Markdown as GitHub would render it: CommonMark with raw HTML on, plus tables."""
    return (
        MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).render(markdown)
    )


def test_hostile_values_render_as_text_and_keep_the_tables_whole():
    c = comparison()
    first = replace(c.metrics[0], transitions={"scored -> error": 1})
    plain = replace(c, judge_differences=("judge differs",), metrics=(first, *c.metrics[1:]))
    benign, hostile = render_markdown(plain), render_markdown(hostile_comparison())
    assert len(hostile.splitlines()) == len(benign.splitlines())
    html = _html(hostile)
    for tag in ("<img", "<script", "<b>", "<i>", "<strong>bold", '<a href="javascript'):
        assert tag not in html
    assert html.count("<tr>") == _html(benign).count("<tr>")
    # Each value is shown whole, as text, in its cell.
    cell = "c1 &lt;img src=x onerror=&quot;alert(1)&quot;&gt;|pwned next | line"
    assert html.count(f">{cell}</td>") == len(hostile_comparison().regressions)
    assert f">{html_escape(HOSTILE_METRIC, quote=False)}</td>" in html
    assert "judge &lt;script&gt;alert('judge')&lt;/script&gt; **bold**" in html
    # Every table row still has the header's column count.
    for table in re.findall(r"<table>.*?</table>", html, flags=re.S):
        rows = re.findall(r"<tr>(.*?)</tr>", table, flags=re.S)
        assert len({len(re.findall(r"<t[hd][ >]", row)) for row in rows}) == 1


def test_text_and_code_escape_by_rule():
    assert text("retrieval.recall_at_k") == "retrieval.recall_at_k"
    assert text("_a_ *b* `c` [d](e) ~f~ $g$ h|i \\ <j> &k") == (
        "\\_a\\_ \\*b\\* \\`c\\` \\[d\\](e) \\~f\\~ \\$g\\$ h\\|i \\\\ &lt;j> &amp;k"
    )
    assert text("one\ntwo\r\nthree\u2028four") == "one two three four"
    assert code("a.b") == "`a.b`"
    assert code("x ``y`` z") == "```x ``y`` z```"
    assert code("`x`") == "`` `x` ``"
