"""``ragproof runs``: one line per stored run, with what tells runs apart.

The JSON object of a run (``runs --json``, and ``run`` in ``show --json``) and
the terminal table carry the same facts: which run (its name, tags and config
digest, CONTRACT section 25), when, on what, with which settings and judge, how
it ended and what it cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragproof_core.config.identity import SHORT_DIGEST, tags_text
from ragproof_core.judge.cost import format_usd
from ragproof_core.store.run_store import RunRecord, stored_run_settings
from ragproof_core.text_table import text_table

HEADERS = (
    "run id",
    "name",
    "started (UTC)",
    "dataset",
    "adapter",
    "k",
    "source match",
    "metrics",
    "judge",
    "judge mode",
    "status",
    "judge errors",
    "cases",
    "cost",
    "config",
    "tags",
)
# Figures read right-aligned: k, metrics, judge errors, cases, cost.
_RIGHT = {HEADERS.index(name) for name in ("k", "metrics", "judge errors", "cases", "cost")}


# The run table's columns the listing leaves out (``show --json`` and the report carry
# them): the stored settings, which k, source_match and metric_count sum up, and the
# judge's counts and detail but its errors (CONTRACT sections 24, 25), and how many
# strings the run masked (``show --json``'s ``secrets_masked``, section 28).
LEFT_OUT = frozenset(
    {
        "config_json",
        "judge_requests",
        "cache_hits",
        "judge_repairs",
        "judge_input_tokens",
        "judge_output_tokens",
        "judge_usage",
        "judge_agreement",
        "secrets_masked",
    }
)


def run_dict(record: RunRecord) -> dict[str, Any]:
    """A run's object in ``runs --json`` and ``show --json``: the run table's columns
    (``RunRecord.values``) but ``LEFT_OUT``, then the settings that tell runs apart;
    keys absent from an old run's stored settings are None."""
    settings = stored_run_settings(record)
    metrics = settings.get("metrics")
    values = {name: v for name, v in record.values().items() if name not in LEFT_OUT}
    return {
        **values,
        "started_at": record.started_at.isoformat(),
        "finished_at": None if record.finished_at is None else record.finished_at.isoformat(),
        "k": settings.get("k"),
        "source_match": settings.get("source_match"),
        "metric_count": len(metrics) if isinstance(metrics, list) else None,
        # CONTRACT section 29: the file a damaged run was found with (None otherwise).
        "damaged_file": record.damaged_file,
    }


def _cell(value: Any) -> str:
    return "-" if value is None else str(value)


def _row(run: dict[str, Any]) -> list[str]:
    digest = run["config_digest"]
    return [
        run["run_id"],
        _cell(run["name"]),
        run["started_at"][:19].replace("T", " "),
        run["dataset"],
        run["adapter"],
        _cell(run["k"]),
        _cell(run["source_match"]),
        _cell(run["metric_count"]),
        run["judge_model"] or "none",
        _cell(run["judge_mode"]),
        run["status"],
        _cell(run["judge_errors"]),
        str(run["cases"]),
        format_usd(run["cost_usd"]),
        "-" if digest is None else digest[:SHORT_DIGEST],
        tags_text(run["tags"]) or "-",
    ]


def runs_table(records: Sequence[RunRecord]) -> str:
    """The terminal table of ``ragproof runs``, oldest first as the store lists them."""
    if not records:
        return "no runs stored yet"
    rows = [_row(run_dict(record)) for record in records]
    return "\n".join(text_table(HEADERS, rows, right=_RIGHT))


def identity_line(record: RunRecord) -> str:
    """``show``'s line of the run's identity: name, tags and config digest (CONTRACT
    section 25), a dash for what the run does not have."""
    digest = record.config_digest
    return (
        f"name {record.name or '-'}; tags {tags_text(record.tags) or '-'}; "
        f"config {'-' if digest is None else digest[:SHORT_DIGEST]}"
    )
