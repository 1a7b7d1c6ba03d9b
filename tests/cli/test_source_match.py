"""`ragproof run --source-match document` end to end: the same recorded outputs score
differently by chunk and by document (tests/fixtures/document_match/README.md)."""

from __future__ import annotations

import json
import math

import pytest

from tests.conftest import FIXTURES
from tests.support.cli import ragproof

FIXTURE = FIXTURES / "document_match"
D2_NDCG = (1 / math.log2(3)) / (1 + 1 / math.log2(3))

# metric -> (mean, scored) for each source_match
EXPECTED = {
    "chunk": {
        "retrieval.precision_at_k": 0.0,
        "retrieval.recall_at_k": 0.0,
        "retrieval.mrr": 0.125,
        "retrieval.ndcg_at_k": 0.0,
    },
    "document": {
        "retrieval.precision_at_k": 0.5,
        "retrieval.recall_at_k": 0.75,
        "retrieval.mrr": 0.75,
        "retrieval.ndcg_at_k": (1.0 + D2_NDCG) / 2,
    },
}


@pytest.mark.slow
@pytest.mark.parametrize("source_match", ["chunk", "document"])
def test_source_match_on_the_command_line(source_match):
    done = ragproof(
        "run",
        "--dataset",
        str(FIXTURE / "cases.jsonl"),
        "--config",
        str(FIXTURE / "ragproof.toml"),
        "--source-match",
        source_match,
        "--json",
    )
    assert done.returncode == 0, done.stderr
    metrics = json.loads(done.stdout)["metrics"]
    assert {name: m["mean"] for name, m in metrics.items()} == EXPECTED[source_match]
    assert {m["scored"] for m in metrics.values()} == {2}
