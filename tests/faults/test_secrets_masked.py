"""Secrets masked wherever they travel (issue 48, CONTRACT section 28), as a user and an
attacker would meet them: each test plants distinct tokens, runs the real commands, then
reads every file under the store and the Dagster home (Parquet decoded, SQLite dumped:
the event log, the judge cache), the report, stdout and stderr, for each token and for
any 12-character slice of it (no partial leak after a message is cut).

- an HTTP service echoing its `Authorization` header in a 401 body, an answer's text, a
  chunk's text and a tool call's arguments, and its URL's query string in a 500 body:
  once with the token written in the config, twice with it from `${SERVICE_TOKEN}`
  (rotated: the same config digest);
- a judge echoing its key in an error and inside a reply that validates;
- an OTLP trace whose attributes hold an environment secret, through `import otlp`;
- `${NAME}` unset (exit 1, one line, nothing stored) and `$${` kept literally.
The masker's linear time is tests/core/test_masking.py's.
"""

from __future__ import annotations

import json
import secrets as token_source
import sqlite3
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.faults.conftest import write_jsonl
from tests.support.cli import cli_env, ragproof
from tests.support.judge_server import JudgeServer, Reply, default_content
from tests.support.otlp import attribute, document, root_span, trace_id
from tests.support.rag_service import RagService

pytestmark = pytest.mark.slow

ECHOES = ["echo-401", "echo-answer", "echo-chunk", "echo-tool", "echo-500-query"]
HTTP = "ragproof_core.adapters.http:HttpAdapter"


def planted(label: str) -> str:
    """A distinct 40-character token: no 12-character slice of it occurs by chance."""
    return f"{label}-{token_source.token_hex(20)}"[:40]


def _readable(path: Path) -> bytes:
    """What a file holds as text: a Parquet file's rows, a SQLite file's every row."""
    data = path.read_bytes()
    if data[:4] == b"PAR1":
        return json.dumps(pq.read_table(path).to_pylist(), default=str).encode()
    if data[:16] == b"SQLite format 3\x00":
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            names = [n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            rows = [row for name in names for row in con.execute(f'SELECT * FROM "{name}"')]
        finally:
            con.close()
        return data + json.dumps(rows, default=repr).encode()
    return data


def everything(*roots: Path) -> dict[str, bytes]:
    return {str(p): _readable(p) for root in roots for p in root.rglob("*") if p.is_file()}


def leaks(token: str, places: dict[str, bytes]) -> list[str]:
    """The places holding ``token`` or any 12-character slice of it."""
    slices = {token[i : i + 12].encode() for i in range(len(token) - 11)}
    return [name for name, data in places.items() if any(s in data for s in slices)]


def _outputs(*done) -> dict[str, bytes]:
    return {f"output {i}": (d.stdout + d.stderr).encode() for i, d in enumerate(done)}


def _ok(done):
    assert done.returncode == 0, done.stderr
    return done


def test_an_http_service_echoing_its_token_leaks_nothing(tmp_path) -> None:
    literal, rotated_a, rotated_b, query = (planted(x) for x in ("lit", "rota", "rotb", "qry"))
    store, home = tmp_path / "store", tmp_path / "home"
    dataset = write_jsonl(tmp_path / "cases.jsonl", [{"id": q, "question": q} for q in ECHOES])
    env = cli_env(RAGPROOF_STORE=str(store), DAGSTER_HOME=str(home))
    outputs = []
    with RagService() as service:
        options = f'url = "{service.base}/answer?api_key={query}"\n'
        written = tmp_path / "written.toml"
        written.write_text(
            f'[adapter]\ntarget = "{HTTP}"\n\n[adapter.options]\n{options}'
            f'headers = {{ Authorization = "Bearer {literal}" }}\n'
        )
        named = tmp_path / "named.toml"
        named.write_text(
            f'[adapter]\ntarget = "{HTTP}"\n\n[adapter.options]\n{options}'
            'headers = { Authorization = "Bearer ${SERVICE_TOKEN}" }\n'
        )
        runs = []
        for config, token in ((written, None), (named, rotated_a), (named, rotated_b)):
            run_env = env if token is None else {**env, "SERVICE_TOKEN": token}
            done = _ok(
                ragproof(
                    "run", "--dataset", str(dataset), "--config", str(config), "--json",
                    env=run_env,
                )
            )  # fmt: skip
            outputs.append(done)
            runs.append(json.loads(done.stdout))
        # The service got the real values every time.
        sent = {r.headers["Authorization"] for r in service.requests}
        assert sent == {f"Bearer {t}" for t in (literal, rotated_a, rotated_b)}
    # Every echo came back and was masked: five strings a run (the 401's reason, the
    # answer, the chunk, the tool call, the 500's reason).
    assert [run["secrets_masked"] for run in runs] == [5, 5, 5]
    shown = _ok(ragproof("show", runs[0]["run_id"], env=env))
    assert "\nsecrets: 5 strings masked\n" in shown.stdout
    outputs.append(shown)
    outputs.append(_ok(ragproof("show", runs[1]["run_id"], "--case", "echo-401", env=env)))
    outputs.append(_ok(ragproof("report", runs[2]["run_id"], env=env)))
    listed = _ok(ragproof("runs", "--json", env=env))
    outputs.append(listed)
    stored = _ok(
        ragproof(
            "sql",
            "SELECT case_id, answer, error, steps_json FROM outputs ORDER BY run_id, case_id",
            "--json",
            env=env,
        )
    )
    outputs.append(stored)
    rows = json.loads(stored.stdout)
    assert {r["error"] for r in rows if r["case_id"] == "echo-401"} == {
        "HttpAdapterError: HTTP 401 from "
        f"{service.base}/answer: invalid credentials: *** (rejected by the gateway) "
        "(in answer())"
    }
    assert {r["answer"] for r in rows if r["case_id"] == "echo-answer"} == {"you sent ***"}
    assert all("api_key=***" in r["error"] for r in rows if r["case_id"] == "echo-500-query")
    places = {**everything(store, home), **_outputs(*outputs)}
    assert any(name.endswith("report.html") for name in places)
    for token in (literal, rotated_a, rotated_b, query):
        assert leaks(token, places) == [], token
    # A rotated token keeps the config's identity.
    digests = {r["run_id"]: r["config_digest"] for r in json.loads(listed.stdout)}
    assert digests[runs[1]["run_id"]] == digests[runs[2]["run_id"]]


def test_an_unset_name_is_one_line_and_a_doubled_dollar_is_literal(tmp_path) -> None:
    store, home = tmp_path / "store", tmp_path / "home"
    # A tag from the environment is expanded as the run starts (checked set) and, like
    # the whole config, stored and shown as written: its value is a secret.
    commit = planted("commit")
    env = cli_env(RAGPROOF_STORE=str(store), DAGSTER_HOME=str(home), COMMIT=commit)
    dataset = write_jsonl(tmp_path / "cases.jsonl", [{"id": "a", "question": "echo-answer"}])
    with RagService() as service:
        config = tmp_path / "ragproof.toml"
        config.write_text(
            '[run]\ntags = { commit = "${COMMIT}" }\n\n'
            f'[adapter]\ntarget = "{HTTP}"\n\n[adapter.options]\nurl = "{service.base}/answer"\n'
            'headers = { Authorization = "Bearer ${SERVICE_TOKEN}", X-Cost = "$${5}" }\n'
        )
        unset = ragproof("run", "--dataset", str(dataset), "--config", str(config), env=env)
        assert unset.returncode == 1
        assert unset.stderr == (
            f"ragproof: {config}: adapter.options.headers.Authorization: "
            "environment variable SERVICE_TOKEN is not set\n"
        )
        assert not (store / "runs").exists() or not any((store / "runs").iterdir())
        assert service.requests == []
        token = planted("set")
        done = _ok(
            ragproof(
                "run", "--dataset", str(dataset), "--config", str(config),
                env={**env, "SERVICE_TOKEN": token},
            )
        )  # fmt: skip
        assert service.requests[0].headers["X-Cost"] == "${5}"
        assert service.requests[0].headers["Authorization"] == f"Bearer {token}"
    manifest = next((store / "runs").glob("*/manifest.json"))
    # Stored as written: the header under a secret-named key masked, the other as written.
    assert json.loads(manifest.read_text())["adapter"]["options"]["headers"] == {
        "Authorization": "***",
        "X-Cost": "$${5}",
    }
    listed = _ok(ragproof("runs", "--json", env=env))
    assert json.loads(listed.stdout)[0]["tags"] == {"commit": "${COMMIT}"}
    assert leaks(commit, {**everything(store, home), **_outputs(unset, done, listed)}) == []


def test_a_judge_echoing_its_key_leaks_nothing(tmp_path) -> None:
    key = planted("sk-judge")
    store, home = tmp_path / "store", tmp_path / "home"

    def responder(request) -> str:
        # A reply that validates, quoting the key in a claim's text.
        if request.prompt == "groundedness":
            claims = [{"claim": f"the key is {key}", "supported": True}]
            return json.dumps({"claims": claims})
        return default_content(request)

    dataset = write_jsonl(
        tmp_path / "cases.jsonl",
        [{"id": f"c{i}", "question": f"What is question {i}?"} for i in range(3)],
    )
    config = tmp_path / "ragproof.toml"
    config.write_text('[adapter]\ntarget = "tests.support.fault_adapters:CitingAdapter"\n')
    with JudgeServer(responder=responder) as judge:
        # The first request fails with the key in the provider's error message.
        judge.script(Reply(status=400, content=f"invalid api key {key} for this model"))
        env = cli_env(
            RAGPROOF_STORE=str(store),
            DAGSTER_HOME=str(home),
            RAGPROOF_JUDGE_MODEL="openai/judge-test",
            RAGPROOF_JUDGE_API_BASE=judge.url,
            OPENAI_API_KEY=key,
            RAGPROOF_JUDGE_MAX_ATTEMPTS="1",
        )
        done = _ok(
            ragproof(
                "run", "--dataset", str(dataset), "--config", str(config),
                "--metrics", "generation.groundedness", "--json", env=env,
            )
        )  # fmt: skip
        assert judge.request_count == 3
    reply = json.loads(done.stdout)
    assert reply["judge"]["judge_errors"] == 1
    assert reply["secrets_masked"] == 3  # the error, and the two replies quoting the key
    results = _ok(
        ragproof(
            "sql",
            "SELECT status, reason, judge_raw_json FROM case_results ORDER BY case_id",
            "--json",
            env=env,
        )
    )
    # Which case's question the judge is sent first depends on the run's concurrency.
    rows = sorted(json.loads(results.stdout), key=lambda r: r["status"] != "judge_error")
    assert [r["status"] for r in rows] == ["judge_error", "scored", "scored"]
    assert "invalid api key *** for this model" in rows[0]["reason"]
    assert all("the key is ***" in r["judge_raw_json"] for r in rows[1:])
    cache = store / "judge_cache.sqlite"
    assert cache.exists()
    places = {**everything(store, home), **_outputs(done, results)}
    assert leaks(key, places) == []


def test_an_imported_trace_holding_an_environment_secret_leaks_nothing(tmp_path) -> None:
    token = planted("otlp")
    span = root_span(trace_id(1), f"what does {token} open?", f"it opens {token}")
    span["attributes"].append(attribute("tool.parameters", {"stringValue": f'{{"t": "{token}"}}'}))
    traces = tmp_path / "traces.jsonl"
    traces.write_text(json.dumps(document([span])) + "\n")
    cases, outputs = tmp_path / "cases.jsonl", tmp_path / "outputs.jsonl"
    done = _ok(
        ragproof(
            "import", "otlp", str(traces), "--out", str(cases), "--recorded-out", str(outputs),
            env=cli_env(MY_SERVICE_TOKEN=token),
        )
    )  # fmt: skip
    assert done.stdout.splitlines()[-1] == "note: secrets: 2 strings masked"
    assert json.loads(cases.read_text())["question"] == "what does *** open?"
    places = {str(p): p.read_bytes() for p in (cases, outputs)} | _outputs(done)
    assert leaks(token, places) == []
