"""Metrics with nothing scored are left out of the tables by default (CONTRACT section
25), with a way to list them: the terminal summary, Dagster's Markdown, the comparison's
table and Markdown, and the flag the report and the browser read."""

from __future__ import annotations

from dataclasses import replace

from ragproof_core.present.compare_markdown import render_markdown
from ragproof_core.present.summary import (
    hidden_metrics,
    hidden_note,
    listed,
    nothing_scored,
    summary_markdown,
    summary_table,
)
from tests.core.present.test_compare_markdown import comparison


def _summary(metric: str, scored: int, skipped: int = 0, errored: int = 0, judge: int = 0):
    return {
        "metric": metric,
        "mean": 0.5 if scored else None,
        "p50": 0.5 if scored else None,
        "p95": 0.5 if scored else None,
        "scored": scored,
        "skipped": skipped,
        "errored": errored,
        "not_applicable": 0,
        "judge_errors": judge,
    }


SUMMARIES = [
    _summary("retrieval.mrr", 4, 2, errored=2),
    # Every case skipped but the two case failures every metric counts: nothing to show.
    _summary("retrieval.hop_recall_at_k", 0, 4, errored=2),
    # The judge failed on every case: shown, its failures are the news.
    _summary("generation.groundedness", 0, 0, errored=6, judge=4),
    _summary("agent.steps", 0, 6),
]


def test_nothing_scored_means_no_score_and_no_judge_error():
    assert [nothing_scored(s) for s in SUMMARIES] == [False, True, False, True]
    assert hidden_metrics(SUMMARIES) == ["retrieval.hop_recall_at_k", "agent.steps"]
    assert [s["metric"] for s in listed(SUMMARIES)] == [
        "retrieval.mrr",
        "generation.groundedness",
    ]
    assert listed(SUMMARIES, all_metrics=True) == SUMMARIES


def test_the_terminal_and_markdown_tables_leave_them_out_and_say_so():
    lines = summary_table(SUMMARIES).splitlines()
    assert [line.split()[0] for line in lines[2:]] == ["retrieval.mrr", "generation.groundedness"]
    assert len(summary_table(SUMMARIES, all_metrics=True).splitlines()) == 2 + 4
    assert hidden_note(SUMMARIES, "ragproof show R --all-metrics") == (
        "not shown: 2 metrics with nothing scored (ragproof show R --all-metrics lists them)"
    )
    assert hidden_note(SUMMARIES[:1], "x") is None
    markdown = summary_markdown(SUMMARIES).splitlines()
    assert len(markdown) == 2 + 2 + 2
    assert markdown[-1] == (
        "Not shown, nothing scored: `retrieval.hop_recall_at_k`, `agent.steps`."
    )


def test_a_comparison_leaves_out_the_metrics_neither_run_scored():
    c = comparison()
    first = c.metrics[0]
    unscored = replace(first, metric="agent.steps", scored_a=0, scored_b=0, paired=0)
    c = replace(c, metrics=(*c.metrics, unscored))
    assert c.unscored == ("agent.steps",)
    assert c.shown() == c.metrics[:-1] and c.shown(all_metrics=True) == c.metrics
    table = c.render_table()
    assert "agent.steps" not in table
    assert "Not shown: 1 metric neither run scored (--all-metrics lists them)." in table
    assert "agent.steps" in c.render_table(all_metrics=True)
    markdown = render_markdown(c)
    assert "| agent.steps |" not in markdown
    assert "Not shown, neither run scored them: `agent.steps`." in markdown
    assert "| agent.steps |" in render_markdown(c, all_metrics=True)
    # The JSON keeps every metric.
    assert "agent.steps" in c.to_dict()["metrics"]
