"""Bad input through the real command line (CONTRACT section 14): exit 1, one line
`ragproof: ...` naming the file, line, key or argument, a store unchanged byte for
byte and a Dagster home listing the same runs and partitions (a run refused by its
dataset step is deleted again). Each case is a mistake a new user made."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragproof_cli import build_parser
from tests.assets.expected import RECORDED, RUN_ARGS
from tests.conftest import FIXTURES
from tests.support.cli import cli_env, ragproof
from tests.support.snapshot import dagster_home_as_seen, tree_bytes

ERRORS = FIXTURES / "errors"
DATASET = str(RECORDED / "cases.jsonl")
RECORDER = "ragproof_core.adapters.recorded:RecordedAdapter"
# Every command, in the order argparse lists them (command families join over time).
COMMANDS = list(
    next(a for a in build_parser()._subparsers._group_actions if a.dest == "command").choices
)
pytestmark = pytest.mark.xdist_group(__name__)  # one worker makes the shared run, once


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


def _seen(homes) -> dict[str, object]:
    return {
        "store": tree_bytes(Path(homes["RAGPROOF_STORE"])),
        "dagster_home": dagster_home_as_seen(Path(homes["DAGSTER_HOME"])),
    }


def _assert_rejected(homes, args, message: str, **env: str) -> None:
    before = _seen(homes)
    done = ragproof(*args, env=cli_env(**homes, **env))
    assert (done.returncode, done.stderr, done.stdout) == (1, f"ragproof: {message}\n", "")
    assert _seen(homes) == before


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
def test_a_step_process_refusing_the_input_still_gives_one_line(homes, tmp_path):
    # With two shards the dataset step runs in a process of its own, forked from the
    # command's forkserver, where Dagster announces each step on stderr before the run's
    # logger settings apply (ragproof_cli/step_stderr.py).
    dataset = tmp_path / "cases.jsonl"
    dataset.write_text(
        '{"id": "a", "question": "q?"}\n{"id": "b", "question": "q?"}\n'
        '{"id": "a", "question": "q?"}\n'
    )
    _assert_rejected(
        homes,
        ["run", "--dataset", str(dataset), "--shards", "2"],
        f"{dataset}:3: duplicate id 'a' (first used on line 1)",
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
        assert "ragproof_core.errors.ConfigError" in done.stderr
        assert lines[-1] == f"ragproof: {config}: run.k: expected an integer, got 2.5"


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def _parquet_with_metadata(path: Path, value, arrow_type) -> str:
    metadata = pa.array([{"x": value}], pa.struct([("x", arrow_type)]))
    pq.write_table(pa.table({"id": ["c1"], "question": ["q?"], "metadata": metadata}), path)
    return str(path)


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def _recording_config(tmp_path: Path, recording: str) -> str:
    return _config(
        tmp_path, f'[adapter]\ntarget = "{RECORDER}"\noptions = {{ path = "{recording}" }}\n'
    )


# name -> (tmp_path -> (arguments after "run", message)); docs/errors.md, "Limits".
LIMIT_CASES = {
    "surrogate_in_question": lambda tmp: (
        ["--dataset", d := _write(tmp / "d.jsonl", '{"id": "c1", "question": "why \\ud800?"}\n')],
        f"{d}:1: \\ud800: a lone surrogate is not valid text",
    ),
    "surrogate_in_id": lambda tmp: (
        ["--dataset", d := _write(tmp / "d.jsonl", '\n{"id": "c\\uDC00", "question": "q?"}\n')],
        f"{d}:2: \\uDC00: a lone surrogate is not valid text",
    ),
    "surrogate_in_recorded_answer": lambda tmp: (
        [
            "--dataset",
            DATASET,
            "--config",
            _recording_config(
                tmp, r := _write(tmp / "r.jsonl", '{"case_id": "c1", "answer": "\\ud800"}\n')
            ),
        ],
        f"building adapter '{RECORDER}' failed: {r}:1: \\ud800: a lone surrogate is not valid text",
    ),
    "parquet_timestamp": lambda tmp: (
        [
            "--dataset",
            d := _parquet_with_metadata(
                tmp / "d.parquet", datetime(2026, 1, 2), pa.timestamp("us")
            ),
        ],
        f"{d}:1: metadata.x: a timestamp is not a JSON value",
    ),
    "parquet_bytes": lambda tmp: (
        ["--dataset", d := _parquet_with_metadata(tmp / "d.parquet", b"\x00", pa.binary())],
        f"{d}:1: metadata.x: bytes is not a JSON value",
    ),
    "parquet_decimal": lambda tmp: (
        [
            "--dataset",
            d := _parquet_with_metadata(tmp / "d.parquet", Decimal("1.5"), pa.decimal128(5, 2)),
        ],
        f"{d}:1: metadata.x: a Decimal is not a JSON value",
    ),
    "concurrency_100000000": lambda tmp: (
        ["--dataset", DATASET, "--config", c := _config(tmp, "[run]\nconcurrency = 100000000\n")],
        f"{c}: run.concurrency: must be at most 1024, got 100000000",
    ),
    "integer_of_5000_digits": lambda tmp: (
        [
            "--dataset",
            d := _write(
                tmp / "d.jsonl",
                '{"id": "c1", "question": "q?", "metadata": {"n": ' + "7" * 5000 + "}}\n",
            ),
        ],
        f"{d}:1: an integer of more than 4300 digits",
    ),
    "metadata_nested_100000": lambda tmp: (
        [
            "--dataset",
            d := _write(
                tmp / "d.jsonl",
                '{"id": "c1", "question": "q?", "metadata": {"n": ' + _deep(100_000) + "}}\n",
            ),
        ],
        f"{d}:1: nested deeper than 64 levels",
    ),
    "recording_nested_2000": lambda tmp: (
        [
            "--dataset",
            DATASET,
            "--config",
            _recording_config(
                tmp,
                r := _write(tmp / "r.jsonl", '{"case_id": "c1", "answer": ' + _deep(2000) + "}\n"),
            ),
        ],
        f"building adapter '{RECORDER}' failed: {r}:1: nested deeper than 64 levels",
    ),
    "options_nested_100": lambda tmp: (
        [
            "--dataset",
            DATASET,
            "--config",
            c := _config(tmp, f"[adapter]\noptions = {{ a = {_deep(100)} }}\n"),
        ],
        f"{c}: adapter.options.a[0][0]: nested deeper than 64 levels (or contains itself)",
    ),
    "options_nested_2000": lambda tmp: (
        [
            "--dataset",
            DATASET,
            "--config",
            c := _config(tmp, f"[adapter]\noptions = {{ a = {_deep(2000)} }}\n"),
        ],
        f"{c}: not valid TOML (nested too deeply)",
    ),
    "shards_100000": lambda tmp: (
        ["--dataset", DATASET, "--config", c := _config(tmp, "[run]\nshards = 100000\n")],
        f"{c}: run.shards: must be at most 256, got 100000",
    ),
    "shards_past_the_cases": lambda tmp: (
        ["--dataset", DATASET, "--shards", "7"],
        f"run.shards: 7 shards for 6 case(s) in {DATASET}; use at most one shard per case"
        " (a conversation counts as one)",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(LIMIT_CASES))
def test_inputs_past_a_limit_are_refused_before_the_run(homes, tmp_path, case):
    args, message = LIMIT_CASES[case](tmp_path)
    _assert_rejected(homes, ["run", *args], message)


@pytest.mark.slow
def test_a_deepeval_import_nested_too_deep_writes_nothing(homes, tmp_path):
    source = _write(
        tmp_path / "goldens.json",
        '[\n{"input": "q?", "additional_metadata": {"a": ' + _deep(5000) + "}}\n]\n",
    )
    out = tmp_path / "cases.jsonl"
    _assert_rejected(
        homes,
        ["import", "deepeval", source, "--out", str(out)],
        f"{source}:2: nested deeper than 65 levels",
    )
    assert not out.exists()
