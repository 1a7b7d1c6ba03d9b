"""The launch form of an evaluation run: what the UI's config editor shows and
what the command line and the schedule fill in."""

import json

import dagster as dg
from pydantic import Field

from ragproof_core.settings import DEMO_ADAPTER, Config, load_config


class EvalRunConfig(dg.Config):
    """Which dataset to evaluate against which adapter, and how."""

    dataset: str = Field(description="Dataset file (JSON Lines or Parquet), CONTRACT section 1.")
    config_file: str | None = Field(
        default=None, description="Optional ragproof.toml; the keys below override it."
    )
    adapter: str | None = Field(
        default=None,
        description="Adapter as package.module:Name "
        f"(default from the config file, else {DEMO_ADAPTER}).",
    )
    adapter_options_json: str | None = Field(
        default=None,
        description="Adapter keyword options as a JSON object, replacing the config file's.",
    )
    k: int | None = Field(
        default=None, description="run.k: cut-off of the retrieval metrics (default 5)."
    )
    source_match: str | None = Field(
        default=None, description='run.source_match: "chunk" (default) or "document".'
    )
    metrics: list[str] | None = Field(
        default=None,
        description="run.metrics: metric names or shell-style patterns such as "
        '"retrieval.*" (default: every metric).',
    )
    shards: int | None = Field(
        default=None, description="run.shards: split the cases into this many steps (default 1)."
    )
    no_cache: bool = Field(
        default=False, description="Bypass the judge cache: neither read nor write it."
    )
    progress: bool = Field(
        default=False,
        description="Draw a progress bar on the controlling terminal, if any "
        "(the command line sets it when run in a terminal).",
    )

    def resolve(self) -> Config:
        config = load_config(self.config_file).with_overrides(
            k=self.k,
            source_match=self.source_match,
            adapter=self.adapter,
            metrics=None if self.metrics is None else tuple(self.metrics),
            shards=self.shards,
        )
        if self.adapter_options_json:
            options = json.loads(self.adapter_options_json)
            if not isinstance(options, dict):
                raise ValueError("adapter_options_json must be a JSON object")
            config = Config(
                config.run, type(config.adapter)(config.adapter.target, options), config.judge
            )
        return config
