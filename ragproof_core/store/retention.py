"""Retention: ``ragproof gc`` and a suite's ``keep_last`` (CONTRACT section 31).

The matching runs (a suite's, a name's, a tag's, or all) beyond the newest N, or older
than a number of days, are removed from the store and, through ``forget`` (the command
line passes Dagster's side: the partition and its Dagster runs), from Dagster together.
Runs somebody labelled, calibrated or probed are kept and listed as kept unless forced;
a ``running`` run is never removed. Plain Python, no Dagster: a suite's schedule calls
``collect_garbage`` after its run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ragproof_core.store.catalog_views import RUN_STATES_VIEW
from ragproof_core.store.layout import RECORD_FOLDERS
from ragproof_core.store.run_store import RunStore


@dataclass(frozen=True, slots=True)
class Retention:
    """Which runs go: beyond the newest ``keep_last`` or older than ``older_than_days``,
    among those of ``suite``, ``name`` and ``tags`` (all of them when none is given)."""

    keep_last: int | None = None
    older_than_days: float | None = None
    suite: str | None = None
    name: str | None = None
    tags: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if (self.keep_last is None) == (self.older_than_days is None):
            raise ValueError("give exactly one of keep_last and older_than_days")
        if self.keep_last is not None and self.keep_last < 0:
            raise ValueError(f"keep_last must be at least 0, got {self.keep_last}")
        if self.older_than_days is not None and self.older_than_days < 0:
            raise ValueError(f"older_than_days must be at least 0, got {self.older_than_days}")


@dataclass(frozen=True, slots=True)
class GcRun:
    run_id: str
    started_at: datetime
    status: str
    bytes: int = 0
    kept_because: str | None = None


@dataclass
class GcReport:
    removed: list[GcRun] = field(default_factory=list)
    kept: list[GcRun] = field(default_factory=list)
    dry_run: bool = False

    @property
    def bytes_freed(self) -> int:
        return sum(run.bytes for run in self.removed)

    def to_json(self) -> dict[str, Any]:
        def one(run: GcRun) -> dict[str, Any]:
            return {
                "run_id": run.run_id,
                "started_at": run.started_at.isoformat(),
                "status": run.status,
                "bytes": run.bytes,
                **({"kept_because": run.kept_because} if run.kept_because else {}),
            }

        return {
            "dry_run": self.dry_run,
            "removed": [one(r) for r in self.removed],
            "kept": [one(r) for r in self.kept],
            "bytes_freed": self.bytes_freed,
        }


def _tags(row: dict[str, Any]) -> dict[str, str]:
    """A run's tags, as the run table holds them (a JSON object, or none)."""
    for column in ("tags", "tags_json"):
        value = row.get(column)
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                continue
        if isinstance(value, dict):
            return {str(k): str(v) for k, v in value.items()}
        if isinstance(value, list):
            pairs = (str(item).split("=", 1) for item in value)
            return {p[0]: p[1] for p in pairs if len(p) == 2}
    return {}


def _matches(row: dict[str, Any], policy: Retention) -> bool:
    tags = _tags(row)
    if policy.suite is not None and tags.get("suite") != policy.suite:
        return False
    if policy.name is not None and row.get("name") != policy.name:
        return False
    return all(tags.get(key) == value for key, value in policy.tags)


def _protection(store: RunStore, run_id: str) -> str | None:
    """Why a run is kept whatever the policy: somebody's labels, calibrations, probes."""
    for records, folder in RECORD_FOLDERS.items():
        if store.files.glob(str(store.layout.run_dir(run_id) / folder / "*.parquet")):
            return f"it has {records}"
    return None


def collect_garbage(
    store: RunStore,
    policy: Retention,
    *,
    dry_run: bool = False,
    force: bool = False,
    forget: Callable[[str], None] | None = None,
    now: datetime | None = None,
) -> GcReport:
    """Remove the runs ``policy`` selects (none with ``dry_run``: the report says which
    would go); ``forget(run_id)`` removes each from Dagster too."""
    table = store.catalog_query(f"SELECT * FROM {RUN_STATES_VIEW}")
    rows = [r for r in table.to_pylist() if _matches(r, policy)]
    rows.sort(key=lambda r: (r["started_at"], r["run_id"]), reverse=True)
    if policy.keep_last is not None:
        chosen = rows[policy.keep_last :]
    else:
        cutoff = (now or datetime.now(UTC)) - timedelta(days=policy.older_than_days or 0)
        chosen = [r for r in rows if r["started_at"] < cutoff]
    report = GcReport(dry_run=dry_run)
    for row in sorted(chosen, key=lambda r: (r["started_at"], r["run_id"])):
        run = GcRun(row["run_id"], row["started_at"], row["status"])
        if row["status"] == "running":
            report.kept.append(_kept(run, "it is running"))
            continue
        protected = None if force else _protection(store, run.run_id)
        if protected is not None:
            report.kept.append(_kept(run, protected))
            continue
        held = sum(size for _, size in store.files.walk(store.layout.run_dir(run.run_id)))
        if not dry_run:
            held = store.remove_run(run.run_id)
            if forget is not None:
                forget(run.run_id)
        report.removed.append(GcRun(run.run_id, run.started_at, run.status, held))
    if report.removed and not dry_run:
        store.catalog.compact(min_entries=0)
    return report


def _kept(run: GcRun, why: str) -> GcRun:
    return GcRun(run.run_id, run.started_at, run.status, 0, why)


def parse_tags(texts: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``KEY=VALUE`` texts as pairs; ValueError names the one without ``=``."""
    pairs = []
    for text in texts:
        key, sep, value = text.partition("=")
        if not sep or not key:
            raise ValueError(f"--tag {text!r}: use KEY=VALUE")
        pairs.append((key, value))
    return tuple(pairs)
