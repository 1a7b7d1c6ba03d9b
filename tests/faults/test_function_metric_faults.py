"""Function metrics that misbehave stay their own errors (issue 39, item 2; CONTRACT section 21
as amended), replayed through `ragproof run`: a function that calls `sys.exit`, raises
`KeyboardInterrupt` or a bare `BaseException`, or sleeps for an hour is that metric's error
on that case (the sleep bounded by the table's `timeout_s`), the run completes with exit 0;
a count (2.0) is stored as 2.0; grades arrive as the dataset gives them."""

from __future__ import annotations

import json
from pathlib import Path

from tests.faults.conftest import write_jsonl
from tests.support.cli import ragproof

FUNCTIONS = "tests.fixtures.custom_metrics.functions"
CONFIG = f"""[adapter]
target = "ragproof_core.adapters.demo:DemoRAG"

[[metric]]
name = "custom.misbehave"
function = "{FUNCTIONS}:misbehave"
timeout_s = 0.5

[[metric]]
name = "custom.grades"
function = "{FUNCTIONS}:grades_given"
"""
BEHAVIOURS = {
    "exit": ("system_exit", "SystemExit: 3"),
    "interrupt": ("keyboard_interrupt", "KeyboardInterrupt"),
    "base": ("base_exception", "BaseException: not an Exception"),
    "sleep": ("sleep", "took longer than timeout_s = 0.5 s"),
}


def test_function_metrics_that_exit_interrupt_or_sleep_are_errors_and_the_run_completes(
    tmp_path: Path,
) -> None:
    rows = [
        {"id": case_id, "question": "What does break do?", "metadata": {"misbehave": mode}}
        for case_id, (mode, _) in BEHAVIOURS.items()
    ]
    rows += [
        {"id": "count", "question": "What does break do?", "expected_source_ids": ["a", "b"]},
        {"id": "graded", "question": "What does break do?", "expected_source_ids": {"d1": 0}},
    ]
    dataset = write_jsonl(tmp_path / "cases.jsonl", rows)
    config = tmp_path / "ragproof.toml"
    config.write_text(CONFIG, encoding="utf-8")
    done = ragproof(
        "run", "--dataset", str(dataset), "--config", str(config), "--metrics", "custom.*", "--json"
    )
    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout)
    assert reply["status"] == "completed"
    misbehave = reply["metrics"]["custom.misbehave"]
    assert (misbehave["scored"], misbehave["errored"], misbehave["mean"]) == (2, 4, 2.0)
    stored = ragproof(
        "sql",
        "SELECT case_id, metric, status, value, reason FROM case_results "
        f"WHERE run_id = '{reply['run_id']}' ORDER BY metric, case_id",
        "--json",
    )
    assert stored.returncode == 0, stored.stderr
    results = {(r["metric"], r["case_id"]): r for r in json.loads(stored.stdout)}
    for case_id, (_, reason) in BEHAVIOURS.items():
        row = results[("custom.misbehave", case_id)]
        assert (row["status"], row["value"], row["reason"]) == ("error", None, reason)
    assert results[("custom.misbehave", "count")]["value"] == 2.0
    # An object of grades arrives as that object ({"d1": 0}: one graded id), a list as a list.
    assert results[("custom.grades", "graded")]["value"] == 101.0
    assert results[("custom.grades", "count")]["value"] == 2.0
