"""``ragproof.evaluate(dataset, adapter=<object>)`` (CONTRACT section 26): the object is
called in this process by the same Dagster job, and the run is stored, listed and
compared like a run of the same adapter given by its import path, with equal values."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

import ragproof
from tests.support.cli import cli_env
from tests.support.cli import ragproof as ragproof_cli
from tests.support.counting_adapter import CountingAdapter

CASES = 4
METRICS = ["retrieval.recall_at_k", "retrieval.mrr", "echo.exact_match"]
TARGET = f"{__name__}:KeptOpen"
ROWS = [
    {
        "id": f"q{i}",
        "question": f"question {i}?",
        "expected_source_ids": [f"d{i}"],
        "expected_answer": "answer 1",
    }
    for i in range(CASES)
]


class KeptOpen(CountingAdapter):
    """The counting pipeline (its outputs depend on its own calls alone), with a
    ``close`` the run must leave to its caller."""

    closed = False

    def close(self) -> None:
        self.closed = True


@pytest.fixture(scope="module")
def runs(module_env) -> dict[str, object]:
    store, _ = module_env
    pipeline = KeptOpen()
    return {
        "pipeline": pipeline,
        "object": ragproof.evaluate(ROWS, pipeline, metrics=METRICS, store=store, name="obj"),
        "path": ragproof.evaluate(ROWS, TARGET, metrics=METRICS, store=store, name="path"),
    }


def test_an_object_is_called_here_and_equals_its_import_path(runs, module_home):
    pipeline, by_object, by_path = runs["pipeline"], runs["object"], runs["path"]
    assert (by_object.status, by_path.status) == ("completed", "completed")
    # Called in this process, each question once, and left open for its caller.
    assert sum(n for (method, _), n in pipeline._calls.items() if method == "answer") == CASES
    assert not pipeline.closed
    assert by_object.metrics() == by_path.metrics()
    pd.testing.assert_frame_equal(
        by_object.cases.fillna({"value": math.inf}), by_path.cases.fillna({"value": math.inf})
    )
    assert list(by_object.outputs["answer"]) == list(by_path.outputs["answer"])
    # Compared like any other run: nothing differs.
    comparison = ragproof.compare(by_path, by_object)
    assert set(comparison.table["delta"].dropna()) == {0.0}
    assert comparison.regressions.empty
    # Listed like any other, its adapter the object's class.
    store, home = module_home
    listed = ragproof_cli(
        "runs", "--json", env=cli_env(RAGPROOF_STORE=str(store), DAGSTER_HOME=str(home))
    )
    assert listed.returncode == 0, listed.stderr
    by_id = {r["run_id"]: r for r in json.loads(listed.stdout)}
    for run in (by_object, by_path):
        assert (by_id[run.run_id]["adapter"], by_id[run.run_id]["status"]) == (TARGET, "completed")
    assert by_id[by_object.run_id]["name"] == "obj"


@pytest.mark.parametrize(
    ("adapter", "shards", "line"),
    [
        (
            object(),
            1,
            "ragproof: adapter: an object of type object has no answer() method; give an "
            "object with answer(question), or an import path 'package.module:Name'",
        ),
        (
            KeptOpen,
            1,
            "ragproof: adapter: KeptOpen is a class; give an object of it (KeptOpen(...)) "
            "or its import path 'package.module:Name'",
        ),
        (
            KeptOpen(),
            2,
            "ragproof: run.shards: 2 shards for an adapter object; an object is called in "
            "this process, on one shard: give its import path 'package.module:Name' to run "
            "shards",
        ),
    ],
    ids=["no-answer", "a-class", "shards"],
)
def test_an_object_that_cannot_run_is_bad_input(module_env, tmp_path, adapter, shards, line):
    store = tmp_path / "untouched"
    with pytest.raises(ragproof.BadInput) as caught:
        ragproof.evaluate(ROWS, adapter, store=store, shards=shards)
    assert str(caught.value) == line
    assert not store.exists() or not any(store.iterdir())
