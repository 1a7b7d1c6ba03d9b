"""ragproof.toml and the judge's environment variables (CONTRACT section 3)."""

from pathlib import Path

import pytest

from ragproof_core.config.settings import (
    DEMO_ADAPTER,
    RUN_KEYS,
    Config,
    ConfigError,
    RunSettings,
    load_config,
    run_settings_dict,
    run_settings_from_dict,
)
from ragproof_core.judge.settings import JudgeEnv


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
        ("[run]\nkk = 3\n", "run.kk: unknown key (did you mean 'k'?)"),
        (
            '[run]\nsource_match = "page"\n',
            "run.source_match: expected 'chunk' or 'document', got \"page\"",
        ),
        ("[run]\nk = 0\n", "run.k: must be at least 1, got 0"),
        ("[run]\nk = 2.5\n", "run.k: expected an integer, got 2.5"),
        ("[run]\nk = true\n", "run.k: expected an integer, got true"),
        ('[run]\nk = "5"\n', 'run.k: expected an integer, got "5"'),
        ("[run]\nconcurrency = 2.5\n", "run.concurrency: expected an integer, got 2.5"),
        ("[run]\ntimeout_s = true\n", "run.timeout_s: expected a number, got true"),
        ("[run]\ntimeout_s = 0\n", "run.timeout_s: must be greater than 0, got 0"),
        ("[run]\ntimeout_s = nan\n", "run.timeout_s: expected a finite number, got NaN"),
        ('[run]\nmetrics = "retrieval.*"\n', 'run.metrics: expected a list, got "retrieval.*"'),
        ("[run]\nmetrics = [1]\n", "run.metrics[0]: expected a string, got 1"),
        ("[run]\nshards = 0\n", "run.shards: must be at least 1, got 0"),
        ('[adapter]\ntargt = "m:A"\n', "adapter.targt: unknown key (did you mean 'target'?)"),
        ('[adapter]\noptions = "x"\n', 'adapter.options: expected a table, got "x"'),
        ("[adapter]\ntarget = 3\n", "adapter.target: expected a string, got 3"),
        ("[rn]\nk = 3\n", "rn: unknown table (did you mean 'run'?)"),
        ("run = 3\n", "run: expected a table, got 3"),
        (
            '[judge]\nmode = "jury"\n',
            "judge.mode: expected 'per_metric' or 'combined', got \"jury\"",
        ),
        ("[judge]\nrpm = -1\n", "judge.rpm: must be greater than 0, got -1"),
        ("[judge]\nmodels = [true]\n", "judge.models[0]: expected a string, got true"),
        (
            "[run\n",
            "not valid TOML (Expected ']' at the end of a table declaration (at line 1, column 5))",
        ),
    ],
)
def test_bad_config_names_the_file_the_key_and_the_value(tmp_path: Path, text, message):
    path = tmp_path / "ragproof.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value) == f"{path}: {message}"


def test_unknown_metrics_name_the_key(tmp_path: Path):
    path = tmp_path / "ragproof.toml"
    path.write_text('[run]\nmetrics = ["retrieval.nope"]\n')
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value).startswith(f"{path}: run.metrics: metric 'retrieval.nope' matches no")


def test_settings_built_in_code_are_checked_by_the_same_schema():
    with pytest.raises(ConfigError, match=r"^run\.k: expected an integer, got true$"):
        RunSettings(k=True)
    with pytest.raises(ConfigError, match=r"^run\.concurrency: must be at least 1, got 0$"):
        Config().with_overrides(concurrency=0)
    assert RunSettings(timeout_s=2).timeout_s == 2.0


def test_run_keys_follow_the_declaration():
    assert RUN_KEYS == (
        "k",
        "source_match",
        "concurrency",
        "timeout_s",
        "metrics",
        "shards",
        "name",
        "tags",
        "repeats",
        "pass_k",
    )
    # Keys added later are stored only when set: a run without repeats stores (and
    # hashes) its settings as before they existed (CONTRACT section 27).
    assert list(run_settings_dict(RunSettings())) == list(RUN_KEYS[:-2])
    with_repeats = run_settings_dict(RunSettings(repeats=3, pass_k=2))
    assert (with_repeats["repeats"], with_repeats["pass_k"]) == (3, 2)
    assert run_settings_from_dict(with_repeats).trials_k == 2
    stored = run_settings_dict(RunSettings(k=3, metrics=("echo.*",)))
    assert stored["metrics"] == ["echo.exact_match"]
    assert run_settings_from_dict(stored) == RunSettings(k=3, metrics=("echo.exact_match",))


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
    with pytest.raises(ConfigError) as err:
        JudgeEnv.from_env({"RAGPROOF_MAX_COST_USD": "ten"})
    assert str(err.value) == 'RAGPROOF_MAX_COST_USD: expected a number, got "ten"'


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("RAGPROOF_JUDGE_MAX_ATTEMPTS", "2.5", "expected an integer"),
        ("RAGPROOF_JUDGE_MAX_ATTEMPTS", "0", "must be at least 1"),
        ("RAGPROOF_JUDGE_TIMEOUT_S", "-1", "must be greater than 0"),
        ("RAGPROOF_JUDGE_RPM", "0", "must be greater than 0"),
        ("RAGPROOF_MAX_COST_USD", "nan", "expected a finite number"),
        ("RAGPROOF_JUDGE_MODE", "jury", "expected 'per_metric' or 'combined'"),
    ],
)
def test_bad_environment_values_name_the_variable(variable, value, message):
    with pytest.raises(ConfigError) as err:
        JudgeEnv.from_env({variable: value})
    assert str(err.value) == f'{variable}: {message}, got "{value}"'
