"""The persistent Dagster instance the command line records its runs in, so
every command-line run also shows in the UI."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_DAGSTER_HOME = Path("data/dagster_home")

# Telemetry off: ragproof runs on machines without internet and sends nothing anywhere.
_DAGSTER_YAML = "telemetry:\n  enabled: false\n"


def ensure_dagster_home() -> Path:
    """Use $DAGSTER_HOME, defaulting under data/; create it with telemetry off."""
    home = Path(os.environ.get("DAGSTER_HOME") or DEFAULT_DAGSTER_HOME).resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(_DAGSTER_YAML, encoding="utf-8")
    os.environ["DAGSTER_HOME"] = str(home)
    return home
