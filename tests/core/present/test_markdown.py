"""What the Dagster UI shows: distributions on case_scores, worst cases on run_summary."""

from ragproof_core.model import Status, scored, skipped
from ragproof_core.present.markdown import (
    distributions_markdown,
    sparkline,
    worst_cases_markdown,
)


def test_sparkline_scales_to_the_tallest_bin():
    assert sparkline([0, 1, 2, 4, 8, 0, 0, 0, 0, 8]) == " ▁▂▄█    █"
    assert sparkline([0] * 10) == ""


def test_distributions_table_lists_every_metric_in_registry_order():
    results = [
        scored("a", "robustness.overrefusal", 1.0),
        scored("a", "retrieval.mrr", 1.0),
        scored("b", "retrieval.mrr", 0.5),
        scored("c", "retrieval.mrr", 0.5),
        skipped("a", "generation.groundedness", "no judge"),
    ]
    assert results[-1].status is Status.SKIPPED
    assert distributions_markdown(results).splitlines()[2:] == [
        "| metric | scored | distribution | bin counts |",
        "| :--- | ---: | :--- | :--- |",
        "| retrieval.mrr | 3 | `     █   ▄` | 0 0 0 0 0 2 0 0 0 1 |",
        "| generation.groundedness | 0 | nothing scored | 0 0 0 0 0 0 0 0 0 0 |",
        "| robustness.overrefusal | 1 | `         █` | 0 0 0 0 0 0 0 0 0 1 |",
    ]


def test_worst_cases_escape_markup_and_table_syntax():
    report = {
        "metrics": [{"name": "robustness.overrefusal", "worst": ["c|1"]}],
        "details": {
            "c|1": {
                "question": {"t": "Why | how?", "cut": 0},
                "answer": {"t": "<script>x</script>\nnext line", "cut": 0},
                "results": [{"metric": "robustness.overrefusal", "value": 1.0}],
            }
        },
    }
    assert worst_cases_markdown(report).splitlines()[2] == (
        "| robustness.overrefusal (lower is better) | `c\\|1` | 1.0000 | Why \\| how? "
        "| \\<script\\>x\\</script\\> next line |"
    )
    assert worst_cases_markdown({"metrics": [], "details": {}}) == "No case was scored."
