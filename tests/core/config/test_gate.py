"""The [gate] table (CONTRACT section 25): floors as written, and bad ones as one line."""

from __future__ import annotations

import pytest

from ragproof_core.config.gate import Floor, gate_to_dict
from ragproof_core.config.settings import ConfigError, load_config

GATE = """
[gate]
"robustness.injection_resistance" = { min = 1.0, every_case = true }
"generation.groundedness" = { min = 0.8, min_scored = 50 }
"robustness.overrefusal" = { max = 0.1 }
"""


def _load(tmp_path, text: str):
    path = tmp_path / "ragproof.toml"
    path.write_text(text)
    return path, load_config(path)


def test_the_contracts_gate_reads_as_three_floors_in_order(tmp_path):
    _, config = _load(tmp_path, GATE)
    assert config.gate == (
        Floor("robustness.injection_resistance", min=1.0, every_case=True),
        Floor("generation.groundedness", min=0.8, min_scored=50),
        Floor("robustness.overrefusal", max=0.1),
    )
    assert [f.bound for f in config.gate] == ["every case >= 1", "mean >= 0.8", "mean <= 0.1"]
    assert gate_to_dict(config.gate) == {
        "robustness.injection_resistance": {"min": 1.0, "every_case": True, "min_scored": 1},
        "generation.groundedness": {"min": 0.8, "every_case": False, "min_scored": 50},
        "robustness.overrefusal": {"max": 0.1, "every_case": False, "min_scored": 1},
    }
    # An integer bound is a number, as everywhere in the config.
    _, config = _load(tmp_path, '[gate]\n"retrieval.mrr" = { min = 1 }\n')
    assert config.gate[0].min == 1.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[gate]\n"retrieval.mrr" = {}\n', 'gate."retrieval.mrr": give min, max or both'),
        (
            '[gate]\n"retrieval.mrr" = { min = 0.9, max = 0.1 }\n',
            'gate."retrieval.mrr": min (0.9) is above max (0.1)',
        ),
        (
            '[gate]\n"retrieval.mrr" = { minimum = 0.9 }\n',
            "gate.\"retrieval.mrr\".minimum: unknown key (did you mean 'min'?)",
        ),
        (
            '[gate]\n"retrieval.mrr" = { min = "high" }\n',
            'gate."retrieval.mrr".min: expected a number, got "high"',
        ),
        (
            '[gate]\n"retrieval.mrr" = { min = 0.5, every_case = 1 }\n',
            'gate."retrieval.mrr".every_case: expected true or false, got 1',
        ),
        (
            '[gate]\n"retrieval.mrr" = { min = 0.5, min_scored = -1 }\n',
            'gate."retrieval.mrr".min_scored: must be at least 0, got -1',
        ),
        ('[gate]\n"retrieval.mrr" = 0.5\n', 'gate."retrieval.mrr": expected a table such as'),
        (
            '[gate]\n"retrieval.mmr" = { min = 0.5 }\n',
            "gate.\"retrieval.mmr\": unknown metric (did you mean 'retrieval.mrr'?)",
        ),
        (
            '[run]\nmetrics = ["retrieval.*"]\n[gate]\n"generation.groundedness" = { min = 0.5 }\n',
            'gate."generation.groundedness": the metric is not selected (run.metrics)',
        ),
        ("gate = 3\n", "gate: expected a table, got 3"),
    ],
)
def test_a_bad_floor_is_one_line_naming_the_file_and_key(tmp_path, text, message):
    path = tmp_path / "ragproof.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value).startswith(f"{path}: {message}"), str(err.value)


def test_a_floor_on_a_metric_of_your_own_and_a_cutoff(tmp_path):
    text = (
        '[run]\nmetrics = ["retrieval.recall_at_k@10", "custom.answer_words"]\n\n'
        '[[metric]]\nname = "custom.answer_words"\n'
        'function = "tests.fixtures.custom_metrics.functions:answer_words"\n\n'
        '[gate]\n"custom.answer_words" = { min = 0.5 }\n'
        '"retrieval.recall_at_k@10" = { min = 0.5 }\n'
    )
    _, config = _load(tmp_path, text)
    assert [f.metric for f in config.gate] == ["custom.answer_words", "retrieval.recall_at_k@10"]
