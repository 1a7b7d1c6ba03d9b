"""``${NAME}`` in a config string and a run's secret values (config/expansion.py,
CONTRACT section 28)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragproof_core.config import ConfigError, load_config, run_secrets
from ragproof_core.config.expansion import expand_text, expanded
from ragproof_core.config.identity import config_digest

CONFIG = """[adapter]
target = "ragproof_core.adapters.http:HttpAdapter"

[adapter.options]
url = "https://svc.example/answer?v=2"
headers = { Authorization = "Bearer ${SERVICE_TOKEN}", X-Note = "cost $${5} a call" }
extra = [{ region = "${REGION}" }]

[judge]
models = ["${JUDGE}"]
"""
ENV = {"SERVICE_TOKEN": "tok-0123456789", "REGION": "eu-west-1", "JUDGE": "openai/gpt-x"}


def _config(tmp_path: Path, text: str = CONFIG):
    path = tmp_path / "ragproof.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path)


def test_names_are_expanded_when_the_run_starts_and_stored_as_written(tmp_path) -> None:
    config = _config(tmp_path)
    # As written: what the run stores and shows, and what its digest is taken over.
    assert config.adapter.options["headers"]["Authorization"] == "Bearer ${SERVICE_TOKEN}"
    done = expanded(config, ENV)
    options = done.config.adapter.options
    assert options["headers"] == {
        "Authorization": "Bearer tok-0123456789",
        "X-Note": "cost ${5} a call",  # $${ writes a literal ${
    }
    assert options["extra"] == [{"region": "eu-west-1"}]
    assert done.config.judge.models == ("openai/gpt-x",)
    assert sorted(done.values) == sorted(ENV.values())
    # A rotated token: the same config, the same digest.
    digest = config_digest({}, config.adapter.target, config.adapter.options)
    rotated = _config(tmp_path)
    assert config_digest({}, rotated.adapter.target, rotated.adapter.options) == digest


def test_an_unset_variable_is_one_line_naming_the_key_and_the_variable(tmp_path) -> None:
    config = _config(tmp_path)
    with pytest.raises(ConfigError) as raised:
        expanded(config, {"REGION": "x", "JUDGE": "y"})
    assert str(raised.value) == (
        f"{tmp_path / 'ragproof.toml'}: adapter.options.headers.Authorization: "
        "environment variable SERVICE_TOKEN is not set"
    )
    with pytest.raises(ConfigError, match=r"adapter\.options\.extra\[0\]\.region: .* REGION "):
        expanded(config, {"SERVICE_TOKEN": "x", "JUDGE": "y"})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", "plain"),
        ("${A}${A}", "aaaaaa" * 2),
        ("$${A}", "${A}"),
        ("$$${A}", "$${A}"),  # "$${" first, as a left-to-right reading takes it
        ("${ A }", "${ A }"),  # not a name: kept as written
        ("${1A}", "${1A}"),
        ("$${", "${"),
    ],
)
def test_expand_text(text: str, expected: str) -> None:
    assert expand_text(text, {"A": "aaaaaa"}, "k")[0] == expected


def test_the_runs_secret_values(tmp_path) -> None:
    config = _config(
        tmp_path,
        """[adapter]
target = "ragproof_core.adapters.http:HttpAdapter"

[adapter.options]
url = "https://user:pass-word-1@svc.example/a?api_key=query-value-1&v=2"
bearer = "literal-bearer-1"
headers = { Authorization = "${SERVICE_TOKEN}", Accept = "application/json" }
note = "${NOTE}"
""",
    )
    environ = {
        "SERVICE_TOKEN": "expanded-token-1",
        "NOTE": "expanded-note-1",
        "OPENAI_API_KEY": "env-key-value-1",
        "HOME": "/root/not-a-secret",
    }
    found = set(run_secrets(config, environ))
    assert {
        "expanded-token-1",  # expanded from ${NAME}
        "expanded-note-1",  # under a key that is not secret-named: expanded, so a secret
        "env-key-value-1",  # a secret-named environment variable
        "literal-bearer-1",  # under a secret-named key
        "pass-word-1",  # a URL password
        "query-value-1",  # a URL query value
    } <= found
    assert "/root/not-a-secret" not in found and "application/json" not in found


EVERY_TABLE = """[run]
name = "nightly ${BUILD}"
tags = { commit = "${COMMIT}", branch = "main" }
source_match = "document"

[adapter]
target = "${ADAPTER_MODULE}:DemoRAG"
options = { note = "${NOTE}" }

[judge]
models = ["${JUDGE}"]

[[metric]]
name = "custom.tone"
rubric = "Polite, and never names ${PRODUCT}."
bands = ["no", "${MIDDLE}", "yes"]
material = ["answer"]

[traces]
seed = "${SEED}"
"""
EVERY_ENV = {
    "BUILD": "build-1234",
    "COMMIT": "0123abcd",
    "ADAPTER_MODULE": "ragproof_core.adapters.demo",
    "NOTE": "note-value",
    "JUDGE": "openai/gpt-x",
    "PRODUCT": "Widget Pro",
    "MIDDLE": "partly",
    "SEED": "seed-42",
}


def test_every_string_value_of_every_table_is_expanded(tmp_path) -> None:
    config = _config(tmp_path, EVERY_TABLE)
    assert (config.run.name, config.run.tags["commit"]) == ("nightly ${BUILD}", "${COMMIT}")
    done = expanded(config, EVERY_ENV)
    used = done.config
    assert used.run.name == "nightly build-1234"
    assert used.run.tags == {"commit": "0123abcd", "branch": "main"}
    assert used.run.source_match == "document"
    assert used.adapter.target == "ragproof_core.adapters.demo:DemoRAG"
    assert used.adapter.options == {"note": "note-value"}
    assert used.judge.models == ("openai/gpt-x",)
    assert used.metrics[0].rubric == "Polite, and never names Widget Pro."
    assert used.metrics[0].bands == ("no", "partly", "yes")
    assert used.traces.seed == "seed-42"
    assert sorted(done.values) == sorted(EVERY_ENV.values())
    # Each expanded value is a run secret, wherever it was written.
    assert set(EVERY_ENV.values()) <= set(run_secrets(config, EVERY_ENV))


@pytest.mark.parametrize(
    ("unset", "key"),
    [
        ("BUILD", "run.name"),
        ("COMMIT", "run.tags.commit"),
        ("ADAPTER_MODULE", "adapter.target"),
        ("JUDGE", "judge.models[0]"),
        ("PRODUCT", "metric[1].rubric"),
        ("MIDDLE", "metric[1].bands[1]"),
        ("SEED", "traces.seed"),
    ],
)
def test_an_unset_variable_anywhere_names_its_key(tmp_path, unset: str, key: str) -> None:
    config = _config(tmp_path, EVERY_TABLE)
    environ = {name: value for name, value in EVERY_ENV.items() if name != unset}
    with pytest.raises(ConfigError) as raised:
        expanded(config, environ)
    assert str(raised.value) == (
        f"{tmp_path / 'ragproof.toml'}: {key}: environment variable {unset} is not set"
    )


def test_a_value_refused_once_expanded_names_its_key_and_shows_no_value(tmp_path) -> None:
    config = _config(tmp_path, '[run]\ntags = { commit = "${COMMIT}" }\n')
    with pytest.raises(ConfigError) as raised:
        expanded(config, {"COMMIT": "line-one\nline-two"})
    assert str(raised.value) == (
        f"{tmp_path / 'ragproof.toml'}: run.tags.commit: no control characters "
        "(a line break, a tab)"
    )


def test_a_doubled_dollar_alone_is_written_as_one(tmp_path) -> None:
    config = _config(tmp_path, '[adapter.options]\nnote = "cost $${5}"\n')
    assert expanded(config, {}).config.adapter.options == {"note": "cost ${5}"}
    assert expanded(_config(tmp_path, "[run]\nk = 3\n"), {}).config.run.k == 3
