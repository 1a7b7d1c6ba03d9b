"""Splitting one run into shards (CONTRACT section 8), without Dagster.

A run's cases are cut into ``shards`` contiguous blocks, in dataset order, so
the shards' results concatenated in shard order are the unsharded run's
results in the same order (the summaries' means then add up in the same
order too). ``run.concurrency`` is the total in flight across shards: each
shard gets its share, at least one. A judge budget (``RAGPROOF_MAX_COST_USD``)
is split the same way, so shards in separate processes can never spend more
than the run may.

Each shard reports what it did (``ShardReport``); the gathering step adds the
reports into the run's totals and one judge ledger.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ragproof_core.judge.ledger import JudgeLedger
from ragproof_core.judge.types import ABORTED_BUDGET, ABORTED_JUDGE

COMPLETED = "completed"
INTERRUPTED = "interrupted"


def shard_ranges(total: int, shards: int) -> list[tuple[int, int]]:
    """``shards`` contiguous ``[start, end)`` ranges covering ``range(total)``; sizes
    differ by at most one, the larger ones first. Empty ranges when shards > total."""
    if shards < 1:
        raise ValueError(f"shards must be at least 1, got {shards}")
    size, extra = divmod(total, shards)
    ranges, start = [], 0
    for index in range(shards):
        end = start + size + (1 if index < extra else 0)
        ranges.append((start, end))
        start = end
    return ranges


def unit_shard_ranges(
    total: int, shards: int, unit_starts: Sequence[int] | None
) -> list[tuple[int, int]]:
    """``shard_ranges`` over units of cases that must stay together (a conversation's
    turns, CONTRACT section 16): ``unit_starts`` holds each unit's first row, in order
    (None: every case is its own unit). No conversation is ever split across shards."""
    if unit_starts is None:
        return shard_ranges(total, shards)
    bounds = [*unit_starts, total]
    return [(bounds[start], bounds[end]) for start, end in shard_ranges(len(unit_starts), shards)]


def shard_share(total: int, shards: int, index: int) -> int:
    """Shard ``index``'s share of ``total`` slots (at least 1)."""
    size, extra = divmod(total, shards)
    return max(1, size + (1 if index < extra else 0))


def shard_budget(max_cost_usd: float | None, shards: int) -> float | None:
    return None if max_cost_usd is None else max_cost_usd / shards


@dataclass(frozen=True, slots=True)
class ShardReport:
    """What one shard did: stored beside the run, read by the gathering step."""

    shard: int
    cases: int
    case_failures: int
    status: str
    ledger: dict[str, Any] = field(default_factory=dict)
    # Result rows by status, and the first failed cases, for the UI's metadata.
    statuses: dict[str, int] = field(default_factory=dict)
    first_failures: list[str] = field(default_factory=list)
    # The attempt that wrote this report (``shard_attempt.py``): earlier attempts
    # of the same shard that died before reporting are counted beside it.
    attempt: str = ""
    # True when the shard wrote no outputs: they are the run's stored recording
    # (``RunStore.outputs_from_recording``), which the gathering step makes the table.
    outputs_from_recording: bool = False
    # The shard's result rows grouped for the run's tally (``ResultsWriter.result_groups``),
    # so the summary adds them up instead of reading every result again; None: not kept.
    result_groups: dict[str, list] | None = None
    # Strings in which the shard masked a secret value (CONTRACT section 28). Not named
    # "secrets...": a stored document's secret-named keys are redacted.
    masked_strings: int = 0
    # The adapter's calls, by method (``retrieve``, ``answer``).
    adapter_calls: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ShardReport:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


_SUMMED = ("requests", "repairs", "cache_hits", "judge_errors", "input_tokens", "output_tokens")


def merge_ledgers(ledgers: Sequence[JudgeLedger]) -> JudgeLedger:
    """One ledger for the run: counts and cost added; model, mode and prompts shared."""
    if not ledgers:
        return JudgeLedger()
    first = ledgers[0]
    totals = {name: sum(getattr(ledger, name) for ledger in ledgers) for name in _SUMMED}
    return JudgeLedger(
        model=first.model,
        prompt_hashes=dict(first.prompt_hashes),
        use_cache=first.use_cache,
        mode=first.mode,
        cost_usd=sum(ledger.cost_usd for ledger in ledgers),
        priced=all(ledger.priced for ledger in ledgers),
        usage=merge_usage([row for ledger in ledgers for row in ledger.usage]),
        first_error=_first(ledger.first_error for ledger in ledgers),
        response_format=_first(ledger.response_format for ledger in ledgers),
        unavailable=_first(ledger.unavailable for ledger in ledgers),
        **totals,
    )


def _first(values: Iterable[str | None]) -> str | None:
    return next((value for value in values if value is not None), None)


def merge_usage(rows: Sequence[dict]) -> list[dict]:
    """Per-(metric, model) usage rows of several shards, added up, sorted like one judge's."""
    merged: dict[tuple[str, str], dict] = {}
    for row in rows:
        key = (row["metric"], row["model"])
        total = merged.setdefault(key, {"metric": key[0], "model": key[1]})
        for name, value in row.items():
            if name not in ("metric", "model"):
                total[name] = total.get(name, 0) + value
    return [merged[key] for key in sorted(merged)]


# The run document holding its ``EvaluationTotals``.
EVALUATION_DOCUMENT = "evaluation"
# Written by the dataset step: strings of the run's recording masked as it was staged.
STAGED_SECRETS_DOCUMENT = "staged_masking"


@dataclass(frozen=True, slots=True)
class EvaluationTotals:
    """What the run record needs of the gathered shards, stored beside the run
    (the manifest says what the run was asked to do, and never changes)."""

    status: str
    cases: int
    case_failures: int
    adapter_calls: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvaluationTotals:
        return cls(
            data["status"], data["cases"], data["case_failures"], data.get("adapter_calls", {})
        )


@dataclass(frozen=True, slots=True)
class RunTotals:
    status: str
    cases: int
    case_failures: int
    ledger: JudgeLedger
    secrets_masked: int = 0
    adapter_calls: dict[str, int] = field(default_factory=dict)

    @property
    def evaluation(self) -> EvaluationTotals:
        return EvaluationTotals(self.status, self.cases, self.case_failures, self.adapter_calls)


def merge_reports(
    reports: Sequence[ShardReport], unfinished: Sequence[JudgeLedger] = (), masked: int = 0
) -> RunTotals:
    """The run's totals; any shard that stopped calling an unavailable judge makes the
    run ``aborted:judge``, else any shard stopped at its budget ``aborted:budget``.

    ``unfinished``: the judge ledgers of shard attempts that died before reporting;
    what they paid is the run's spend too, though their cases count in no total.
    ``masked``: strings masked before any shard ran (the run's recording, staged).
    """
    ordered = sorted(reports, key=lambda r: r.shard)
    stopped = {r.status for r in ordered} & {ABORTED_JUDGE, ABORTED_BUDGET}
    # A signal stopped the run (CONTRACT section 29): interrupted, whatever else happened.
    interrupted = any(r.status == INTERRUPTED for r in ordered)
    return RunTotals(
        status=INTERRUPTED
        if interrupted
        else min(stopped, key=(ABORTED_JUDGE, ABORTED_BUDGET).index, default=COMPLETED),
        cases=sum(r.cases for r in ordered),
        case_failures=sum(r.case_failures for r in ordered),
        ledger=merge_ledgers([JudgeLedger.from_dict(r.ledger) for r in ordered] + [*unfinished]),
        secrets_masked=masked + sum(r.masked_strings for r in ordered),
        adapter_calls=dict(sum((Counter(r.adapter_calls) for r in ordered), Counter())),
    )
