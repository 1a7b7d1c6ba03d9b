"""[[metric]] tables (CONTRACT section 21): checked as strictly as the rest of ragproof.toml."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragproof_core.config.settings import ConfigError, load_config
from ragproof_core.metrics.custom_tables import MetricTable, tables_from_dicts, tables_to_dicts

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "custom_metrics"
RUBRIC = 'name = "custom.tone"\nrubric = "Polite?"\nbands = ["no", "yes"]\nmaterial = ["answer"]\n'
FUNCTION = 'name = "custom.f"\nfunction = "tests.fixtures.custom_metrics.functions:answer_words"\n'


def test_the_test_config_declares_three_metrics_with_fixtures_resolved():
    config = load_config(FIXTURES / "ragproof.toml")
    assert [(t.name, t.kind, t.higher_is_better) for t in config.metrics] == [
        ("custom.tone", "rubric", True),
        ("custom.answer_words", "function", True),
        ("custom.cites_expected", "function", False),
    ]
    assert config.metrics[0].fixtures == str(FIXTURES / "tone_fixtures.jsonl")
    assert tables_from_dicts(tables_to_dicts(config.metrics)) == config.metrics


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (RUBRIC + "rubrik = 1\n", "metric[1].rubrik: unknown key (did you mean 'rubric'?)"),
        (RUBRIC.replace("custom.tone", "tone"), "metric[1].name: must start with 'custom.'"),
        (
            RUBRIC.replace('["no", "yes"]', '["yes"]'),
            "metric[1].bands: expected 2 to 5 bands, got 1",
        ),
        (
            RUBRIC.replace('["no", "yes"]', '["a", "b", "c", "d", "e", "f"]'),
            "metric[1].bands: expected 2 to 5 bands, got 6",
        ),
        (RUBRIC.replace('["no", "yes"]', '["no", "no"]'), "metric[1].bands: each entry once"),
        (
            RUBRIC.replace('["answer"]', '["answer", "docs"]'),
            "metric[1].material: 'docs' is not material; choose from question, answer, context, "
            "expected_answer, history",
        ),
        (RUBRIC + 'function = "m:f"\n', "metric[1]: give exactly one of rubric"),
        ('name = "custom.x"\n', "metric[1]: give exactly one of rubric"),
        (RUBRIC.replace('bands = ["no", "yes"]\n', ""), "metric[1].bands: required"),
        (FUNCTION + 'bands = ["a", "b"]\n', "metric[1].bands: only a rubric metric has bands"),
        (FUNCTION + "higher_is_better = 1\n", "metric[1].higher_is_better: expected true or false"),
        (
            FUNCTION.replace("functions:answer_words", "functions:nothing"),
            "metric[1].function: function 'tests.fixtures.custom_metrics.functions:nothing': "
            "module 'tests.fixtures.custom_metrics.functions' has no attribute 'nothing'",
        ),
        (
            'name = "custom.f"\nfunction = "no_such_module_xyz:f"\n',
            "metric[1].function: function 'no_such_module_xyz:f': no module named",
        ),
        ('name = "custom.f"\nfunction = "not a path"\n', "metric[1].function: expected an import"),
        (RUBRIC + 'fixtures = "missing.jsonl"\n', "metric[1].fixtures: no such file"),
        (RUBRIC + "timeout_s = 5\n", "metric[1].timeout_s: only a function metric has timeout_s"),
        (FUNCTION + "timeout_s = 0\n", "metric[1].timeout_s: expected a number of seconds above 0"),
        (FUNCTION + "timeout_s = -1.5\n", "metric[1].timeout_s: expected a number of seconds"),
        (FUNCTION + "timeout_s = inf\n", "metric[1].timeout_s: expected a number of seconds"),
        (FUNCTION + "timeout_s = nan\n", "metric[1].timeout_s: expected a number of seconds"),
        (FUNCTION + 'timeout_s = "5"\n', "metric[1].timeout_s: expected a number of seconds"),
        (FUNCTION + "timeout_s = true\n", "metric[1].timeout_s: expected a number of seconds"),
    ],
)
def test_a_malformed_table_is_one_line_naming_it(tmp_path: Path, table: str, message: str):
    path = tmp_path / "ragproof.toml"
    path.write_text("[[metric]]\n" + table, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}: {message}")
    assert "\n" not in str(caught.value)


def test_the_second_table_is_metric_2_and_names_are_unique(tmp_path: Path):
    path = tmp_path / "ragproof.toml"
    path.write_text(f"[[metric]]\n{RUBRIC}\n[[metric]]\n{RUBRIC}", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"metric\[2\]\.name: 'custom.tone' is declared twice"):
        load_config(path)


def test_fixtures_resolve_against_the_config_folder(tmp_path: Path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "f.jsonl").write_text("{}\n")
    path = tmp_path / "ragproof.toml"
    path.write_text(f'[[metric]]\n{RUBRIC}fixtures = "sub/f.jsonl"\n', encoding="utf-8")
    assert load_config(path).metrics[0].fixtures == str(tmp_path / "sub" / "f.jsonl")


def test_selection_reaches_the_configs_own_metrics(tmp_path: Path):
    path = tmp_path / "ragproof.toml"
    path.write_text(f'[run]\nmetrics = ["custom.*", "echo.*"]\n[[metric]]\n{RUBRIC}')
    assert load_config(path).selected_metrics() == ("echo.exact_match", "custom.tone")
    path.write_text(f'[run]\nmetrics = ["custom.nope"]\n[[metric]]\n{RUBRIC}')
    with pytest.raises(ConfigError, match=r"run\.metrics: metric 'custom.nope' matches no metric"):
        load_config(path)
    # The overrides of the command line (--metrics) are checked the same way.
    config = load_config(FIXTURES / "ragproof.toml").with_overrides(metrics=["custom.*"])
    assert config.selected_metrics() == (
        "custom.tone",
        "custom.answer_words",
        "custom.cites_expected",
    )


def test_a_table_is_plain_data():
    table = MetricTable("custom.f", function="m:f")
    assert (table.kind, table.to_dict()) == (
        "function",
        {"name": "custom.f", "higher_is_better": True, "function": "m:f"},
    )
    # A time limit of its own is kept; the default (10 s) is not written out.
    limited = MetricTable("custom.f", function="m:f", timeout_s=2.5)
    assert limited.to_dict()["timeout_s"] == 2.5
    assert tables_from_dicts([limited.to_dict()]) == (limited,)
    assert table.timeout_s == 10.0


def test_timeout_s_is_a_function_metrics_time_limit(tmp_path: Path):
    path = tmp_path / "ragproof.toml"
    path.write_text(f"[[metric]]\n{FUNCTION}timeout_s = 2\n", encoding="utf-8")
    assert load_config(path).metrics[0].timeout_s == 2.0
