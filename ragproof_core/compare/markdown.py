"""A comparison as GitHub-flavoured Markdown: a pull-request comment or a job summary.

Same figures as the terminal table (``report.render_table``), laid out for
GitHub: a one-line verdict first, the per-metric table, then the status changes
and the largest regressions folded in ``<details>``.
"""

from __future__ import annotations

from ragproof_core.compare.correction import HOLM
from ragproof_core.compare.gate import regressions
from ragproof_core.compare.report import BETTER, WORSE, Comparison

_VERDICT_ICON = {BETTER: "🟢", WORSE: "🔴"}


def _cell(text: str) -> str:
    """Table cell text: pipes and newlines would break the row."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _num(x: float | None) -> str:
    return "–" if x is None else f"{x:.4f}"


def _signed(x: float | None) -> str:
    return "–" if x is None else f"{x:+.4f}"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def headline(comparison: Comparison, margin: float = 0.0) -> str:
    worse = regressions(comparison, margin)
    better = [m.metric for m in comparison.metrics if m.verdict == BETTER]
    if worse:
        names = ", ".join(f"`{m.metric}`" for m in worse)
        text = f"🔴 **Regression**: {len(worse)} metric(s) significantly worse: {names}"
    else:
        text = "🟢 **No significant regression**"
    if margin:
        text += f" (margin {margin:g})"
    if better:
        text += f"; significantly better: {', '.join(f'`{m}`' for m in better)}"
    return text


def adjusted_line(comparison: Comparison) -> str:
    """The p-values the regression gate reads, adjusted for the metrics tested."""
    tested = [m for m in comparison.metrics if m.p_adjusted is not None]
    values = ", ".join(f"`{m.metric}` {_num(m.p_adjusted)}" for m in tested)
    if comparison.correction == HOLM:
        return (
            f"p adjusted for the {len(tested)} metrics tested (Holm), which the regression "
            f"gate reads: {values}."
        )
    return f"p not adjusted for the {len(tested)} metrics tested (correction none)."


def render_markdown(comparison: Comparison, margin: float = 0.0) -> str:
    c = comparison
    out = [
        f"### ragproof: `{c.run_b}` vs `{c.run_a}`",
        "",
        headline(c, margin),
        "",
        f"A (baseline) `{c.run_a}`, judge {c.judge_model_a or 'none'}; "
        f"B `{c.run_b}`, judge {c.judge_model_b or 'none'}.",
    ]
    if c.mixed_judges:
        out += ["", "> [!WARNING]", "> Mixed judges allowed; judge scores are not comparable:"]
        out += [f"> - {_cell(d)}" for d in c.judge_differences]
    out += [
        "",
        _row(["metric", "paired", "mean A", "mean B", "delta", "95% CI", "p", "verdict"]),
        "| :--- | ---: | ---: | ---: | ---: | ---: | ---: | :--- |",
    ]
    for m in c.metrics:
        ci = "–" if m.ci_low is None else f"[{_signed(m.ci_low)}, {_signed(m.ci_high)}]"
        name = m.metric + ("" if m.higher_is_better else " (lower is better)")
        verdict = f"{_VERDICT_ICON.get(m.verdict, '⚪')} {m.verdict}"
        row = [name, str(m.paired), _num(m.mean_a), _num(m.mean_b), _signed(m.delta), ci]
        out.append(_row([*row, _num(m.p_value), verdict]))
    out += [
        "",
        f"delta = B − A over the cases scored in both runs; 95% paired bootstrap CI; verdict "
        f"from a paired sign-flip test at alpha {c.alpha:g}, in each metric's own direction.",
        "",
        adjusted_line(c),
    ]
    if c.settings_differences:
        out += [
            "",
            "> [!WARNING]",
            "> Mixed settings allowed; retrieval scores are different measures:",
        ]
        out += [f"> - {_cell(d)}" for d in c.settings_differences]
    moves = [(m.metric, t, n) for m in c.metrics for t, n in m.transitions.items()]
    if moves:
        out += ["", "<details><summary>Status changes (A → B)</summary>", ""]
        out += [_row(["metric", "change", "cases"]), "| :--- | :--- | ---: |"]
        out += [_row([m, t, str(n)]) for m, t, n in moves]
        out += ["", "</details>"]
    if c.regressions:
        top = len(c.regressions)
        out += ["", f"<details><summary>Largest case regressions (top {top})</summary>", ""]
        out += [_row(["metric", "case", "A", "B", "delta"]), "| :--- | :--- | ---: | ---: | ---: |"]
        out += [
            _row([r.metric, r.case_id, _num(r.value_a), _num(r.value_b), _signed(r.delta)])
            for r in c.regressions
        ]
        out += ["", "</details>"]
    return "\n".join(out) + "\n"
