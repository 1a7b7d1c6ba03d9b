"""ragproof.toml and the judge's environment variables (CONTRACT section 3)."""

from pathlib import Path

import pytest

from ragproof_core.settings import (
    DEMO_ADAPTER,
    Config,
    ConfigError,
    JudgeEnv,
    RunSettings,
    load_config,
)


def test_every_key_has_a_default():
    config = load_config(None)
    assert config == Config(RunSettings(5, "chunk", 16, 60.0))
    assert config.adapter.target == DEMO_ADAPTER and config.adapter.options == {}


def test_relative_adapter_paths_resolve_against_the_config_file(tmp_path: Path):
    (tmp_path / "ragproof.toml").write_text(
        '[run]\nk = 3\n[adapter]\ntarget = "m:A"\noptions = { path = "out.jsonl", n = 2 }\n'
    )
    config = load_config(tmp_path / "ragproof.toml")
    assert config.run.k == 3
    assert config.adapter.options == {"path": str(tmp_path / "out.jsonl"), "n": 2}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[run]\nkk = 3\n", "unknown key(s) in [run]: kk"),
        ('[run]\nsource_match = "page"\n', "run.source_match must be one of chunk, document"),
        ("[run]\nk = 0\n", "run.k must be at least 1"),
        ("[run\n", "ragproof.toml: "),
    ],
)
def test_bad_config_names_the_file_and_the_key(tmp_path: Path, text, message):
    path = tmp_path / "ragproof.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value)


def test_overrides_replace_only_what_is_given():
    config = Config().with_overrides(k=10, source_match="document")
    assert (config.run.k, config.run.source_match, config.run.concurrency) == (10, "document", 16)


def test_judge_env_reads_the_variables_and_their_defaults():
    env = JudgeEnv.from_env(
        {
            "RAGPROOF_JUDGE_MODEL": " openai/gpt-4o-mini ",
            "RAGPROOF_JUDGE_INPUT_COST_PER_MTOK": "0.15",
            "RAGPROOF_MAX_COST_USD": "2",
            "RAGPROOF_JUDGE_BACKOFF_S": "0",
        }
    )
    assert env == JudgeEnv(
        model="openai/gpt-4o-mini",
        input_cost_per_mtok=0.15,
        max_cost_usd=2.0,
        timeout_s=60.0,
        max_attempts=4,
        backoff_s=0.0,
    )
    assert JudgeEnv.from_env({}).model is None


def test_a_non_numeric_price_is_a_config_error():
    with pytest.raises(ConfigError, match="RAGPROOF_MAX_COST_USD must be a number"):
        JudgeEnv.from_env({"RAGPROOF_MAX_COST_USD": "ten"})
