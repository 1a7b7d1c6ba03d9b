"""HttpAdapter taking, beside its own options, the option names users keep secrets
under, so the secrets test can plant a token in each (tests/cli/test_secrets.py)."""

from __future__ import annotations

from typing import Any

from ragproof_core.adapters.http import HttpAdapter


class HttpAdapterWithSecretOptions(HttpAdapter):
    def __init__(self, url: str, headers: dict[str, str] | None = None, **secrets: Any) -> None:
        super().__init__(url, headers=headers)
        # Held, never shown: only the stored config is under test.
        self._secrets = secrets
