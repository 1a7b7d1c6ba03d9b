"""What the judge did in one run: the record the judge IO manager stores and
the run summary reads (model, prompt hashes, requests, cache hits, cost)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class JudgeLedger:
    model: str | None = None
    prompt_hashes: dict[str, str] = field(default_factory=dict)
    use_cache: bool = True
    requests: int = 0
    cache_hits: int = 0
    judge_errors: int = 0
    cost_usd: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JudgeLedger:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})
