"""What both judge reply caches share (the SQLite file of a local store,
``cache.py``, and the segment folder of a remote one, ``segment_cache.py``):
the cache key, the cached reply and the base class that stamps and stores it."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Self


def input_hash(inputs: dict[str, Any]) -> str:
    """sha256 of the inputs' canonical JSON: the same inputs always give the same key."""
    canonical = json.dumps(inputs, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedReply:
    data: dict[str, Any]
    raw: str
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float
    created_at: str


Key = tuple[str, str, str]  # (model, prompt hash, input hash)


class ReplyCache:
    """What both caches share: ``put`` stamps the reply and hands it to ``_store``;
    ``with`` closes. Subclasses implement ``_store``, ``get``, ``count`` and ``close``."""

    def put(
        self,
        model: str,
        prompt_hash: str,
        input_hash: str,
        data: dict[str, Any],
        raw: str,
        input_tokens: int | None,
        output_tokens: int | None,
        cost_usd: float,
    ) -> None:
        created_at = datetime.now(UTC).isoformat(timespec="seconds")
        reply = CachedReply(data, raw, input_tokens, output_tokens, cost_usd, created_at)
        self._store((model, prompt_hash, input_hash), reply)

    def _store(self, key: Key, reply: CachedReply) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
