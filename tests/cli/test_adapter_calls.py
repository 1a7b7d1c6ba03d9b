"""`ragproof run` against a live HTTP service calls only what its metrics read and says
how many calls it made (issue 51): the summary's adapter line, `run --json`'s
`adapter_calls`, and the calls `--dry-run` would make. Ten cases, a counting service."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.support.cli import ragproof
from tests.support.rag_service import RagService

RETRIEVAL = "retrieval.precision_at_k,retrieval.ndcg_at_k"


@pytest.fixture(scope="module")
def service():
    with RagService() as running:
        yield running


@pytest.fixture
def files(tmp_path, service):
    dataset = tmp_path / "cases.jsonl"
    dataset.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"c{i}",
                    "question": f"question {i}",
                    "expected_source_ids": ["doc1#0"],
                    "expected_answer": "echo",
                }
            )
            + "\n"
            for i in range(10)
        )
    )
    config = tmp_path / "ragproof.toml"
    config.write_text(
        '[adapter]\ntarget = "ragproof_core.adapters.http:HttpAdapter"\n'
        f'options = {{ url = "{service.base}/answer", retrieve_url = "{service.base}/retrieve" }}\n'
    )
    service.requests.clear()
    return ["--dataset", str(dataset), "--config", str(config)]


def _paths(service) -> Counter[str]:
    return Counter(request.path for request in service.requests)


def test_a_retrieval_only_run_calls_retrieve_alone_and_says_so(service, files):
    done = ragproof("run", *files, "--metrics", RETRIEVAL)
    assert done.returncode == 0, done.stderr
    assert _paths(service) == {"/retrieve": 10}
    assert "adapter: 10 retrieve, 0 answer calls" in done.stdout.splitlines()
    shown = json.loads(ragproof("run", *files, "--metrics", RETRIEVAL, "--json").stdout)
    assert shown["adapter_calls"] == {"retrieve": 10, "answer": 0}
    assert _paths(service) == {"/retrieve": 20}


def test_an_answer_only_run_calls_answer_alone(service, files):
    shown = json.loads(ragproof("run", *files, "--metrics", "echo.exact_match", "--json").stdout)
    assert _paths(service) == {"/answer": 10}
    assert shown["adapter_calls"] == {"retrieve": 0, "answer": 10}
    assert shown["metrics"]["echo.exact_match"]["scored"] == 10


def test_the_dry_run_says_which_calls_it_would_make_and_makes_none(service, files):
    done = ragproof("run", *files, "--metrics", RETRIEVAL, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "  adapter: 10 retrieve, 0 answer calls would be made" in done.stdout.splitlines()
    both = json.loads(ragproof("run", *files, "--dry-run", "--json").stdout)
    assert both["adapter_calls"] == {"retrieve": 10, "answer": 10}
    assert not service.requests
