"""A comparison as GitHub-flavoured Markdown: a pull-request comment or a job summary.

Same figures as the terminal table (``report.render_table``), laid out for
GitHub: the broken floors first (CONTRACT section 25: what must never happen, read
before what may drift), a one-line verdict, the floors and the per-metric table,
then the status changes and the largest regressions folded in ``<details>``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragproof_core.compare.comparison import BETTER, TAIL_NOTE, WORSE, Comparison
from ragproof_core.compare.correction import HOLM
from ragproof_core.compare.floors import FloorResult, broken
from ragproof_core.compare.gate import regressions

_VERDICT_ICON = {BETTER: "🟢", WORSE: "🔴"}


# Characters that start Markdown markup anywhere in a line (GitHub-flavoured:
# emphasis, code, links and images, strikethrough, math, table cells). Values
# never start a line (line breaks become spaces), so block markers need nothing.
_MARKUP = re.compile(r"[\\`*\[\]~$|]")
# "_" is markup only at a word's edge (CommonMark never reads an intraword "_"
# as emphasis), so identifiers such as recall_at_k stay readable.
_EDGE_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
# Raw HTML and entity references start with these; a ">" inside a line is plain text.
_HTML = {"&": "&amp;", "<": "&lt;"}


def _one_line(value: object) -> str:
    return " ".join(str(value).splitlines())


def text(value: object) -> str:
    """``value`` shown as itself in Markdown, in running text or a table cell.

    HTML is turned into entities (``<img onerror=...>`` shows as text), Markdown
    markup characters and ``|`` are backslash-escaped, line breaks become spaces.
    """
    escaped = "".join(_HTML.get(char, char) for char in _one_line(value))
    escaped = _MARKUP.sub(lambda m: "\\" + m.group(), escaped)
    return _EDGE_UNDERSCORE.sub(r"\_", escaped)


def code(value: object) -> str:
    """``value`` as an inline code span, which shows HTML and markup literally.

    The fence is one backtick longer than the longest backtick run inside, so no
    value can close it early; CommonMark strips one padding space each side.
    """
    inner = _one_line(value)
    fence = "`" * (max((len(run) for run in re.findall("`+", inner)), default=0) + 1)
    if inner.startswith("`") or inner.endswith("`"):
        inner = f" {inner} "
    return f"{fence}{inner}{fence}"


def _num(x: float | None) -> str:
    return "–" if x is None else f"{x:.4f}"


def _signed(x: float | None) -> str:
    return "–" if x is None else f"{x:+.4f}"


def _row(cells: list[str]) -> str:
    """A table row of already escaped cells."""
    return "| " + " | ".join(cells) + " |"


def headline(comparison: Comparison, margin: float = 0.0) -> str:
    worse = regressions(comparison, margin)
    better = [m.metric for m in comparison.metrics if m.verdict == BETTER]
    if worse:
        names = ", ".join(code(m.metric) for m in worse)
        line = f"🔴 **Regression**: {len(worse)} metric(s) significantly worse: {names}"
    else:
        line = "🟢 **No significant regression**"
    if margin:
        line += f" (margin {margin:g})"
    if better:
        line += f"; significantly better: {', '.join(code(m) for m in better)}"
    return line


def adjusted_line(comparison: Comparison) -> str:
    """The p-values the regression gate reads, adjusted for the metrics tested."""
    tested = [m for m in comparison.metrics if m.p_adjusted is not None]
    values = ", ".join(f"{code(m.metric)} {_num(m.p_adjusted)}" for m in tested)
    if comparison.correction == HOLM:
        return (
            f"p adjusted for the {len(tested)} metrics tested (Holm), which the regression "
            f"gate reads: {values}."
        )
    return f"p not adjusted for the {len(tested)} metrics tested (correction none)."


def floor_lines(floors: Sequence[FloorResult]) -> list[str]:
    """The floors applied to B: a line naming the broken ones, then a table of every
    floor, broken ones first; nothing when no floor was applied."""
    if not floors:
        return []
    failed = broken(floors)
    if failed:
        names = ", ".join(code(r.metric) for r in failed)
        line = f"🔴 **Broken floor**: {len(failed)} of {len(floors)} floor(s) of B: {names}"
    else:
        line = f"🟢 **Every floor holds** ({len(floors)} floor(s) of B)"
    out = [line, "", _row(["floor", "metric", "bound", "B"]), "| :--- | :--- | :--- | :--- |"]
    for r in sorted(floors, key=lambda r: r.passed):
        verdict = "🟢 pass" if r.passed else "🔴 **fail**"
        out.append(_row([verdict, text(r.metric), text(r.floor.bound), text(r.detail)]))
    return [*out, ""]


def render_markdown(
    comparison: Comparison,
    margin: float = 0.0,
    floors: Sequence[FloorResult] = (),
    all_metrics: bool = False,
) -> str:
    """The comparison as Markdown, with ``floors`` (B's floors applied to B) first; the
    metrics neither run scored are named under the table unless ``all_metrics``."""
    c = comparison
    out = [
        f"### ragproof: {code(c.run_b)} vs {code(c.run_a)}",
        "",
        *floor_lines(floors),
        headline(c, margin),
        "",
        f"A (baseline) {code(c.run_a)}, judge {text(c.judge_model_a or 'none')}; "
        f"B {code(c.run_b)}, judge {text(c.judge_model_b or 'none')}.",
    ]
    if c.mixed_judges:
        out += ["", "> [!WARNING]", "> Mixed judges allowed; judge scores are not comparable:"]
        out += [f"> - {text(d)}" for d in c.judge_differences]
    if c.trials_note is not None:
        out += ["", text(c.trials_note)]
    out += [
        "",
        _row(["metric", "paired", "mean A", "mean B", "delta", "95% CI", "p", "verdict"]),
        "| :--- | ---: | ---: | ---: | ---: | ---: | ---: | :--- |",
    ]
    for m in c.shown(all_metrics):
        ci = "–" if m.ci_low is None else f"[{_signed(m.ci_low)}, {_signed(m.ci_high)}]"
        name = text(m.metric) + ("" if m.higher_is_better else " (lower is better)")
        verdict = f"{_VERDICT_ICON.get(m.verdict, '⚪')} {text(m.verdict)}"
        row = [name, str(m.paired), _num(m.mean_a), _num(m.mean_b), _signed(m.delta), ci]
        out.append(_row([*row, _num(m.p_value), verdict]))
    if not all_metrics and c.unscored:
        out += [
            "",
            f"Not shown, neither run scored them: {', '.join(code(m) for m in c.unscored)}.",
        ]
    out += [
        "",
        f"delta = B − A over the cases scored in both runs; 95% paired bootstrap CI; verdict "
        f"from a paired sign-flip test at alpha {c.alpha:g}, in each metric's own direction.",
        "",
        adjusted_line(c),
    ]
    tails = [m for m in c.metrics if m.p95 is not None]
    if tails:
        out += ["", _row(["metric", "p95 A", "p95 B", "delta", "95% CI"])]
        out += ["| :--- | ---: | ---: | ---: | ---: |"]
        out += [
            _row(
                [
                    text(m.metric),
                    _num(m.p95.a),
                    _num(m.p95.b),
                    _signed(m.p95.delta),
                    f"[{_signed(m.p95.ci_low)}, {_signed(m.p95.ci_high)}]",
                ]
            )
            for m in tails
        ]
        out += ["", TAIL_NOTE]
    if c.settings_differences:
        out += [
            "",
            "> [!WARNING]",
            "> Mixed settings allowed; retrieval scores are different measures:",
        ]
        out += [f"> - {text(d)}" for d in c.settings_differences]
    moves = [(m.metric, t, n) for m in c.metrics for t, n in m.transitions.items()]
    if moves:
        out += ["", "<details><summary>Status changes (A → B)</summary>", ""]
        out += [_row(["metric", "change", "cases"]), "| :--- | :--- | ---: |"]
        out += [_row([text(m), text(t), str(n)]) for m, t, n in moves]
        out += ["", "</details>"]
    if c.regressions:
        top = len(c.regressions)
        out += ["", f"<details><summary>Largest case regressions (top {top})</summary>", ""]
        out += [_row(["metric", "case", "A", "B", "delta"]), "| :--- | :--- | ---: | ---: | ---: |"]
        out += [
            _row(
                [
                    text(r.metric),
                    text(r.case_id),
                    _num(r.value_a),
                    _num(r.value_b),
                    _signed(r.delta),
                ]
            )
            for r in c.regressions
        ]
        out += ["", "</details>"]
    return "\n".join(out) + "\n"
