"""Configuration: the run settings read from ragproof.toml, flags and the environment, and
the typed run manifest a run records of them (``manifest.py``).

What the other layers use is exported here; modules inside the package import
each other directly.
"""

from ragproof_core.config.expansion import (
    Expanded,
    check_environment,
    expand_path,
    expanded,
    path_values,
    run_masker,
    run_secrets,
)
from ragproof_core.config.gate import (
    Floor,
)
from ragproof_core.config.identity import (
    SHORT_DIGEST,
    parse_tag,
    tags_text,
)
from ragproof_core.config.launch import (
    resolve_launch,
)
from ragproof_core.config.manifest import (
    RunManifest,
)
from ragproof_core.config.redaction import (
    REDACTED,
    is_secret_key,
    redact,
)
from ragproof_core.config.settings import (
    DEMO_ADAPTER,
    RUN_KEYS,
    AdapterSpec,
    Config,
    ConfigError,
    RunSettings,
    load_config,
    run_key_choices,
    run_key_help,
    run_key_type,
    store_root,
)
from ragproof_core.config.suites import (
    DEFAULT_CRON,
    DEFAULT_TIMEZONE,
    SUITE_KEYS,
    SUITES_ENV,
    Suite,
    load_suites,
    suites_file,
)

__all__ = [
    "AdapterSpec",
    "Config",
    "ConfigError",
    "DEFAULT_CRON",
    "DEFAULT_TIMEZONE",
    "DEMO_ADAPTER",
    "Expanded",
    "SHORT_DIGEST",
    "Floor",
    "REDACTED",
    "RUN_KEYS",
    "RunManifest",
    "RunSettings",
    "SUITE_KEYS",
    "SUITES_ENV",
    "Suite",
    "check_environment",
    "expand_path",
    "expanded",
    "path_values",
    "is_secret_key",
    "load_config",
    "load_suites",
    "parse_tag",
    "redact",
    "resolve_launch",
    "run_key_choices",
    "run_key_help",
    "run_key_type",
    "run_masker",
    "run_secrets",
    "store_root",
    "suites_file",
    "tags_text",
]
