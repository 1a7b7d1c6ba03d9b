"""suites.toml (CONTRACT section 30): every key checked when the file is read, each
mistake one line naming the file, the suite and the key."""

from __future__ import annotations

import pytest

from ragproof_core.config import RUN_KEYS, ConfigError, load_suites
from ragproof_core.config.suites import SUITE_KEYS, suites_file
from tests.assets.expected import RECORDED

RULE = "expected letters, digits and underscores only ([A-Za-z0-9_]+)"


def write(tmp_path, text: str):
    path = tmp_path / "suites.toml"
    path.write_text(text)
    return path


def test_suites_with_their_launch_and_schedule(tmp_path):
    path = write(
        tmp_path,
        f'[[suite]]\nname = "nightly_k3"\ndataset = "{RECORDED / "cases.jsonl"}"\n'
        f'config_file = "{RECORDED / "ragproof.toml"}"\nk = 3\nmetrics = ["retrieval.mrr"]\n'
        'cron = "30 6 * * MON-FRI"\ntimezone = "Europe/Paris"\nkeep_last = 20\n\n'
        '[[suite]]\nname = "Demo_2"\ndataset = "data/demo/cases.jsonl"\n',
    )
    first, second = load_suites(path)
    assert first.name == "nightly_k3"
    # Its runs are tagged suite=<name> and named after it (the config names none).
    assert dict(first.launch) == {
        "dataset": str(RECORDED / "cases.jsonl"),
        "config_file": str(RECORDED / "ragproof.toml"),
        "k": 3,
        "metrics": ["retrieval.mrr"],
        "tags": {"suite": "nightly_k3"},
        "name": "nightly_k3",
    }
    assert (first.cron, first.timezone, first.keep_last, first.scheduled) == (
        "30 6 * * MON-FRI",
        "Europe/Paris",
        20,
        True,
    )
    assert first.schedule_cron == "30 6 * * MON-FRI"
    # No cron: a schedule at 02:00 UTC, stopped until someone turns it on.
    assert (second.cron, second.schedule_cron, second.timezone, second.scheduled) == (
        None,
        "0 2 * * *",
        "UTC",
        False,
    )


def test_a_suite_sets_the_judges_repeats_as_the_launch_form_does(tmp_path):
    path = write(
        tmp_path,
        f'[[suite]]\nname = "twice"\ndataset = "{RECORDED / "cases.jsonl"}"\njudge_repeats = 2\n',
    )
    (suite,) = load_suites(path)
    assert suite.launch["judge_repeats"] == 2
    bad = write(tmp_path, '[[suite]]\nname = "none"\ndataset = "a.jsonl"\njudge_repeats = 0\n')
    with pytest.raises(
        ConfigError,
        match=r"suites.toml: suite #1 \(none\): judge.repeats: must be at least 1, got 0",
    ):
        load_suites(bad)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            'name = "a"\ndataset = "a.jsonl"\nkk = 3\n',
            "suite #1 (a): kk: unknown key (did you mean 'k'?)",
        ),
        (
            'name = "a"\ndataset = "a.jsonl"\nk = 2.5\n',
            "suite #1 (a): run.k: expected an integer, got 2.5",
        ),
        (
            'name = "a"\ndataset = "a.jsonl"\nk = true\n',
            "suite #1 (a): run.k: expected an integer, got true",
        ),
        ('name = "a"\n', "suite #1 (a): dataset: missing required key"),
        ('name = "a"\ndataset = 3\n', "suite #1 (a): dataset: expected a string, got 3"),
        (
            'name = "a"\ndataset = "a.jsonl"\nno_cache = "yes"\n',
            'suite #1 (a): no_cache: expected true or false, got "yes"',
        ),
        (
            'dataset = "a.jsonl"\n',
            f"suite #1: name: {RULE}, got nothing",
        ),
        (
            'name = "a-b"\ndataset = "a.jsonl"\n',
            f'suite #1: name: {RULE}, got "a-b"',
        ),
        (
            'name = ""\ndataset = "a.jsonl"\n',
            f'suite #1: name: {RULE}, got ""',
        ),
        (
            'name = "a"\ndataset = "a.jsonl"\ncron = "0 25 * * *"\n',
            'suite #1 (a): cron: not a cron schedule: "0 25 * * *" (five fields, minute hour '
            'day-of-month month day-of-week, such as "0 2 * * *", or @daily)',
        ),
        (
            # cron and timezone are read as the file loads: ${NAME} is not expanded in them
            # (CONTRACT section 28).
            'name = "a"\ndataset = "a.jsonl"\ncron = "${CRON}"\n',
            'suite #1 (a): cron: not a cron schedule: "${CRON}" (five fields, minute hour '
            'day-of-month month day-of-week, such as "0 2 * * *", or @daily)',
        ),
        (
            'name = "a"\ndataset = "a.jsonl"\ntimezone = "${TZ}"\n',
            'suite #1 (a): timezone: unknown time zone "${TZ}" (an IANA name such as '
            '"UTC" or "Europe/Paris")',
        ),
        (
            'name = "a"\ndataset = "a.jsonl"\ncron = "0 2 * * *"\ntimezone = "Mars/Olympus"\n',
            'suite #1 (a): timezone: unknown time zone "Mars/Olympus" (an IANA name such as '
            '"UTC" or "Europe/Paris")',
        ),
        (
            'name = "a"\ndataset = "a.jsonl"\nkeep_last = 0\n',
            "suite #1 (a): keep_last: must be at least 1, got 0",
        ),
        (
            'name = "a"\ndataset = "a.jsonl"\ncron = 2\n',
            "suite #1 (a): cron: expected a string, got 2",
        ),
        (
            'name = "a"\ndataset = "a.jsonl"\nadapter_options_json = "[1]"\n',
            "suite #1 (a): adapter_options_json: expected a JSON object",
        ),
        (
            'name = "a"\ndataset = "a.jsonl"\nconfig_file = "missing.toml"\n',
            "suite #1 (a): missing.toml: no such config file",
        ),
    ],
)
def test_a_mistake_names_the_file_the_suite_and_the_key(tmp_path, entry, message):
    path = write(tmp_path, "[[suite]]\n" + entry)
    with pytest.raises(ConfigError) as err:
        load_suites(path)
    assert str(err.value) == f"{path}: {message}"


def test_the_config_names_the_runs_and_the_suite_adds_its_tag(tmp_path):
    config = tmp_path / "ragproof.toml"
    config.write_text('[run]\nname = "support nightly"\ntags = { team = "search" }\n')
    path = write(
        tmp_path,
        f'[[suite]]\nname = "support"\ndataset = "a.jsonl"\nconfig_file = "{config}"\n'
        'tags = { owner = "ana" }\n',
    )
    (suite,) = load_suites(path)
    # The config's name stays; its tags merge with the suite's when the run starts.
    assert "name" not in suite.launch
    assert suite.launch["tags"] == {"owner": "ana", "suite": "support"}


def test_names_are_unique(tmp_path):
    path = write(
        tmp_path,
        '[[suite]]\nname = "nightly"\ndataset = "a.jsonl"\n\n'
        '[[suite]]\nname = "nightly"\ndataset = "b.jsonl"\nk = 3\n',
    )
    with pytest.raises(ConfigError) as err:
        load_suites(path)
    assert str(err.value) == f"{path}: suite #2: name: 'nightly' is already the name of suite #1"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[suite]\n", "not valid TOML"),
        ('[[suites]]\nname = "a"\n', "suites: unknown table (did you mean 'suite'?)"),
        ('suite = "a"\n', "suite: expected [[suite]] tables"),
    ],
)
def test_a_broken_file_is_one_line(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_suites(path)
    assert str(err.value).startswith(f"{path}: {message}")
    assert "\n" not in str(err.value)


def test_the_file_is_named_by_the_environment(tmp_path):
    assert str(suites_file({})) == "data/suites.toml"
    assert suites_file({"RAGPROOF_SUITES": str(tmp_path / "s.toml")}) == tmp_path / "s.toml"
    with pytest.raises(ConfigError) as err:
        load_suites(tmp_path / "s.toml")
    assert str(err.value) == f"{tmp_path / 's.toml'}: no such suites file"


def test_suite_keys_are_the_launch_form_every_run_key_and_the_schedule():
    assert (
        "name",
        "dataset",
        "config_file",
        "adapter",
        "adapter_options_json",
        "no_cache",
        "judge_repeats",
        *(key for key in RUN_KEYS if key != "name"),  # a suite's name is its own
        "cron",
        "timezone",
        "keep_last",
    ) == SUITE_KEYS


def test_the_launch_keeps_environment_references_as_written(tmp_path, monkeypatch):
    # Expanded when a run starts, never as the file loads (CONTRACT section 28): an unset
    # variable does not fail the load, and a set one is not copied into the schedule.
    monkeypatch.setenv("TOK", "s3cret")
    monkeypatch.delenv("DATA_DIR", raising=False)
    path = write(
        tmp_path,
        '[[suite]]\nname = "a"\ndataset = "${DATA_DIR}/cases.jsonl"\n'
        'config_file = "${DATA_DIR}/ragproof.toml"\n'
        'adapter_options_json = \'{"token": "${TOK}"}\'\n',
    )
    (suite,) = load_suites(path)
    assert suite.launch["dataset"] == "${DATA_DIR}/cases.jsonl"
    assert suite.launch["config_file"] == "${DATA_DIR}/ragproof.toml"
    assert suite.launch["adapter_options_json"] == '{"token": "${TOK}"}'
