"""How a run's judge usage (per metric and model) and jury agreement are shown:
the lines ``run`` and ``show`` print and the Markdown the Dagster UI displays."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragproof_core.judge.cost import format_usd
from ragproof_core.judge.types import ABORTED_JUDGE

_HEADERS = ("metric", "model", "requests", "cache hits", "judge errors", "tokens in", "tokens out")


def _cells(row: Mapping[str, Any]) -> tuple[str, ...]:
    return (
        str(row["metric"]),
        str(row["model"]),
        str(row["requests"]),
        str(row["cache_hits"]),
        str(row["judge_errors"]),
        str(row["input_tokens"]),
        str(row["output_tokens"]),
        format_usd(row["cost_usd"]),
    )


def judge_usage_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Plain-text table: one line per (metric, model)."""
    table = [(*_HEADERS, "cost"), *(_cells(row) for row in rows)]
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    lines = []
    for row in table:
        pairs = enumerate(zip(row, widths, strict=True))
        cells = [c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in pairs]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def judge_usage_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    headers = (*_HEADERS, "cost")
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(_cells(row)) + " |" for row in rows]
    return "\n".join(out)


def agreement_lines(agreement: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per metric: Krippendorff's alpha of the jury over the banded scores."""
    lines = []
    for metric, item in agreement.items():
        alpha = item.get("alpha")
        shown = "undefined (no variation)" if alpha is None else f"{alpha:.3f}"
        lines.append(f"  {metric}: alpha {shown} over {item.get('cases', 0)} cases")
    if lines:
        lines.insert(0, "jury agreement (Krippendorff's alpha, interval, bands 0/0.5/1):")
    return lines


def judge_failures_line(record: Any) -> str | None:
    """The summary's last line for a run with judge errors (CONTRACT section 24):
    ``judge: E of R requests failed (first: REASON)``; for a run aborted:judge,
    ``judge unavailable: REASON``; None when the judge never failed."""
    reason = getattr(record, "judge_first_error", None)
    if record.status == ABORTED_JUDGE:
        return f"judge unavailable: {reason or 'no reason recorded'}"
    if not record.judge_errors:
        return None
    first = f" (first: {reason})" if reason else ""
    return f"judge: {record.judge_errors} of {record.judge_requests} requests failed{first}"
