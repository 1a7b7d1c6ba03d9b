"""`ragproof run` end to end on real LangChain, LlamaIndex and Haystack pipelines.

Each test runs the installed CLI on tests/fixtures/frameworks/cases.jsonl with a
ragproof.toml naming a factory in tests/support/frameworks/; the frameworks'
own fake models answer (no network). Expected values are worked out by hand in
tests/fixtures/frameworks/README.md. A framework whose extra is not installed
skips.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

from ragproof_core.store.run_store import RunStore
from tests.conftest import FIXTURES
from tests.support.cli import RAGPROOF, cli_env, ragproof

pytestmark = pytest.mark.slow

FRAMEWORKS = FIXTURES / "frameworks"
CASES = FRAMEWORKS / "cases.jsonl"
NDCG_HALF = (1 / math.log2(3)) / (1 + 1 / math.log2(3))  # d3 of {d3, d4} found at rank 2
NDCG_FIRST_OF_TWO = 1 / (1 + 1 / math.log2(3))  # d3 of {d3, d4} found at rank 1

QUESTION_C3 = "Which river flows through Vienna, the capital of Austria?"
METRICS = (
    "retrieval.precision_at_k",
    "retrieval.recall_at_k",
    "retrieval.mrr",
    "retrieval.ndcg_at_k",
    "generation.citation_validity",
    "echo.exact_match",
)


def _importorskip(module: str, extra: str) -> None:
    pytest.importorskip(module, reason=f"extra not installed: pip install 'ragproof[{extra}]'")


def _run(config: str, store_path: Path, cwd: Path | None = None) -> tuple[dict, dict]:
    args = ("run", "--dataset", str(CASES), "--config", str(FRAMEWORKS / config), "--json")
    if cwd is None:
        done = ragproof(*args)
    else:
        # No __pycache__ left in the fixture folder by importing its module.
        env = cli_env(PYTHONDONTWRITEBYTECODE="1")
        done = subprocess.run(
            [str(RAGPROOF), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=180
        )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "completed"
    assert list(out["metrics"]) == list(METRICS)
    outputs = {o.case_id: o for o in RunStore(store_path).read_outputs(out["run_id"])}
    assert all(o.error is None for o in outputs.values()), outputs
    return out["metrics"], outputs


def _assert_means(metrics: dict, expected: dict[str, tuple[float | None, int, int]]) -> None:
    """expected: metric -> (mean, scored, skipped)."""
    for name, (mean, n_scored, n_skipped) in expected.items():
        got = metrics[name]
        assert (got["scored"], got["skipped"], got["errored"]) == (n_scored, n_skipped, 0), name
        if mean is None:
            assert got["mean"] is None, name
        else:
            assert math.isclose(got["mean"], mean, rel_tol=1e-12, abs_tol=1e-15), (name, got)


def _retrieved(outputs: dict) -> dict[str, list[str]]:
    return {case_id: [c.id for c in o.retrieved] for case_id, o in sorted(outputs.items())}


def _citations(outputs: dict) -> dict[str, tuple[str, ...] | None]:
    return {case_id: o.answer.citations for case_id, o in sorted(outputs.items())}


# DeterministicFakeEmbedding's fixed ranking (langchain_app.py); fw-4 has no source_id.
LANGCHAIN_RETRIEVED = {
    "c1": ["fw-4", "d3", "d1"],
    "c2": ["fw-4", "d7", "d1"],
    "c3": ["d1", "d3", "d7"],
}
LANGCHAIN_RETRIEVAL = {
    "retrieval.precision_at_k": (2 / 9, 3, 0),
    "retrieval.recall_at_k": (2 / 3, 3, 0),
    "retrieval.mrr": (2 / 9, 3, 0),
    "retrieval.ndcg_at_k": (1 / 3, 3, 0),
}


def test_langchain_chain_returning_answer_context_and_citations_async(store_path):
    _importorskip("langchain_core", "langchain")
    metrics, outputs = _run("langchain.toml", store_path)
    assert _retrieved(outputs) == LANGCHAIN_RETRIEVED
    # The chain's `citations` are context Documents, mapped to chunk ids like the context.
    assert _citations(outputs) == {"c1": ("fw-4", "d3"), "c2": ("fw-4", "d7"), "c3": ("d1", "d3")}
    assert [c.id for c in outputs["c1"].answer.retrieved_chunks] == ["fw-4", "d3", "d1"]
    assert outputs["c1"].retrieved[2].metadata == {"source_id": "d1"}
    assert [o.answer.text for _, o in sorted(outputs.items())] == ["Paris", "Bonn", "Vienna"]
    _assert_means(
        metrics,
        {
            **LANGCHAIN_RETRIEVAL,
            "generation.citation_validity": (1.0, 3, 0),
            "echo.exact_match": (2 / 3, 3, 0),
        },
    )


def test_langchain_message_chain_with_separate_retriever_sync_from_the_working_folder(store_path):
    _importorskip("langchain_core", "langchain")
    # The factory module my_rag_app.py sits in the folder `ragproof run` starts in.
    metrics, outputs = _run("workdir/ragproof.toml", store_path, cwd=FRAMEWORKS / "workdir")
    assert _retrieved(outputs) == LANGCHAIN_RETRIEVED
    # [n] cites the n-th retrieved chunk; [4] points past the three retrieved.
    assert _citations(outputs) == {"c1": ("d1",), "c2": ("fw-4", "[4]"), "c3": ()}
    assert outputs["c2"].answer.text == "Bonn [1] [4]"
    _assert_means(
        metrics,
        {
            **LANGCHAIN_RETRIEVAL,
            "generation.citation_validity": (0.75, 2, 1),
            "echo.exact_match": (1 / 3, 3, 0),  # only "The Danube" has no marker
        },
    )


def test_llamaindex_query_engine_async(store_path):
    _importorskip("llama_index.core", "llamaindex")
    metrics, outputs = _run("llamaindex.toml", store_path)
    assert _retrieved(outputs) == {"c1": ["d1", "d3"], "c2": ["d1", "d3"], "c3": ["d1", "d3"]}
    assert [c.score for c in outputs["c1"].retrieved] == pytest.approx([1.0, math.sqrt(3) / 2])
    # MockLLM answers with the prompt: "Based on [1] and [3]: <question>".
    assert outputs["c3"].answer.text == f"Based on [1] and [3]: {QUESTION_C3}"
    assert _citations(outputs) == {c: ("d1", "[3]") for c in ("c1", "c2", "c3")}
    _assert_means(
        metrics,
        {
            "retrieval.precision_at_k": (2 / 9, 3, 0),
            "retrieval.recall_at_k": (0.5, 3, 0),
            "retrieval.mrr": (0.5, 3, 0),
            "retrieval.ndcg_at_k": ((1 + NDCG_HALF) / 3, 3, 0),
            "generation.citation_validity": (0.5, 3, 0),
            "echo.exact_match": (0.0, 3, 0),
        },
    )


def test_haystack_pipeline_async(store_path):
    _importorskip("haystack", "haystack")
    metrics, outputs = _run("haystack.toml", store_path)
    assert _retrieved(outputs) == {"c1": ["d1", "d3"], "c2": ["d3", "d1"], "c3": ["d7", "d1"]}
    # The generator's meta["citations"] holds Documents; each maps to its source_id.
    assert _citations(outputs) == {"c1": ("d1",), "c2": ("d3",), "c3": ("d7",)}
    assert all(c.score > 0 for o in outputs.values() for c in o.retrieved)
    _assert_means(
        metrics,
        {
            "retrieval.precision_at_k": (1 / 3, 3, 0),
            "retrieval.recall_at_k": (5 / 6, 3, 0),
            "retrieval.mrr": (1.0, 3, 0),
            "retrieval.ndcg_at_k": ((2 + NDCG_FIRST_OF_TWO) / 3, 3, 0),
            "generation.citation_validity": (1.0, 3, 0),
            "echo.exact_match": (1 / 3, 3, 0),  # "The Danube" alone carries no marker
        },
    )
