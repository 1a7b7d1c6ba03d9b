"""What ``ragproof generate qa`` prints: cases written, what the gates rejected, judge activity."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

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
    judge = asdict(stats)
    if not priced:
        judge["cost_usd"] = None  # unknown, never a made-up $0
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
    cost = f"cost ${stats.cost_usd:.4f}" if priced else UNKNOWN_COST
    lines.append(
        f"  judge: requests {stats.requests} ({stats.repairs} repairs), cache hits "
        f"{stats.cache_hits}, judge errors {stats.judge_errors}, tokens {stats.input_tokens} in "
        f"/ {stats.output_tokens} out, {cost}"
    )
    if outcome.aborted:
        why = (
            "judge unavailable"
            if outcome.status == ABORTED_JUDGE
            else "stopped at the judge budget"
        )
        lines.append(f"  {why}: {outcome.aborted}")
    return "\n".join(lines)
