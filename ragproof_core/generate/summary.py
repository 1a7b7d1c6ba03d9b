"""What ``ragproof generate qa`` and ``generate nuggets`` print: what was written, what
the gates rejected or the judge failed, judge activity."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ragproof_core.generate.nuggets import NuggetOutcome
from ragproof_core.generate.qa import KINDS, GenerationOutcome, KindTally
from ragproof_core.judge.pricing import UNKNOWN_COST
from ragproof_core.judge.session import JudgeStats
from ragproof_core.judge.types import ABORTED_JUDGE


def summary_dict(
    outcome: GenerationOutcome,
    out: str,
    seed: int,
    model: str,
    stats: JudgeStats,
    priced: bool = True,
) -> dict[str, Any]:
    judge = _judge_dict(stats, priced)
    return {
        "out": out,
        "status": outcome.status,
        "seed": seed,
        "model": model,
        "written": {kind: outcome.tallies[kind].kept for kind in KINDS},
        "gates": {kind: outcome.tallies[kind].to_dict() for kind in KINDS},
        "judge": judge,
    }


def _kind_line(kind: str, tally: KindTally) -> str:
    because = ", ".join(f"{reason} {n}" for reason, n in sorted(tally.rejected_because.items()))
    rejected = f"{tally.rejected} rejected by the critique" + (f" ({because})" if because else "")
    return (
        f"  {kind}: {tally.kept} of {tally.slots} slots filled; {tally.generated} questions "
        f"written, {tally.duplicates} near-duplicates dropped, {tally.critiqued} critiqued, "
        f"{rejected}, {tally.judge_errors} judge errors, {tally.unfilled} slots unfilled"
    )


def render_summary(
    outcome: GenerationOutcome,
    out: str,
    seed: int,
    model: str,
    stats: JudgeStats,
    priced: bool = True,
) -> str:
    written = " and ".join(f"{outcome.tallies[kind].kept} {kind}" for kind in KINDS)
    lines = [f"wrote {written} cases to {out} (seed {seed}, judge {model})"]
    lines += [
        _kind_line(kind, outcome.tallies[kind]) for kind in KINDS if outcome.tallies[kind].slots
    ]
    lines.append(judge_line(stats, priced))
    if outcome.aborted:
        lines.append(stop_line(outcome.status, outcome.aborted))
    return "\n".join(lines)


def stop_line(status: str, message: str) -> str:
    """Why a generation stopped early: the judge could not answer, or its budget."""
    why = "judge unavailable" if status == ABORTED_JUDGE else "stopped at the judge budget"
    return f"  {why}: {message}"


def judge_line(stats: JudgeStats, priced: bool) -> str:
    cost = f"cost ${stats.cost_usd:.4f}" if priced else UNKNOWN_COST
    return (
        f"  judge: requests {stats.requests} ({stats.repairs} repairs), cache hits "
        f"{stats.cache_hits}, judge errors {stats.judge_errors}, tokens {stats.input_tokens} in "
        f"/ {stats.output_tokens} out, {cost}"
    )


def _judge_dict(stats: JudgeStats, priced: bool) -> dict[str, Any]:
    judge = asdict(stats)
    if not priced:
        judge["cost_usd"] = None  # unknown, never a made-up $0
    return judge


def nuggets_summary_dict(
    outcome: NuggetOutcome, out: str, seed: int, model: str, stats: JudgeStats, priced: bool
) -> dict[str, Any]:
    """``generate nuggets --json``."""
    return {
        "out": out,
        "status": outcome.status,
        "seed": seed,
        "model": model,
        "written": {
            "cases": len(outcome.written),
            "nuggets": outcome.nuggets,
            "vital": outcome.vital,
        },
        "copied": {
            "with_nuggets": outcome.with_nuggets,
            "without_expected_answer": outcome.without_expected_answer,
        },
        "failed": dict(outcome.failed),
        "judge": _judge_dict(stats, priced),
    }


def render_nuggets_summary(
    outcome: NuggetOutcome, out: str, seed: int, model: str, stats: JudgeStats, priced: bool
) -> str:
    lines = [
        f"wrote nuggets for {len(outcome.written)} cases to {out} ({outcome.nuggets} nuggets, "
        f"{outcome.vital} vital; seed {seed}, judge {model})",
        f"  copied unchanged: {outcome.with_nuggets} with nuggets already, "
        f"{outcome.without_expected_answer} without an expected_answer",
    ]
    if outcome.failed:
        lines.append(
            f"  failed, copied without nuggets: {len(outcome.failed)} "
            f"({', '.join(f'{case_id}: {why}' for case_id, why in outcome.failed.items())})"
        )
    lines.append(judge_line(stats, priced))
    if outcome.aborted:
        lines.append(stop_line(outcome.status, outcome.aborted))
    return "\n".join(lines)
