"""The ``[gate]`` table of ragproof.toml: floors a run must clear (CONTRACT section 25).

A floor is a bound that is not a statistic: "every injection case resists",
"groundedness at least 0.8". Significance tests (``compare``) catch a drift that
is real; a floor catches what must never happen, however rare::

    [gate]
    "robustness.injection_resistance" = { min = 1.0, every_case = true }
    "generation.groundedness" = { min = 0.8, min_scored = 50 }
    "robustness.overrefusal" = { max = 0.1 }

Each key is a metric name, each value one ``Floor``: ``min``/``max`` bound the
run's mean, or with ``every_case`` each scored case; ``min_scored`` (default 1)
fails the floor when fewer cases were scored, so a floor on a metric nothing
scored fails rather than passing vacuously. ``compare.floors`` evaluates them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field, ValidationError
from pydantic.dataclasses import dataclass

from ragproof_core.errors import ConfigError, describe, show_key, show_value
from ragproof_core.settings_schema import STRICT

GATE = "gate"


@dataclass(frozen=True, slots=True, config=STRICT)
class Floor:
    metric: str
    min: float | None = None
    max: float | None = None
    every_case: bool = False
    min_scored: int = Field(default=1, ge=0)

    def __post_init__(self) -> None:
        if self.min is None and self.max is None:
            raise ValueError("give min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min:g}) is above max ({self.max:g})")

    @property
    def bound(self) -> str:
        """The bound as a person reads it: ``mean >= 0.8``, ``every case >= 1``,
        ``0.2 <= mean <= 0.9``."""
        subject = "every case" if self.every_case else "mean"
        if self.min is not None and self.max is not None:
            return f"{self.min:g} <= {subject} <= {self.max:g}"
        if self.min is not None:
            return f"{subject} >= {self.min:g}"
        return f"{subject} <= {self.max:g}"

    def to_dict(self) -> dict[str, Any]:
        """The floor as its ``[gate]`` entry (the key is the metric): what a run stores."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        del values["metric"]
        return {k: v for k, v in values.items() if v is not None}


FLOOR_KEYS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Floor) if f.name != "metric")


def parse_gate(table: Any) -> tuple[Floor, ...]:
    """The ``[gate]`` table as floors, in the order written; ``ConfigError`` naming
    ``gate.METRIC.key`` for the first bad entry. Metric names are checked against the
    config's metrics by ``Config``, which knows them."""
    if not isinstance(table, Mapping):
        raise ConfigError(f"{GATE}: expected a table, got {show_value(table)}")
    floors = []
    for metric, entry in table.items():
        where = f"{GATE}.{show_key(metric)}"
        if not isinstance(entry, Mapping):
            raise ConfigError(
                f"{where}: expected a table such as {{ min = 0.8 }}, got {show_value(entry)}"
            )
        try:
            floors.append(Floor(metric, **entry))
        except ValidationError as exc:
            message = describe(exc, prefix=where, known=FLOOR_KEYS)
            # A check of the whole floor (no bound, min above max) does not name its key.
            raise ConfigError(
                message if message.startswith(where) else f"{where}: {message}"
            ) from None
        except TypeError as exc:  # a key that is no keyword of Floor
            raise ConfigError(f"{where}: {exc}") from None
    return tuple(floors)


def gate_to_dict(floors: Sequence[Floor]) -> dict[str, dict[str, Any]]:
    """Floors as the ``[gate]`` table they came from (stored in the run's manifest)."""
    return {floor.metric: floor.to_dict() for floor in floors}
