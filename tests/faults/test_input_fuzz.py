"""Generated bad input (CONTRACT section 14): ragproof.toml files, dataset lines,
recorded-output lines, environment values and command lines never produce a
traceback; what is accepted is well typed, so a run never ends "completed" with
every case an internal scoring error; and through the real command line, bad
input exits 1 with one line and leaves the store unchanged byte for byte.

The parsing and validation functions are fuzzed broadly in-process; the real
command is run for a handful of examples only (each costs a Python start-up).
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ragproof_cli import build_parser
from ragproof_cli.common import UsageError
from ragproof_core.adapters.loading import AdapterLoadError
from ragproof_core.adapters.recorded import RecordedAdapter
from ragproof_core.config.settings import RUN_KEYS, ConfigError, RunSettings, load_config
from ragproof_core.data.dataset import DatasetError, load_dataset
from ragproof_core.judge.settings import JUDGE_ENV_VARS, JudgeEnv
from ragproof_core.model import Case, CaseKind, Status
from ragproof_core.run.evaluate import evaluate
from tests.assets.expected import RECORDED
from tests.support.cli import cli_env, ragproof
from tests.support.snapshot import tree_bytes

FAST = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
# A few real `ragproof` processes: each is a Python start-up plus Dagster's import.
SUBPROCESS = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
scalars = (
    st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.booleans()
    | text
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)

TABLE_KEYS = {
    "run": list(RUN_KEYS),
    "adapter": ["target", "options"],
    "judge": ["mode", "models", "rpm"],
}
# Known names, their near misses and anything at all.
table_names = st.sampled_from([*TABLE_KEYS, "rn", "runs", "adaptor", "judges"]) | text
key_names = st.sampled_from(
    [key for keys in TABLE_KEYS.values() for key in keys]
    + ["kk", "targt", "concurency", "source-match", "metric"]
)


def _toml_key(key: str) -> str:
    return json.dumps(key, ensure_ascii=False)


def _toml_value(value) -> str:
    """TOML for a JSON-like value (inline tables and arrays)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"


@st.composite
def toml_files(draw) -> str:
    tables = draw(
        st.dictionaries(
            table_names,
            st.dictionaries(key_names | text, values, max_size=4),
            max_size=3,
        )
    )
    out = []
    for name, table in tables.items():
        out.append(f"[{_toml_key(name)}]")
        out.extend(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in table.items())
    return "\n".join(out) + "\n"


def _one_line_naming(message: str, prefix: str) -> None:
    assert "\n" not in message and "Traceback" not in message
    assert message.startswith(prefix) and len(message) > len(prefix)


@FAST
@given(content=toml_files() | text)
def test_any_config_file_loads_well_typed_or_fails_in_one_line(tmp_path, content):
    path = tmp_path / "ragproof.toml"
    path.write_text(content, encoding="utf-8")
    try:
        config = load_config(path)
    except ConfigError as exc:
        _one_line_naming(str(exc), f"{path}: ")
        return
    run = config.run
    # Exactly these types (a bool is an int to isinstance): what scoring relies on.
    assert type(run.k) is int and run.k >= 1
    assert type(run.concurrency) is int and run.concurrency >= 1
    assert type(run.shards) is int and run.shards >= 1
    assert type(run.timeout_s) is float and math.isfinite(run.timeout_s) and run.timeout_s > 0
    assert run.source_match in ("chunk", "document")
    assert all(type(m) is str for m in run.metrics)
    assert type(config.adapter.target) is str and type(config.adapter.options) is dict
    assert config.judge.mode in ("per_metric", "combined")


class _Replay:
    """An adapter with one retrieved chunk and a cited answer for every question."""

    def retrieve(self, question: str):
        return [{"id": "d1", "text": "t", "metadata": {"document_id": "doc1"}}]

    def answer(self, question: str):
        return {"text": "a", "retrieved_chunks": self.retrieve(question), "citations": ["d1"]}


@FAST
@given(
    run=st.fixed_dictionaries(
        {},
        optional={
            "k": scalars,
            "source_match": st.sampled_from(["chunk", "document"]) | scalars,
            "concurrency": scalars,
            "timeout_s": scalars,
            "shards": scalars,
            "metrics": st.lists(st.sampled_from(["retrieval.*", "echo.*", "*"]), max_size=2)
            | values,
        },
    )
)
def test_accepted_run_settings_never_score_as_internal_errors(run):
    try:
        settings_ = RunSettings(**run)
    except ConfigError as exc:
        _one_line_naming(str(exc), "run.")
        return
    assume(settings_.concurrency <= 64)
    # A valid but tiny timeout_s (hypothesis finds 1e-07) times the adapter out: a
    # legitimate case failure, not what this test looks for. A second is ample for
    # the in-memory replay; any other accepted setting must score without errors.
    assume(settings_.timeout_s >= 1.0)
    cases = [Case("c1", "q?", CaseKind.QA, expected_source_ids=("d1",), expected_answer="a")]
    evaluation = asyncio.run(evaluate(cases, _Replay(), settings_))
    assert evaluation.results
    assert [r for r in evaluation.results if r.status is Status.ERROR] == []


@FAST
@given(
    lines=st.lists(
        values
        | st.fixed_dictionaries(
            {"id": text, "question": text},
            optional={
                "kind": st.sampled_from(["qa", "unanswerable", "injection"]) | scalars,
                "expected_source_ids": values,
                "expected_sources_ids": values,
                "expected_answer": values,
                "metadata": values,
                "note": values,
            },
        ),
        min_size=1,
        max_size=4,
    )
)
def test_any_dataset_lines_load_as_cases_or_name_path_and_line(tmp_path, lines):
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    try:
        cases = load_dataset(path)
    except DatasetError as exc:
        assert 1 <= exc.line <= len(lines)
        _one_line_naming(str(exc), f"{path}:{exc.line}: ")
        return
    for case in cases:
        assert type(case.id) is str and case.id.strip()
        assert type(case.question) is str and case.question.strip()
        assert isinstance(case.kind, CaseKind)
        assert case.expected_source_ids is None or all(
            type(i) is str for i in case.expected_source_ids
        )
        assert type(case.metadata) is dict


@FAST
@given(
    lines=st.lists(
        values
        | st.fixed_dictionaries(
            {"case_id": text},
            optional={"retrieve": values, "answer": values, "error": values, "extra": values},
        ),
        min_size=1,
        max_size=4,
    )
)
def test_any_recorded_lines_replay_or_name_path_and_line(tmp_path, lines):
    path = tmp_path / "outputs.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    try:
        adapter = RecordedAdapter(str(path))
    except AdapterLoadError as exc:
        _one_line_naming(str(exc), f"{path}:")
        return
    assert 1 <= len(adapter) <= len(lines)


@FAST
@given(env=st.dictionaries(st.sampled_from(sorted(JUDGE_ENV_VARS.values())), text, max_size=4))
def test_any_environment_parses_or_names_the_variable(env):
    try:
        judge_env = JudgeEnv.from_env(env)
    except ConfigError as exc:
        assert str(exc).split(":")[0] in env
        _one_line_naming(str(exc), str(exc).split(":")[0] + ": ")
        return
    assert judge_env.max_attempts >= 1 and type(judge_env.max_attempts) is int
    assert judge_env.timeout_s > 0 and math.isfinite(judge_env.timeout_s)
    assert judge_env.max_cost_usd is None or math.isfinite(judge_env.max_cost_usd)


flags = st.sampled_from(
    ["--k", "--source-match", "--concurrency", "--timeout-s", "--metrics", "--shards"]
    + ["--dataset", "--config", "--adapter", "--json", "--no-cache", "--dry-run", "--debug"]
)
tokens = st.lists(flags | text | st.integers().map(str), max_size=6)


@FAST
@given(command=st.sampled_from(["run", "runs", "show", "compare", "calibrate", "x"]), rest=tokens)
def test_any_command_line_parses_or_is_a_usage_error(command, rest):
    try:
        args = build_parser().parse_args([command, *rest])
    except UsageError as exc:
        assert "\n" not in str(exc)
        return
    assert callable(args.func)


# --- the real command line -------------------------------------------------------

# What an argv string can hold: anything but NUL.
arg_text = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=12
)

bad_run_values = {
    "k": st.floats(allow_nan=False) | st.booleans() | text | st.integers(max_value=0),
    "concurrency": st.floats(allow_nan=False) | st.booleans() | text | st.integers(max_value=0),
    "timeout_s": st.booleans() | text | st.floats(max_value=0),
    "shards": st.floats(allow_nan=False) | st.booleans() | text | st.integers(max_value=0),
    "source_match": text.filter(lambda s: s not in ("chunk", "document")) | st.integers(),
}


@st.composite
def bad_configs(draw) -> str:
    """A ragproof.toml with exactly one mistake: a wrong value or a misspelt key or table."""
    mistake = draw(st.sampled_from(["value", "key", "table"]))
    if mistake == "value":
        key = draw(st.sampled_from(sorted(bad_run_values)))
        value = draw(bad_run_values[key])
        assume(not (type(value) is float and key == "timeout_s" and value > 0))
        return f"[run]\n{key} = {_toml_value(value)}\n"
    if mistake == "key":
        return f'[adapter]\n{draw(st.sampled_from(["targt", "option", "path"]))} = "m:A"\n'
    return f"[{draw(st.sampled_from(['rn', 'adaptor', 'juge']))}]\nk = 3\n"


def _is_number(arg: str) -> bool:
    # What argparse's int/float would accept ("1_000", "٣", " 2 ", "inf" among them).
    try:
        float(arg)
    except ValueError:
        return False
    return True


@pytest.fixture(scope="module")
def homes(tmp_path_factory) -> dict[str, str]:
    return {
        "RAGPROOF_STORE": str(tmp_path_factory.mktemp("store")),
        "DAGSTER_HOME": str(tmp_path_factory.mktemp("dagster_home")),
    }


def _assert_rejected_in_one_line(homes, args: list[str]) -> None:
    before = {name: tree_bytes(Path(root)) for name, root in homes.items()}
    done = ragproof(*args, env=cli_env(**homes))
    assert done.returncode == 1, (args, done.stderr)
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("ragproof: "), done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert {name: tree_bytes(Path(root)) for name, root in homes.items()} == before


@pytest.mark.slow
@SUBPROCESS
@given(config=bad_configs())
def test_the_command_rejects_generated_bad_configs(homes, tmp_path, config):
    path = tmp_path / "ragproof.toml"
    path.write_text(config, encoding="utf-8")
    _assert_rejected_in_one_line(
        homes, ["run", "--dataset", str(RECORDED / "cases.jsonl"), "--config", str(path)]
    )


@pytest.mark.slow
@SUBPROCESS
@given(
    args=st.one_of(
        st.tuples(
            st.sampled_from(["--k", "--concurrency", "--shards", "--timeout-s"]),
            arg_text.filter(lambda s: not _is_number(s)),
        ).map(lambda t: ["run", "--dataset", str(RECORDED / "cases.jsonl"), t[0], t[1]]),
        st.lists(arg_text.filter(lambda s: not s.startswith("-")), max_size=3).map(
            lambda rest: ["compare", *rest[:1]]
        ),
        arg_text.filter(lambda s: s.strip() and not s.startswith("-")).map(lambda s: ["show", s]),
        st.just(["run"]),
    )
)
def test_the_command_rejects_generated_bad_command_lines(homes, args):
    _assert_rejected_in_one_line(homes, args)
