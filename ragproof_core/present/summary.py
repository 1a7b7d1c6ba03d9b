"""How a run's summary is shown: the terminal table, the Markdown table Dagster
displays, and the JSON object of CONTRACT section 5.

One place renders summaries so the command line and the UI never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragproof_core.adapters.runner import adapter_calls_dict
from ragproof_core.text_table import text_table

# Columns of the terminal and Markdown tables, in order.
_COLUMNS = ("metric", "mean", "p50", "p95", "scored", "skipped", "n/a", "errored")
# A run with repeats adds these (CONTRACT section 27).
_TRIAL_COLUMNS = ("trials", "flaky")

# Reported side by side on purpose (metrics.md): abstention alone would hide a
# pipeline that refuses everything.
PAIRED_METRICS = ("robustness.abstention", "robustness.overrefusal")


def _field(summary: Any, name: str) -> Any:
    return summary[name] if isinstance(summary, Mapping) else getattr(summary, name)


def _optional(summary: Any, name: str) -> Any:
    """A field only some runs' summaries have (CONTRACT section 27); None when absent."""
    if isinstance(summary, Mapping):
        return summary.get(name)
    return getattr(summary, name, None)


def summary_dict(summary: Any) -> dict[str, Any]:
    """The per-metric object of ``ragproof run --json``; a run with repeats adds its
    trials' statistics, judge repeats the judge's agreement with itself (CONTRACT
    section 27)."""
    out = {
        "mean": _field(summary, "mean"),
        "p50": _field(summary, "p50"),
        "p95": _field(summary, "p95"),
        "scored": int(_field(summary, "scored")),
        "skipped": int(_field(summary, "skipped")),
        "errored": int(_field(summary, "errored")),
        "not_applicable": int(_field(summary, "not_applicable")),
        "judge_errors": int(_field(summary, "judge_errors")),
    }
    cases = _optional(summary, "cases")
    if cases is not None:
        low, high = _optional(summary, "ci_low"), _optional(summary, "ci_high")
        out.update(
            cases=int(cases),
            within_case_sd=_optional(summary, "within_case_sd"),
            between_case_sd=_optional(summary, "between_case_sd"),
            icc=_optional(summary, "icc"),
            flaky_cases=int(_optional(summary, "flaky_cases") or 0),
            ci=None if low is None or high is None else [low, high],
        )
        k = _optional(summary, "pass_k")
        if k is not None:
            out.update(
                k=int(k),
                pass_at_k=_optional(summary, "pass_at_k"),
                pass_hat_k=_optional(summary, "pass_hat_k"),
            )
    repeated = _optional(summary, "judge_repeated")
    if repeated is not None:
        out.update(
            judge_self_agreement=_optional(summary, "judge_self_agreement"),
            judge_repeated=int(repeated),
        )
    return out


def _with_trials(summaries: Sequence[Any]) -> bool:
    """Whether the summaries are a run with repeats' (their trials' columns shown)."""
    return any(_optional(s, "cases") is not None for s in summaries)


def _trials_per_case(d: dict[str, Any]) -> str:
    """Scored trials per scored case: ``5``, or ``4.8`` when some case has fewer."""
    if not d["cases"]:
        return "-"
    per_case = d["scored"] / d["cases"]
    return str(int(per_case)) if per_case.is_integer() else f"{per_case:.1f}"


def run_json(
    run_id: str,
    status: str,
    summaries: Sequence[Any],
    judge: Mapping[str, Any] | None = None,
    adapter_calls: Mapping[str, int] | None = None,
    secrets_masked: int = 0,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "run_id": run_id,
        "status": status,
        "metrics": {_field(s, "metric"): summary_dict(s) for s in summaries},
    }
    if judge is not None:
        out["judge"] = dict(judge)
    if adapter_calls is not None:
        out["adapter_calls"] = adapter_calls_dict(adapter_calls)
    if secrets_masked:  # CONTRACT section 28: said only when the run masked anything
        out["secrets_masked"] = secrets_masked
    return out


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def nothing_scored(summary: Any) -> bool:
    """A metric with nothing to show (CONTRACT section 25): no case scored and no judge
    error (every case skipped or not applicable: the agent and hop metrics of a plain
    RAG dataset, the judge metrics of a run without a judge). A metric the judge failed
    on is shown: its failures are what the run has to say. Case failures count in every
    metric, so they alone keep no metric shown (the summary's last line counts them)."""
    d = summary_dict(summary)
    return not d["scored"] and not d["judge_errors"]


def listed(summaries: Sequence[Any], all_metrics: bool = False) -> list[Any]:
    """The summaries the tables show: every metric with ``all_metrics``, else those not
    ``nothing_scored``. ``--json`` and the store keep every metric."""
    return [s for s in summaries if all_metrics or not nothing_scored(s)]


def hidden_metrics(summaries: Sequence[Any]) -> list[str]:
    """The metrics ``listed`` leaves out by default, in the summaries' order."""
    return [_field(s, "metric") for s in summaries if nothing_scored(s)]


def hidden_note(summaries: Sequence[Any], how: str) -> str | None:
    """The line saying how many metrics the table left out and ``how`` to list them; None
    when it left out none."""
    hidden = hidden_metrics(summaries)
    if not hidden:
        return None
    metrics = "metric" if len(hidden) == 1 else "metrics"
    return f"not shown: {len(hidden)} {metrics} with nothing scored ({how} lists them)"


def _rows(summaries: Sequence[Any], all_metrics: bool, trials: bool) -> list[tuple[str, ...]]:
    rows = []
    for s in listed(summaries, all_metrics):
        d = summary_dict(s)
        row = (
            _field(s, "metric"),
            _number(d["mean"]),
            _number(d["p50"]),
            _number(d["p95"]),
            str(d["scored"]),
            str(d["skipped"]),
            str(d["not_applicable"]),
            str(d["errored"]) + (f" ({d['judge_errors']} judge)" if d["judge_errors"] else ""),
        )
        if trials:
            row += (_trials_per_case(d), str(d["flaky_cases"]))
        rows.append(row)
    return rows


def _columns(trials: bool) -> tuple[str, ...]:
    return _COLUMNS + _TRIAL_COLUMNS if trials else _COLUMNS


def summary_table(summaries: Sequence[Any], all_metrics: bool = False) -> str:
    """Plain-text table for the terminal; ``-`` marks a statistic with nothing scored.
    Metrics with nothing scored are left out unless ``all_metrics`` (``listed``). A run
    with repeats adds ``trials`` (scored trials per scored case) and ``flaky`` (cases
    whose trials are 0.5 or more apart); its counts count trials."""
    trials = _with_trials(summaries)
    return "\n".join(text_table(_columns(trials), _rows(summaries, all_metrics, trials)))


def summary_markdown(summaries: Sequence[Any]) -> str:
    """The summary as Markdown (Dagster's metadata), metrics with nothing scored named
    below the table rather than listed in it."""
    trials = _with_trials(summaries)
    columns = _columns(trials)
    rows = _rows(summaries, False, trials)
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    hidden = hidden_metrics(summaries)
    if hidden:
        out += ["", f"Not shown, nothing scored: {', '.join(f'`{m}`' for m in hidden)}."]
    return "\n".join(out)


def refusal_tradeoff(summaries: Sequence[Any]) -> str | None:
    """One line putting abstention and over-refusal side by side, if either scored."""
    by_name = {_field(s, "metric"): s for s in summaries}
    pair = [by_name.get(name) for name in PAIRED_METRICS]
    if all(s is None or _field(s, "scored") == 0 for s in pair):
        return None
    abst, over = (_number(_field(s, "mean")) if s is not None else "-" for s in pair)
    return (
        f"abstention {abst} (higher is better) | over-refusal {over} (lower is better): "
        "read them together; refusing everything maximises the first and ruins the second"
    )


LATENCY_METRIC = "system.latency_s"


def latency_note(summaries: Sequence[Any], concurrency: int | None) -> str | None:
    """One line beside a scored latency: how many calls were in flight when it was
    measured (``run.concurrency``), which changes it (CONTRACT section 18)."""
    latency = next((s for s in summaries if _field(s, "metric") == LATENCY_METRIC), None)
    if latency is None or _field(latency, "scored") == 0:
        return None
    in_flight = "unknown" if concurrency is None else str(concurrency)
    return (
        f"{LATENCY_METRIC}: measured with run.concurrency = {in_flight} calls in flight "
        "(recorded and imported latencies are as the pipeline reported them); compare "
        "latencies of runs with the same concurrency"
    )


def _interval(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"[{low:.4f}, {high:.4f}]"


def calibration_table(summaries: Sequence[Any], calibrations: Sequence[Mapping[str, Any]]) -> str:
    """The latest human-label calibration of each judge metric beside its raw mean, with the
    annotators' agreement when the labels came from the store (``ragproof label``).

    ``calibrations``: rows of ``RunStore.calibrations(run_id)`` (the ``calibrations`` view).
    """
    means = {_field(s, "metric"): _field(s, "mean") for s in summaries}
    headers = ("metric", "raw mean", "N", "labelled", "PPI mean", "PPI 95% CI", "human mean")
    agreement = any(row.get("annotators") for row in calibrations)
    if agreement:
        headers += ("annotators", "annotator alpha", "judge alpha")
    rows = [
        (
            row["metric"],
            _number(means.get(row["metric"])),
            str(row["n_judged"]),
            str(row["n_labelled"]),
            _number(row["ppi_mean"]),
            _interval(row["ppi_ci_low"], row["ppi_ci_high"]),
            _number(row["human_mean"]),
        )
        + (
            (
                str(row["annotators"] or 0),
                _number(row["annotator_alpha"]),
                _number(row["judge_alpha"]),
            )
            if agreement
            else ()
        )
        for row in calibrations
    ]
    table = [headers, *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(headers))]
    lines = ["Bias-corrected with human labels (ragproof calibrate --run):"]
    for n, row in enumerate(table):
        cells = [c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def calibration_json(calibrations: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``show --json``'s ``calibrations`` object: metric -> the latest calibration's figures."""

    def pair(row: Mapping[str, Any], name: str) -> list[float] | None:
        low, high = row[f"{name}_ci_low"], row[f"{name}_ci_high"]
        return None if low is None or high is None else [low, high]

    return {
        row["metric"]: {
            "calibration_id": row["calibration_id"],
            "n_judged": row["n_judged"],
            "n_labelled": row["n_labelled"],
            "judge_mean": row["judge_mean"],
            "judge_ci": pair(row, "judge"),
            "human_mean": row["human_mean"],
            "human_ci": pair(row, "human"),
            "ppi_mean": row["ppi_mean"],
            "ppi_ci": pair(row, "ppi"),
            "annotators": row.get("annotators"),
            "annotator_alpha": row.get("annotator_alpha"),
            "judge_alpha": row.get("judge_alpha"),
        }
        for row in calibrations
    }
