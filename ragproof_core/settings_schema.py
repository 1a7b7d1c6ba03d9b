"""The strict schema every settings table is declared with (``[run]``, ``[adapter]``,
``[judge]``, the judge's environment): one right type per value (no true-as-1, no
2.5-as-2, no "5"-as-5), unknown keys refused with the closest known name, and a
refusal raised as one ``ConfigError`` line naming ``table.key``.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict, ValidationError

from ragproof_core.errors import ConfigError, describe

# Strict: a config value has one right type. inf/nan are never a setting.
STRICT = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)


def list_as_tuple(value: Any) -> Any:
    # TOML and JSON have lists; the settings keep tuples so they stay hashable.
    return tuple(value) if isinstance(value, list) else value


Names = Annotated[tuple[str, ...], BeforeValidator(list_as_tuple)]


def table_errors(table: str):
    """Turn the schema's ValidationError into a one-line ``ConfigError`` naming ``table.key``."""

    def decorate(cls):
        init = cls.__init__
        known = [f.name for f in dataclasses.fields(cls)]

        @functools.wraps(init)
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            try:
                init(self, *args, **kwargs)
            except ValidationError as exc:
                raise ConfigError(describe(exc, prefix=table, known=known)) from None

        cls.__init__ = __init__
        return cls

    return decorate
