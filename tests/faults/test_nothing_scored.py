"""A run in which no selected metric scores any case completes (issue 39, item 1): exit 0,
status `completed`, every case counted in the summary, and `ragproof runs` lists it. Each
shape the issue names, replayed through `ragproof run` as a user runs it: an adapter whose
`answer` always raises, an HTTP service that is down, a conversation dataset given to an
adapter without a `history` parameter, a function metric returning None on every case,
`--metrics system.cost_usd` on outputs that report no cost, and a judge failing every call.
The tally of every empty shape, per shard and gathered, is tested in
tests/core/store/test_result_tally.py."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import REPO
from tests.faults.conftest import closed_port, judge_env, write_jsonl
from tests.support.cli import cli_env, ragproof

RAISING = "tests.support.fault_adapters:FaultyAdapter"
DEMO = "ragproof_core.adapters.demo:DemoRAG"
CONVERSATIONS = REPO / "data" / "demo" / "conversations.jsonl"


def _config(folder: Path, name: str, body: str) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(body, encoding="utf-8")
    return path


def test_a_run_where_nothing_scores_completes_and_is_listed(tmp_path: Path) -> None:
    raising = write_jsonl(
        tmp_path / "raising.jsonl",
        [{"id": f"r{i}", "question": f"raise {i}", "expected_source_ids": ["d1"]} for i in (1, 2)],
    )
    plain = write_jsonl(
        tmp_path / "plain.jsonl", [{"id": f"p{i}", "question": f"What is {i}?"} for i in (1, 2)]
    )
    (tmp_path / "nothing_metric.py").write_text("def nothing(**arguments):\n    return None\n")
    down = f"http://127.0.0.1:{closed_port()}"
    quick = {"RAGPROOF_JUDGE_MAX_ATTEMPTS": "1", "RAGPROOF_JUDGE_BACKOFF_S": "0.001"}
    shapes = {
        # name: (dataset, config body, extra arguments, environment, cases, what the run says)
        "answer always raises": (raising, f'[adapter]\ntarget = "{RAISING}"\n', [], {}, 2),
        "HTTP service down": (
            raising,
            '[adapter]\ntarget = "ragproof_core.adapters.http:HttpAdapter"\n'
            f'options = {{ url = "{down}/answer" }}\n',
            [],
            {},
            2,
        ),
        "conversations without history": (
            CONVERSATIONS,
            f'[adapter]\ntarget = "{RAISING}"\n',
            [],
            {},
            None,
        ),
        "function metric returns None": (
            plain,
            f'[adapter]\ntarget = "{DEMO}"\n\n[[metric]]\nname = "custom.nothing"\n'
            'function = "nothing_metric:nothing"\n',
            ["--metrics", "custom.nothing"],
            {},
            2,
        ),
        "no cost reported": (
            plain,
            f'[adapter]\ntarget = "{DEMO}"\n',
            ["--metrics", "system.cost_usd"],
            {},
            2,
        ),
        "judge fails every call": (
            plain,
            f'[adapter]\ntarget = "{DEMO}"\n',
            ["--metrics", "generation.answer_relevance"],
            {**judge_env(f"{down}/v1"), **quick},
            2,
        ),
    }
    run_ids = {}
    for name, (dataset, body, extra, env, cases) in shapes.items():
        config = _config(tmp_path, name.replace(" ", "_"), body)
        done = ragproof(
            "run",
            "--dataset",
            str(dataset),
            "--config",
            str(config),
            "--json",
            *extra,
            env=cli_env(PYTHONPATH=f"{REPO}:{tmp_path}", **env),
        )
        assert done.returncode == 0, (name, done.stderr)
        reply = json.loads(done.stdout)
        assert reply["status"] == "completed", name
        metrics = reply["metrics"]
        assert metrics and all(m["scored"] == 0 and m["mean"] is None for m in metrics.values())
        if cases is not None:
            # Every case is counted under each metric: skipped, not applicable or an error.
            for metric, row in metrics.items():
                counted = row["skipped"] + row["not_applicable"] + row["errored"]
                assert counted == cases, (name, metric, row)
        run_ids[name] = reply["run_id"]
    listed = ragproof("runs", "--json")
    assert listed.returncode == 0, listed.stderr
    runs = {run["run_id"]: run for run in json.loads(listed.stdout)}
    for name, run_id in run_ids.items():
        assert runs[run_id]["status"] == "completed", name
        assert shapes[name][4] in (None, runs[run_id]["cases"]), name
