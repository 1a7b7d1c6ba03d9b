"""``ragproof.evaluate``, ``load_run`` and ``compare`` (CONTRACT section 26) on the
recorded fixture run: a run from Python equals ``ragproof run``'s, in the same store."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

import ragproof
from tests.assets.expected import EXPECTED, assert_summary
from tests.python.conftest import CASES, CONFIG, WORSE_CONFIG
from tests.support.cli import cli_env
from tests.support.cli import ragproof as ragproof_cli

# tests/fixtures/recorded/ragproof.toml as a dict (its recording's path given in full).
CONFIG_DICT = {
    "run": {"k": 5, "concurrency": 4},
    "adapter": {
        "target": "ragproof_core.adapters.recorded:RecordedAdapter",
        "options": {"path": str(CONFIG.parent / "outputs.jsonl")},
    },
}


def _rows() -> list[dict]:
    return [json.loads(line) for line in CASES.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def runs(module_env) -> dict[str, ragproof.Run]:
    """The fixture dataset evaluated from a path, a list of dicts (its config a dict) and a
    DataFrame, and
    replayed from the worse recording: four Dagster runs in the module's store."""
    store, _ = module_env
    return {
        "path": ragproof.evaluate(CASES, config=CONFIG, store=store, name="from-path"),
        "rows": ragproof.evaluate(_rows(), config=CONFIG_DICT, store=store),
        "frame": ragproof.evaluate(
            pd.DataFrame(_rows()), config=CONFIG, store=store, tags={"form": "frame"}
        ),
        "worse": ragproof.evaluate(CASES, config=WORSE_CONFIG, store=store),
    }


def test_exports_exactly_the_surface():
    assert sorted(ragproof.__all__) == sorted(
        ["evaluate", "load_run", "compare", "Run", "Comparison", "BadInput", "resume"]
    )
    assert issubclass(ragproof.BadInput, ValueError)


@pytest.mark.parametrize("form", ["path", "rows", "frame"])
def test_each_dataset_form_gives_the_expected_summary(runs, form):
    run = runs[form]
    assert run.status == "completed"
    assert list(run.summary["metric"]) == list(EXPECTED)
    assert_summary(run.metrics())
    assert list(run.cases.columns) == ["case_id", "metric", "status", "value", "reason"]
    assert len(run.cases) == 6 * len(EXPECTED)
    assert sorted(run.outputs["case_id"]) == ["c1", "c2", "c3", "c4", "c5", "c6"]
    assert {"answer", "retrieved_ids", "citations", "latency_s", "error"} <= set(run.outputs)
    assert run.judge["model"] is None and run.judge["requests"] == 0


def test_equals_the_command_line_run_and_is_listed_beside_it(runs, module_home):
    store, home = module_home
    env = cli_env(RAGPROOF_STORE=str(store), DAGSTER_HOME=str(home))
    done = ragproof_cli("run", "--dataset", str(CASES), "--config", str(CONFIG), "--json", env=env)
    assert done.returncode == 0, done.stderr
    cli = json.loads(done.stdout)
    for form in ("path", "rows", "frame"):
        assert runs[form].metrics() == cli["metrics"], form
        assert runs[form].judge == cli["judge"], form
    # Case for case: the command line's run read back through load_run.
    cli_run = ragproof.load_run(cli["run_id"], store=store)
    for form in ("path", "rows", "frame"):
        left = runs[form].cases.fillna({"value": math.inf})
        right = cli_run.cases.fillna({"value": math.inf})
        pd.testing.assert_frame_equal(left, right)
    listed = ragproof_cli("runs", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    by_id = {r["run_id"]: r for r in json.loads(listed.stdout)}
    assert {r.run_id for r in runs.values()} <= set(by_id)
    assert by_id[runs["path"].run_id]["name"] == "from-path"
    assert by_id[runs["frame"].run_id]["tags"] == {"form": "frame"}


def test_load_run_reads_the_stored_run(runs, module_home):
    store, _ = module_home
    loaded = ragproof.load_run(runs["path"].run_id, store=store)
    assert (loaded.run_id, loaded.status) == (runs["path"].run_id, "completed")
    pd.testing.assert_frame_equal(loaded.summary, runs["path"].summary)
    pd.testing.assert_frame_equal(loaded.cases, runs["path"].cases)


def test_load_run_of_an_unknown_run_is_bad_input(module_home):
    store, _ = module_home
    with pytest.raises(ragproof.BadInput, match=r"^ragproof: .*nosuchrun"):
        ragproof.load_run("nosuchrun", store=store)


def test_compare_gives_the_json_rows_and_the_regressions(runs, module_home):
    store, home = module_home
    comparison = ragproof.compare(runs["path"], runs["worse"])
    assert (comparison.run_a, comparison.run_b) == (runs["path"].run_id, runs["worse"].run_id)
    env = cli_env(RAGPROOF_STORE=str(store), DAGSTER_HOME=str(home))
    done = ragproof_cli("compare", runs["path"].run_id, runs["worse"].run_id, "--json", env=env)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["metrics"]
    assert list(comparison.table["metric"]) == list(rows)
    for row in comparison.table.to_dict("records"):
        want = rows[row["metric"]]
        for key in ("mean_a", "mean_b", "delta", "paired", "verdict"):
            got = row[key]
            assert (got is None or got != got) if want[key] is None else got == want[key]
    assert set(comparison.regressions["metric"]) <= set(comparison.table["metric"])
    assert len(comparison.regressions) == len(comparison.lines)


def test_a_bad_dataset_line_raises_bad_input_with_the_command_line_line(tmp_path, module_env):
    store, _ = module_env
    bad = tmp_path / "bad.jsonl"
    lines = CASES.read_text().splitlines()
    bad.write_text("\n".join([lines[0], '{"id": "x", "questoin": "?"}', *lines[2:]]) + "\n")
    with pytest.raises(ragproof.BadInput) as caught:
        ragproof.evaluate(bad, config=CONFIG, store=store)
    message = str(caught.value)
    assert message.startswith(f"ragproof: {bad}:2: "), message
    assert "\n" not in message
    done = ragproof_cli(
        "run",
        "--dataset",
        str(bad),
        "--config",
        str(CONFIG),
        env=cli_env(RAGPROOF_STORE=str(store), DAGSTER_HOME=str(module_env[1])),
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == message


def test_check_and_report(runs, tmp_path):
    gate = tmp_path / "gate.toml"
    gate.write_text('[gate]\n"retrieval.mrr" = { min = 0.5 }\n"echo.exact_match" = { min = 0.9 }\n')
    results = runs["path"].check(gate)
    assert [(r.floor.metric, r.passed) for r in results] == [
        ("retrieval.mrr", True),
        ("echo.exact_match", False),
    ]
    written = runs["path"].report(tmp_path / "report.html")
    assert written == (tmp_path / "report.html").resolve()
    assert runs["path"].run_id in Path(written).read_text()


def test_a_config_dict_is_written_as_toml(tmp_path):
    from ragproof.evaluation import _config_file
    from ragproof_core.config import load_config

    config = _config_file(
        {**CONFIG_DICT, "gate": {"retrieval.mrr": {"min": 0.5, "every_case": True}}}, tmp_path
    )
    loaded = load_config(config)
    assert loaded.run.k == 5 and loaded.adapter.target.endswith(":RecordedAdapter")
    assert [(f.metric, f.min, f.every_case) for f in loaded.gate] == [("retrieval.mrr", 0.5, True)]
