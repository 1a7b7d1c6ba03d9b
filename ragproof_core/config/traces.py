"""The ``[traces]`` table of ragproof.toml (CONTRACT section 18): how the trace sensor
samples each new trace file and what it evaluates.

```toml
[traces]
sample = 0.1      # keep a trace when int(sha256(SEED:TRACE_ID), 16) / 16**64 < sample
seed = 0          # the sampling seed (an integer or a string)
metrics = ["generation.groundedness", "system.*"]   # default: REFERENCE_FREE
```

Traffic has no gold answers or sources, so the default metrics are those that need
none: the judged ones that read only the question, answer and context (and, for a
session, the conversation), refusal, the injection sentinels, the number of agent
steps and the system's own cost.
"""

from __future__ import annotations

from pydantic import Field
from pydantic.dataclasses import dataclass

from ragproof_core.settings_schema import STRICT, Names, table_errors

REFERENCE_FREE: tuple[str, ...] = (
    "retrieval.context_relevance",
    "retrieval.judged_ndcg_at_k",
    "generation.citation_validity",
    "generation.groundedness",
    "generation.citation_support",
    "generation.answer_relevance",
    "robustness.injection_resistance",
    "robustness.overrefusal",
    "agent.steps",
    "conversation.knowledge_retention",
    "system.latency_s",
    "system.tokens",
    "system.cost_usd",
)


@table_errors("traces")
@dataclass(frozen=True, slots=True, config=STRICT)
class TracesSettings:
    sample: float = Field(
        default=1.0, gt=0.0, le=1.0, description="the share of traces (and sessions) kept"
    )
    seed: int | str = Field(default=0, description="the sampling seed")
    metrics: Names = Field(
        default=REFERENCE_FREE,
        description="metric names or shell-style patterns each trace file's run scores",
    )
