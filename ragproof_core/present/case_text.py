"""``ragproof show RUN_ID --case CASE_ID`` for the terminal (CONTRACT section 25): one
case as the run stored it, from ``report_data.gather_case`` (the browser's case page
shows the same dict).

What the pipeline said comes first (question, answer, error, retrieval with scores,
citations, steps), then the claims with the chunks that support them (when the run
checked claims), each metric's status, value and reason, then the judge's replies
verbatim. Long text is cut where ``CASE_LIMITS`` says and says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragproof_core.present.claims import claim_lines
from ragproof_core.text_table import text_table

INDENT = "    "


def _text(clipped: Mapping[str, Any] | None) -> str:
    """A ``{"t", "cut"}`` text as stored, saying how much was cut; ``-`` for none."""
    if clipped is None:
        return "-"
    cut = f" … ({clipped['cut']} more characters)" if clipped.get("cut") else ""
    return clipped["t"] + cut


def _block(label: str, value: str) -> list[str]:
    """``label: value`` on one line, or the label and the value indented below it when
    the value spans lines."""
    lines = value.splitlines() or [""]
    if len(lines) == 1:
        return [f"{label}: {lines[0]}"]
    return [f"{label}:", *(INDENT + line for line in lines)]


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _chunks(case: Mapping[str, Any]) -> list[str]:
    if case["chunk_source"] is None:
        return ["retrieved: not exposed by the pipeline"]
    total, shown = case["chunks_total"], case["chunks"]
    head = f"retrieved ({case['chunk_source']}, {total} chunk{'s' if total != 1 else ''}"
    head += f", first {len(shown)} shown):" if len(shown) < total else "):"
    rows = [
        [
            str(c["rank"]),
            c["id"],
            _number(c["score"]),
            ", ".join(
                flag for flag, on in (("expected", c["expected"]), ("cited", c["cited"])) if on
            )
            or "-",
            " ".join(_text(c["text"]).split())[:100],
        ]
        for c in shown
    ]
    table = text_table(("rank", "id", "score", "marks", "text"), rows, right={0, 2})
    return [head, *(INDENT + line for line in table)]


def _steps(trajectory: Mapping[str, Any] | None) -> list[str]:
    if trajectory is None:
        return []
    lines = [f"steps ({len(trajectory['steps'])}):"]
    for step in trajectory["steps"]:
        if step["type"] == "retrieve":
            ids = ", ".join(c["id"] + (" (gold)" if c["gold"] else "") for c in step["chunks"])
            lines.append(
                f"{INDENT}{step['n']}. retrieve, hop {step['hop']}: {_text(step['query'])} "
                f"-> {ids or 'nothing'}"
            )
        else:
            matched = step["matches_expected"]
            lines.append(
                f"{INDENT}{step['n']}. tool {step['name']}({_text(step['arguments'])})"
                + ("" if matched is None else f", expected call {matched}")
            )
    if trajectory["missing_hops"]:
        lines.append(f"{INDENT}hops never made: {trajectory['missing_hops']}")
    return lines


def case_text(data: Mapping[str, Any]) -> str:
    """The terminal text of ``gather_case``'s ``data``."""
    case = data["case"]
    name = f" ({data['run_name']})" if data.get("run_name") else ""
    lines = [f"run {data['run_id']}{name}: case {case['id']} ({case['kind']})"]
    turn = case["turn"]
    if turn is not None:
        lines.append(
            f"turn {turn['turn']} of {turn['turns']} of conversation {turn['conversation']}"
        )
    lines += _block("question", _text(case["question"]))
    if case["expected_answer"] is not None:
        lines += _block("expected answer", _text(case["expected_answer"]))
    if case["expected_sources"]:
        lines.append(f"expected sources: {', '.join(case['expected_sources'])}")
    lines += _block("answer", _text(case["answer"]))
    if case["marker_span"] is not None or case["marker"]:
        lines.append(f"injection marker: {case['marker']}")
    if case["error"]:
        lines += _block("error", case["error"])
    latency = case["latency_s"]
    lines.append(f"latency: {'-' if latency is None else f'{latency:g} s'}")
    lines += _chunks(case)
    citations = case["citations"]
    lines.append(
        "citations: "
        + (
            ", ".join(
                f"{c['id']} ({'in' if c['valid'] else 'not in'} the context)" for c in citations
            )
            or "none"
        )
    )
    lines += _steps(case["trajectory"])
    if case.get("claims"):
        # CONTRACT section 20: each claim of the answer and of the reference, with its chunks.
        lines.append("claims (claim_check):")
        lines += [INDENT + line.rstrip() for line in claim_lines(case["claims"])]
    results = case["results"]
    lines.append(f"metrics ({len(results)}):")
    table = text_table(
        ("metric", "status", "value", "reason"),
        [[r["metric"], r["status"], _number(r["value"]), r["reason"] or ""] for r in results],
        right={2},
    )
    lines += [INDENT + line.rstrip() for line in table]
    for r in results:
        if r["judge"] is not None:
            lines += _block(f"judge reply, {r['metric']}", _text(r["judge"]))
    return "\n".join(lines)
