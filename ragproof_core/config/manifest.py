"""The run manifest: what one evaluation run was asked to do, fixed when it starts.

The dataset step writes it (``manifest.json`` in the run's folder); every
later step and shard reads it back as this typed object, never as a dict;
and the run record's ``config_json`` is exactly its JSON (``to_json``), so
what a stored run says about its settings is what the run used. The
``[run]`` settings are kept with the metric selection resolved to names
(patterns such as ``retrieval.*`` expanded), as compare and the checks read
them from ``config_json``'s ``run`` object.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ragproof_core.config.gate import Floor, gate_to_dict, parse_gate
from ragproof_core.config.identity import config_digest
from ragproof_core.config.redaction import config_sha256
from ragproof_core.config.settings import (
    AdapterSpec,
    Config,
    RunSettings,
    run_settings_dict,
    run_settings_from_dict,
)
from ragproof_core.judge.settings import (
    JudgeSettings,
    judge_settings_dict,
    judge_settings_from_dict,
)
from ragproof_core.metrics.custom_tables import MetricTable, tables_from_dicts, tables_to_dicts


@dataclasses.dataclass(frozen=True, slots=True)
class RunManifest:
    run_id: str
    # The dataset as the user named it (relative to the working folder when inside it),
    # its absolute path and the sha256 of its bytes.
    dataset: str
    dataset_path: str
    dataset_sha256: str
    cases: int
    started_at: datetime
    run: RunSettings
    adapter: AdapterSpec
    judge: JudgeSettings
    # False when the run bypasses the judge cache (--no-cache).
    use_cache: bool = True
    # RAGPROOF_JUDGE_API_BASE when the run started (its password redacted in the store).
    judge_api_base: str | None = None
    dagster_run_id: str | None = None
    # The hash of the settings with their real values (``settings_sha256``), set before
    # the manifest is stored: the stored copy has its secrets masked, this hash
    # still tells apart two runs whose configs differ only in a secret.
    config_sha256: str | None = None
    # The [[metric]] tables: every step builds the run's own metrics from them, and
    # compare and the report read their directions from config_json.
    metrics: tuple[MetricTable, ...] = ()
    # The [gate] table: the floors `ragproof check` and the `floors` check apply by default.
    gate: tuple[Floor, ...] = ()

    def __post_init__(self) -> None:
        selected = self.run.selection(tuple(t.name for t in self.metrics))
        if self.run.metrics != selected:
            # Stored as names, so the manifest reads back equal to itself.
            object.__setattr__(self, "run", dataclasses.replace(self.run, metrics=selected))
        if self.started_at.utcoffset() is None:
            raise ValueError(f"run {self.run_id}: started_at must be a timezone-aware datetime")

    @property
    def config(self) -> Config:
        return Config(self.run, self.adapter, self.judge, self.metrics, gate=self.gate)

    @property
    def config_digest(self) -> str:
        """The run's config digest (``identity.config_digest``): equal for runs set up alike,
        whatever their names, tags and secrets."""
        data = self.to_dict()
        return config_digest(data["run"], self.adapter.target, self.adapter.options)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "dataset": self.dataset,
            "dataset_path": self.dataset_path,
            "dataset_sha256": self.dataset_sha256,
            "cases": self.cases,
            "started_at": self.started_at.isoformat(),
            "run": run_settings_dict(self.run, tuple(t.name for t in self.metrics)),
            "adapter": {"target": self.adapter.target, "options": dict(self.adapter.options)},
            "judge": judge_settings_dict(self.judge),
            "use_cache": self.use_cache,
            "judge_api_base": self.judge_api_base,
            "dagster_run_id": self.dagster_run_id,
            "config_sha256": self.config_sha256,
            # Only a run with metrics of its own says so: other runs' JSON is unchanged.
            **({"metrics": tables_to_dicts(self.metrics)} if self.metrics else {}),
            # Likewise the floors.
            **({"gate": gate_to_dict(self.gate)} if self.gate else {}),
        }

    def settings_sha256(self) -> str:
        """sha256 of the run, adapter and judge settings as they are in this object."""
        data = self.to_dict()
        # The run's own metrics count too, when it declares any.
        keys = ("run", "adapter", "judge", "use_cache", "judge_api_base", "metrics")
        return config_sha256({key: data[key] for key in keys if key in data})

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunManifest:
        adapter = data["adapter"]
        return cls(
            run_id=data["run_id"],
            dataset=data["dataset"],
            dataset_path=data["dataset_path"],
            dataset_sha256=data["dataset_sha256"],
            cases=data["cases"],
            started_at=datetime.fromisoformat(data["started_at"]),
            run=run_settings_from_dict(data["run"]),
            adapter=AdapterSpec(adapter["target"], dict(adapter["options"])),
            judge=judge_settings_from_dict(data.get("judge")),
            use_cache=data["use_cache"],
            judge_api_base=data.get("judge_api_base"),
            dagster_run_id=data.get("dagster_run_id"),
            config_sha256=data.get("config_sha256"),
            metrics=tables_from_dicts(data.get("metrics")),
            gate=parse_gate(data.get("gate") or {}),
        )

    @classmethod
    def from_json(cls, text: str) -> RunManifest:
        return cls.from_dict(json.loads(text))
