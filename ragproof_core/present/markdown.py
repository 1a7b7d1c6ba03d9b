"""What the Dagster UI shows of a run's cases, as Markdown metadata.

``run_summary`` shows the worst cases per metric (from the report's data, so
the UI and the HTML report never disagree); ``case_scores`` shows each
metric's distribution as a text histogram, which Dagster renders as-is.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ragproof_core.metrics.aggregate import ValueCounts
from ragproof_core.metrics.registry import higher_is_better, metric_order
from ragproof_core.model import MetricResult, Status
from ragproof_core.present.report_data import HISTOGRAM_BINS, counted_histogram

_BLOCKS = " ▁▂▃▄▅▆▇█"
WORST_IN_UI = 3  # per metric: the UI is a summary; the report has the rest


def _cell(text: str, limit: int = 80) -> str:
    text = " ".join(str(text).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    # Markdown table cells: escape what would end the cell or start markup.
    for char in "\\|`*_[]<>":
        text = text.replace(char, "\\" + char)
    return text


def _code(text: str) -> str:
    """Text for inside a code span in a table cell (no escapes work there but ``\\|``)."""
    return str(text).replace("`", "'").replace("|", "\\|")


def sparkline(counts: list[int]) -> str:
    """Counts as block characters, tallest bin = full block; an empty bin is a space."""
    top = max(counts) if counts else 0
    if top == 0:
        return ""
    return "".join(_BLOCKS[0 if c == 0 else max(1, round(8 * c / top))] for c in counts)


def distributions_markdown(results: Iterable[MetricResult]) -> str:
    """One row per metric: scored count, the histogram over [0, 1] and the bin counts."""
    values: dict[str, list[float]] = defaultdict(list)
    seen: set[str] = set()
    for r in results:
        seen.add(r.metric)
        if r.status is Status.SCORED and r.value is not None:
            values[r.metric].append(r.value)
    return distributions_table(seen, lambda metric: ValueCounts.of(values[metric]))


def distributions_table(seen: set[str], values_of: Callable[[str], ValueCounts]) -> str:
    """``distributions_markdown`` from the metrics seen and each one's scored values."""
    lines = [
        f"Histogram of scored values over [0, 1] in {HISTOGRAM_BINS} bins (left = 0, right = 1).",
        "",
        "| metric | scored | distribution | bin counts |",
        "| :--- | ---: | :--- | :--- |",
    ]
    for metric in metric_order(seen):
        values = values_of(metric)
        counts = counted_histogram(values)
        spark = f"`{sparkline(counts)}`" if values.n else "nothing scored"
        lines.append(f"| {metric} | {values.n} | {spark} | {' '.join(map(str, counts))} |")
    return "\n".join(lines)


def worst_cases_markdown(report: Mapping[str, Any], per_metric: int = WORST_IN_UI) -> str:
    """The worst ``per_metric`` cases of each scored metric, with their answers."""
    details = report["details"]
    lines = [
        "| metric | case | value | question | answer |",
        "| :--- | :--- | ---: | :--- | :--- |",
    ]
    for block in report["metrics"]:
        for case_id in block["worst"][:per_metric]:
            d = details.get(case_id, {})
            value = next(
                (r["value"] for r in d.get("results", []) if r["metric"] == block["name"]), None
            )
            answer = (d.get("answer") or {}).get("t") or d.get("error") or ""
            question = (d.get("question") or {}).get("t", "")
            shown = "–" if value is None else f"{value:.4f}"
            # The report's block carries the run's own direction (custom metrics included).
            up = block.get("higher_is_better", higher_is_better(block["name"]))
            direction = "" if up else " (lower is better)"
            lines.append(
                f"| {block['name']}{direction} | `{_code(case_id)}` | {shown} "
                f"| {_cell(question)} | {_cell(answer)} |"
            )
    if len(lines) == 2:
        return "No case was scored."
    return "\n".join(lines)
