"""Bad input through the real command line (CONTRACT section 14): exit 1, one line
`ragproof: ...` naming the file, line, key or argument, and a store (and Dagster
home) unchanged byte for byte. Each case is a mistake a new user made."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragproof_cli import build_parser
from tests.assets.expected import RECORDED, RUN_ARGS
from tests.conftest import FIXTURES
from tests.support.cli import cli_env, ragproof
from tests.support.snapshot import tree_bytes

ERRORS = FIXTURES / "errors"
DATASET = str(RECORDED / "cases.jsonl")
RECORDER = "ragproof_core.adapters.recorded:RecordedAdapter"
# Every command, in the order argparse lists them (command families join over time).
COMMANDS = list(
    next(a for a in build_parser()._subparsers._group_actions if a.dest == "command").choices
)


@pytest.fixture(scope="module")
def homes(tmp_path_factory) -> dict[str, str]:
    """A store and Dagster home holding one completed run, shared by the cases below."""
    store = tmp_path_factory.mktemp("store")
    dagster_home = tmp_path_factory.mktemp("dagster_home")
    env = {"RAGPROOF_STORE": str(store), "DAGSTER_HOME": str(dagster_home)}
    done = ragproof(*RUN_ARGS, env=cli_env(**env))
    assert done.returncode == 0, done.stderr
    return env


def _config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "ragproof.toml"
    path.write_text(text)
    return str(path)


def _assert_rejected(homes, args, message: str, **env: str) -> None:
    before = {name: tree_bytes(Path(root)) for name, root in homes.items()}
    done = ragproof(*args, env=cli_env(**homes, **env))
    assert (done.returncode, done.stderr, done.stdout) == (1, f"ragproof: {message}\n", "")
    assert {name: tree_bytes(Path(root)) for name, root in homes.items()} == before


# (ragproof.toml text, message after "PATH: ")
CONFIG_CASES = {
    "k_float": ("[run]\nk = 2.5\n", "run.k: expected an integer, got 2.5"),
    "k_bool": ("[run]\nk = true\n", "run.k: expected an integer, got true"),
    "k_string": ('[run]\nk = "5"\n', 'run.k: expected an integer, got "5"'),
    "concurrency_float": (
        "[run]\nconcurrency = 2.5\n",
        "run.concurrency: expected an integer, got 2.5",
    ),
    "adapter_key_typo": (
        '[adapter]\ntargt = "mypipeline:RAG"\n',
        "adapter.targt: unknown key (did you mean 'target'?)",
    ),
    "table_typo": ("[rn]\nk = 3\n", "rn: unknown table (did you mean 'run'?)"),
    "options_not_a_table": (
        '[adapter]\noptions = "x"\n',
        'adapter.options: expected a table, got "x"',
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CONFIG_CASES))
def test_bad_config_values_and_keys(homes, tmp_path, case):
    text, message = CONFIG_CASES[case]
    config = _config(tmp_path, text)
    _assert_rejected(
        homes, ["run", "--dataset", DATASET, "--config", config], f"{config}: {message}"
    )


@pytest.mark.slow
def test_misspelt_dataset_field(homes):
    dataset = ERRORS / "misspelt_field.jsonl"
    _assert_rejected(
        homes,
        ["run", "--dataset", str(dataset)],
        f"{dataset}:2: expected_sources_ids: unknown field (did you mean 'expected_source_ids'?)",
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--dataset", DATASET, "--k", "x"], "run: argument --k: invalid int value: 'x'"),
        (["run"], "run: the following arguments are required: --dataset"),
        (["compare", "only-one"], "compare: the following arguments are required: run_b"),
        (
            ["frobnicate"],
            "argument command: invalid choice: 'frobnicate' (choose from "
            f"{', '.join(repr(c) for c in COMMANDS)})",
        ),
        (
            ["show", "../x"],
            "invalid run id '../x': use 1-128 characters from A-Z a-z 0-9 _ . -, "
            "starting with a letter or digit",
        ),
    ],
    ids=["k_not_int", "no_dataset", "compare_one_run", "unknown_command", "show_path"],
)
def test_usage_errors_exit_1_not_2(homes, args, message):
    _assert_rejected(homes, args, message)


@pytest.mark.slow
def test_nonexistent_adapter_target(homes):
    _assert_rejected(
        homes,
        ["run", "--dataset", DATASET, "--adapter", "mypipeline.rag:Pipeline"],
        "adapter target 'mypipeline.rag:Pipeline': no module named 'mypipeline'",
    )


@pytest.mark.slow
def test_missing_recording_file(homes, tmp_path):
    config = _config(
        tmp_path, f'[adapter]\ntarget = "{RECORDER}"\noptions = {{ path = "absent.jsonl" }}\n'
    )
    _assert_rejected(
        homes,
        ["run", "--dataset", DATASET, "--config", config],
        f"building adapter '{RECORDER}' failed: {tmp_path / 'absent.jsonl'}:0: no such file",
    )


@pytest.mark.slow
def test_recording_with_a_bad_line(homes, tmp_path):
    recording = ERRORS / "bad_recording.jsonl"
    config = _config(
        tmp_path, f'[adapter]\ntarget = "{RECORDER}"\noptions = {{ path = "{recording}" }}\n'
    )
    _assert_rejected(
        homes,
        ["run", "--dataset", DATASET, "--config", config],
        f"building adapter '{RECORDER}' failed: {recording}:2: not valid JSON "
        "(Expecting ',' delimiter at column 42)",
    )


@pytest.mark.slow
def test_bad_budget_variable(homes):
    _assert_rejected(
        homes,
        ["run", "--dataset", DATASET],
        'RAGPROOF_MAX_COST_USD: expected a number, got "abc"',
        RAGPROOF_MAX_COST_USD="abc",
    )


@pytest.mark.slow
def test_debug_adds_the_traceback_before_the_line(homes, tmp_path):
    config = _config(tmp_path, "[run]\nk = 2.5\n")
    for args, env in (
        (["--debug", "run", "--dataset", DATASET, "--config", config], {}),
        (["run", "--dataset", DATASET, "--config", config], {"RAGPROOF_DEBUG": "1"}),
    ):
        done = ragproof(*args, env=cli_env(**homes, **env))
        assert done.returncode == 1
        lines = done.stderr.splitlines()
        assert lines[0] == "Traceback (most recent call last):"
        assert "ragproof_core.config.settings.ConfigError" in done.stderr
        assert lines[-1] == f"ragproof: {config}: run.k: expected an integer, got 2.5"
