"""What every `ragproof` command shares: exit codes, the user-error type, the store
and JSON printing."""

from __future__ import annotations

import json

from ragproof_core.config.settings import store_root
from ragproof_core.store.run_store import RunStore

EXIT_OK, EXIT_BAD_INPUT, EXIT_BUDGET = 0, 1, 2
EXIT_INTERNAL = 3
EXIT_REGRESSION = 4


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit 1."""


def open_store() -> RunStore:
    return RunStore(store_root())


def print_json(obj) -> None:
    print(json.dumps(obj, indent=2, sort_keys=False, default=str))
