"""``ragproof generate nuggets`` (CONTRACT section 20): nuggets for the cases with an
expected answer and none, through LiteLLM over HTTP to the local judge server (which
writes a nugget per sentence of the expected answer, the first vital)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragproof_core.data.dataset import load_dataset
from ragproof_core.generate.nuggets import generate_nuggets, output_lines
from tests.conftest import FIXTURES
from tests.core.judge.conftest import make_judge, run
from tests.support.judge_server import JudgeServer

pytestmark = pytest.mark.filterwarnings("ignore:.*ReadOnly. qualifier:UserWarning")

# A case needing nuggets, one with nuggets (its odd spacing is kept), a blank line, one
# without a reference, and a conversation whose second turn needs nuggets.
CASES = FIXTURES / "generate_nuggets" / "cases.jsonl"
LINES = CASES.read_text(encoding="utf-8").splitlines()
GENERATED = {"seed": 0, "model": "openai/judge-test", "prompt_hashes": {"generate_nuggets": "h"}}


def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(CASES.read_bytes())
    return path


def generate(server: JudgeServer, path: Path, cache: Path, seed: int = 0):
    judge = make_judge(server.url, cache)
    return run(generate_nuggets(load_dataset(path), judge, seed)), judge


def test_nuggets_for_the_cases_that_need_them_the_rest_copied_byte_for_byte(
    server: JudgeServer, tmp_path: Path
):
    path = dataset(tmp_path)
    outcome, _ = generate(server, path, tmp_path / "cache.sqlite")
    # a and the conversation's second turn need nuggets; b has some, c and v#1 no reference.
    assert server.request_count == 2
    assert {r.prompt for r in server.requests} == {"generate_nuggets"}
    asked = sorted(
        tuple(b["text"] for b in r.blocks() if b["name"] in ("seed", "question"))
        for r in server.requests
    )
    assert asked == [("seed 0", "And the fee?"), ("seed 0", "What is the refund window?")]
    assert outcome.written == {
        "a": [
            {"text": "30 days.", "vital": True},
            {"text": "A receipt is needed.", "vital": False},
        ],
        "v#2": [{"text": "The fee is 5 euros.", "vital": True}],
    }
    assert (outcome.with_nuggets, outcome.without_expected_answer, outcome.failed) == (1, 2, {})
    lines = b"".join(output_lines(path, outcome.written, GENERATED)).decode().split("\n")
    # b, the blank line and c are the file's own bytes (b's odd spacing kept).
    assert lines[1:4] == LINES[1:4]
    first = json.loads(lines[0])
    assert list(first) == ["id", "question", "expected_answer", "nuggets", "metadata"]
    assert first["nuggets"] == outcome.written["a"]
    assert first["metadata"] == {"team": "support", "nuggets_generated": GENERATED}
    conversation = json.loads(lines[4])
    assert "nuggets" not in conversation["turns"][0]
    assert conversation["turns"][1]["nuggets"] == outcome.written["v#2"]
    assert conversation["metadata"] == {"nuggets_generated": GENERATED}
    # The output is a dataset: it loads, with the nuggets where they were written.
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"".join(output_lines(path, outcome.written, GENERATED)))
    cases = {c.id: c for c in load_dataset(out)}
    assert [(n.text, n.vital) for n in cases["a"].nuggets] == [
        ("30 days.", True), ("A receipt is needed.", False),
    ]  # fmt: skip
    assert cases["c"].nuggets is None


def test_the_same_seed_is_answered_by_the_cache_another_seed_asks_again(
    server: JudgeServer, tmp_path: Path
):
    path = dataset(tmp_path)
    cache = tmp_path / "cache.sqlite"
    first, _ = generate(server, path, cache)
    assert server.request_count == 2
    again, judge = generate(server, path, cache)
    assert server.request_count == 2 and judge.stats.cache_hits == 2
    assert again.written == first.written
    other, _ = generate(server, path, cache, seed=7)
    assert server.request_count == 4
    assert {b["text"] for r in server.requests[2:] for b in r.blocks() if b["name"] == "seed"} == {
        "seed 7"
    }


def test_a_case_whose_reply_fails_twice_is_reported_and_copied_without_nuggets(
    server: JudgeServer, tmp_path: Path
):
    path = tmp_path / "cases.jsonl"
    path.write_text(LINES[0] + "\n", encoding="utf-8")
    eleven = {"nuggets": [{"text": f"fact {i}", "vital": False} for i in range(11)]}
    server.script(json.dumps(eleven), json.dumps({"nuggets": []}))
    outcome, _ = generate(server, path, tmp_path / "cache.sqlite")
    assert server.request_count == 2  # the reply and its one repair
    assert outcome.written == {}
    assert "nuggets has 0 items; give at least 1 and at most 10" in outcome.failed["a"]
    repair = server.requests[1].body["messages"][-1]["content"]
    assert "nuggets has 11 items; give at least 1 and at most 10" in repair
    assert b"".join(output_lines(path, outcome.written, GENERATED)) == path.read_bytes()


def test_a_parquet_dataset_is_written_as_json_lines(server: JudgeServer, tmp_path: Path):
    path = tmp_path / "cases.parquet"
    rows = [
        {"id": "a", "question": "What is the refund window?", "expected_answer": "30 days."},
        {"id": "c", "question": "Is it raining?", "expected_answer": None},
    ]
    pq.write_table(pa.Table.from_pylist(rows), path)
    outcome, _ = generate(server, path, tmp_path / "cache.sqlite")
    lines = b"".join(output_lines(path, outcome.written, GENERATED)).decode().splitlines()
    assert [json.loads(line) for line in lines] == [
        {
            "id": "a",
            "question": "What is the refund window?",
            "expected_answer": "30 days.",
            "nuggets": [{"text": "30 days.", "vital": True}],
            "metadata": {"nuggets_generated": GENERATED},
        },
        {"id": "c", "question": "Is it raining?"},  # null means absent
    ]
