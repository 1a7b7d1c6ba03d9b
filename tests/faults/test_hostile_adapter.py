"""A hostile adapter fails its case, never the run (issue 27, item 4): through the
installed `ragproof run --json`, an async ``answer`` that calls ``sys.exit(0)``,
returns chunk metadata JSON cannot hold (an ``object()``, a dict containing itself,
an exception whose ``__str__`` raises), raises that exception, answers with a lone
surrogate, or blocks its event loop past ``run.timeout_s``; every call prints to
stdout. The run exits 0, each case's error says what happened, the good cases are
scored and stdout is the JSON alone. A constructor calling ``sys.exit`` is bad
input naming the adapter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.faults.conftest import query
from tests.support.cli import cli_env, ragproof
from tests.support.snapshot import tree_bytes

HOSTILE = FIXTURES / "hostile"
TARGET = "tests.fixtures.hostile.hostile_adapter:HostileAdapter"
BAD_OUTPUT = "invalid output from answer(): "
CHUNK = f"{BAD_OUTPUT}answer 'retrieved_chunks': chunk 0: chunk 'd1' "
EXPECTED_ERRORS = {
    "good-1": None,
    "exit": "SystemExit: 0 (in answer())",
    "object": f"{CHUNK}metadata.x: an object is not a JSON value",
    "circular": f"{CHUNK}metadata.self.self.self: nested deeper than 64 levels "
    "(or contains itself)",
    "unprintable": f"{CHUNK}metadata.x: an Unprintable is not a JSON value",
    "raise": "Unprintable: <str() raised RuntimeError> (in answer())",
    "surrogate": f"{BAD_OUTPUT}answer 'text' holds a lone surrogate, which is not valid text",
    "block": "timeout after 3.0s in answer()",
    "good-2": None,
}


@pytest.fixture
def homes(tmp_path) -> dict[str, str]:
    return {
        "RAGPROOF_STORE": str(tmp_path / "store"),
        "DAGSTER_HOME": str(tmp_path / "dagster_home"),
    }


@pytest.mark.slow
def test_each_hostile_behaviour_fails_only_its_case(homes):
    done = ragproof(
        "run",
        "--dataset",
        str(HOSTILE / "cases.jsonl"),
        "--config",
        str(HOSTILE / "ragproof.toml"),
        "--json",
        env=cli_env(**homes),
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)  # nothing the adapter printed is in it
    assert result["status"] == "completed"
    assert "hostile adapter says: exit now" in done.stderr
    store = Path(homes["RAGPROOF_STORE"])
    rows = query(
        store,
        "select case_id, status, reason from case_results "
        "where run_id = ? and metric = 'generation.citation_validity'",
        [result["run_id"]],
    )
    errors = {case: reason if status == "error" else None for case, status, reason in rows}
    assert errors == EXPECTED_ERRORS
    citation = result["metrics"]["generation.citation_validity"]
    assert (citation["scored"], citation["errored"], citation["mean"]) == (2, 7, 1.0)


@pytest.mark.slow
def test_sys_exit_in_the_constructor_is_bad_input_naming_the_adapter(homes, tmp_path):
    config = tmp_path / "ragproof.toml"
    config.write_text(f'[adapter]\ntarget = "{TARGET}"\noptions = {{ constructor = "exit" }}\n')
    before = {name: tree_bytes(Path(root)) for name, root in homes.items()}
    done = ragproof(
        "run",
        "--dataset",
        str(HOSTILE / "cases.jsonl"),
        "--config",
        str(config),
        env=cli_env(**homes),
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "",
        f"ragproof: building adapter '{TARGET}' failed: SystemExit: 0\n",
    )
    assert {name: tree_bytes(Path(root)) for name, root in homes.items()} == before
