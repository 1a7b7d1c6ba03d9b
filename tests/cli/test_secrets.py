"""Secrets in the config are never stored (issue 27 item 2; the rule: docs/errors.md).

A distinct token is planted in every kind of config place: header names
(``Ocp-Apim-Subscription-Key``, ``X-Auth-Token``, ``Authorization``), a URL's user
name and query string, a URL's password, options named ``openai_key``,
``bearer``, ``pwd``, a ``creds`` list, a ``Cookie`` deep in lists and tables,
and the judge key. A real ``ragproof run`` calls the local RAG service (which gets
the real values) and the local judge; then every file in the store (report
included), every file of the Dagster home (the event log's SQLite included) and the output of
``run``, ``show --json``, ``runs --json``, ``report`` and ``sql`` are searched for
each token: none is found. ``RAGPROOF_JUDGE_API_BASE=http://TOKEN@host`` (or with a
query string) is refused before anything is stored, naming the variable, never the
token: LiteLLM cannot send such a request (CONTRACT section 24).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import FIXTURES
from tests.support.cli import cli_env, ragproof
from tests.support.judge_server import JudgeServer
from tests.support.rag_service import RagService

TEMPLATE = FIXTURES / "secrets" / "ragproof.toml"
DATASET = FIXTURES / "recorded" / "cases.jsonl"


def _tokens() -> dict[str, str]:
    names = re.findall(r"\{(\w+)\}", TEMPLATE.read_text())
    tokens = {name: f"planted-{name.replace('_', '-')}-9c41e7" for name in names if name != "port"}
    tokens["judge_user"] = "planted-judge-user-9c41e7"
    tokens["judge_query"] = "planted-judge-query-9c41e7"
    tokens["judge_key"] = "planted-judge-key-9c41e7"
    return tokens


def _files(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_no_planted_secret_reaches_the_store_the_dagster_home_or_the_output(tmp_path):
    tokens = _tokens()
    store, home = tmp_path / "store", tmp_path / "dagster_home"
    with RagService() as service, JudgeServer() as judge:
        config = tmp_path / "ragproof.toml"
        port = service.base.rsplit(":", 1)[1]
        values = {**tokens, "port": port}
        config.write_text(re.sub(r"\{(\w+)\}", lambda m: values[m[1]], TEMPLATE.read_text()))
        env = cli_env(
            RAGPROOF_STORE=str(store),
            DAGSTER_HOME=str(home),
            RAGPROOF_JUDGE_MODEL="openai/judge-test",
            RAGPROOF_JUDGE_API_BASE=judge.url,
            OPENAI_API_KEY=tokens["judge_key"],
        )
        run_args = ("run", "--dataset", str(DATASET), "--config", str(config), "--json")
        # Credentials in the judge's URL: LiteLLM's HTTP client will not send a user
        # name beside the key, and the OpenAI client puts the path after a query
        # string; refused before anything exists (exit 1), the token never shown.
        refused = [
            ragproof(*run_args, env={**env, "RAGPROOF_JUDGE_API_BASE": base})
            for base in (
                judge.url.replace("://", f"://{tokens['judge_user']}@"),
                f"{judge.url}?key={tokens['judge_query']}",
            )
        ]
        assert [(r.returncode, r.stdout, r.stderr.count("\n")) for r in refused] == [(1, "", 1)] * 2
        assert refused[0].stderr.startswith("ragproof: RAGPROOF_JUDGE_API_BASE: credentials in")
        assert refused[1].stderr.startswith("ragproof: RAGPROOF_JUDGE_API_BASE: a query string")
        assert not store.exists() and judge.requests == []
        run = ragproof(*run_args, env=env)
        assert run.returncode == 0, run.stderr
        shown = json.loads(run.stdout)
        assert shown["status"] == "completed"
        assert shown["judge"]["requests"] > 0
        run_id = shown["run_id"]
        # The service got the real values: only what is stored is redacted.
        sent = service.requests[0]
        assert sent.headers["Ocp-Apim-Subscription-Key"] == tokens["ocp_apim"]
        assert sent.path == f"/answer?api_key={tokens['url_query']}&v=2"

    outputs = [*refused, run]
    for args in (
        ("show", run_id, "--json"),
        ("runs", "--json"),
        ("report", run_id),
        ("sql", "SELECT config_json, adapter, dataset FROM runs", "--json"),
    ):
        done = ragproof(*args, env=env)
        assert done.returncode == 0, done.stderr
        outputs.append(done)

    written = {**_files(store), **_files(home)}
    assert any(name.endswith("report.html") for name in written)
    assert any(name.endswith((".db", ".sqlite")) for name in written if str(home) in name)
    text = [o.stdout + o.stderr for o in outputs]
    for name, token in tokens.items():
        assert not [path for path, data in written.items() if token.encode() in data], name
        assert not [out for out in text if token in out], name

    # What is stored is the config with the secrets masked, and a hash of the real one.
    manifest = json.loads((store / "runs" / run_id / "manifest.json").read_text())
    options = manifest["adapter"]["options"]
    assert options["url"] == f"http://***@127.0.0.1:{port}/answer?api_key=***&v=***"
    assert options["headers"] == {
        "Ocp-Apim-Subscription-Key": "***",
        "X-Auth-Token": "***",
        "Authorization": "***",
    }
    assert [options[k] for k in ("openai_key", "bearer", "pwd", "creds")] == ["***"] * 4
    assert options["nested"] == {"deeper": [{"Cookie": "***"}, "https://svc:***@example.test/x"]}
    config_json = json.loads(json.loads(outputs[-1].stdout)[0]["config_json"])
    assert re.fullmatch(r"[0-9a-f]{64}", config_json["config_sha256"])
    assert config_json["config_sha256"] == manifest["config_sha256"]
