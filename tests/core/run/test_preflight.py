"""preflight: everything a run needs, checked before anything is created."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from ragproof_core.adapters.isolation import IsolatedAdapter
from ragproof_core.adapters.loading import AdapterLoadError, lend_adapter, object_target
from ragproof_core.adapters.runner import close_adapter
from ragproof_core.config.settings import AdapterSpec, Config, ConfigError
from ragproof_core.data.dataset import DatasetError
from ragproof_core.run.preflight import (
    adapter_lent,
    check_adapter,
    check_launch,
    preflight,
    staged_inputs,
    take_adapter,
)
from tests.assets.expected import RECORDED
from tests.conftest import FIXTURES

RECORDER = "ragproof_core.adapters.recorded:RecordedAdapter"
DATASET = RECORDED / "cases.jsonl"


def test_a_good_run_returns_its_cases_and_judge_environment(monkeypatch):
    monkeypatch.setenv("RAGPROOF_MAX_COST_USD", "2")
    checked = preflight(Config(), DATASET)
    assert [case.id for case in checked.cases][:2] == ["c1", "c2"]
    assert checked.judge_env.max_cost_usd == 2.0


@pytest.mark.parametrize(
    ("config", "dataset", "error"),
    [
        (Config(adapter=AdapterSpec("nope.mod:X")), DATASET, AdapterLoadError),
        (Config(), DATASET.with_name("absent.jsonl"), DatasetError),
    ],
)
def test_each_input_is_checked(config, dataset, error):
    with pytest.raises(error):
        preflight(config, dataset)


def test_the_environment_is_checked(monkeypatch):
    monkeypatch.setenv("RAGPROOF_JUDGE_RPM", "fast")
    with pytest.raises(ConfigError, match='^RAGPROOF_JUDGE_RPM: expected a number, got "fast"$'):
        preflight(Config(), DATASET)


def test_the_checked_adapter_is_handed_to_the_run_once():
    spec = AdapterSpec(RECORDER, {"path": str(RECORDED / "outputs.jsonl")})
    check_adapter(spec)
    first = take_adapter(spec)
    second = take_adapter(spec)  # nothing kept any more: a new one
    assert type(first).__name__ == type(second).__name__ == "RecordedAdapter"
    assert first is not second


class _Pipeline:
    """An async pipeline a notebook built, whose ``aclose`` is its owner's to call."""

    closed = False

    async def answer(self, question: str) -> dict:
        return {"text": question.upper()}

    async def aclose(self) -> None:
        self.closed = True


def test_a_lent_object_is_taken_by_the_run_and_left_open_within_a_running_loop():
    """``ragproof.evaluate(adapter=obj)``, called where a loop runs (a notebook's cell):
    the run's step takes the caller's object, closes only what wraps it, and an object
    no step took is let go (its wrapper's loop stopped) without asyncio.run failing."""
    pipeline = _Pipeline()
    spec = AdapterSpec(object_target(pipeline))

    async def notebook_cell() -> None:
        lent = lend_adapter(pipeline)
        assert isinstance(lent, IsolatedAdapter)  # async methods on a loop of their own
        with adapter_lent(spec, lent):
            taken = take_adapter(spec, prechecked=True)
            assert taken is lent
            assert await taken.answer("q?") == {"text": "Q?"}
            await close_adapter(taken)
        with adapter_lent(spec, lend_adapter(pipeline)):
            pass  # the run failed before its step: nothing took it

    asyncio.run(notebook_cell())
    assert not pipeline.closed
    # Nothing kept: a step of another run builds the class path anew.
    fresh = take_adapter(spec)
    assert type(fresh.adapter) is _Pipeline and fresh.adapter is not pipeline
    asyncio.run(close_adapter(fresh))


def test_the_command_leaves_the_dataset_and_the_recording_to_the_dataset_step(tmp_path):
    """check_launch reads neither file (the run's first step does, once), except a
    dataset with fewer lines than shards, refused as preflight refuses it."""
    dataset = tmp_path / "cases.jsonl"
    dataset.write_text('{"id": "c1", "question": "q?"}\n{"id": "c2"}\n', encoding="utf-8")
    recording = tmp_path / "outputs.jsonl"
    recording.write_text("not json\n", encoding="utf-8")
    config = Config(adapter=AdapterSpec(RECORDER, {"path": str(recording)}))
    check_launch(config, dataset)
    check_launch(replace(config, run=replace(config.run, shards=2)), dataset)
    with pytest.raises(DatasetError, match=r":2: question: missing required field$"):
        check_launch(replace(config, run=replace(config.run, shards=3)), dataset)
    dataset.write_text('{"id": "c1", "question": "q?"}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^run.shards: 2 shards for 1 case\(s\) in "):
        check_launch(replace(config, run=replace(config.run, shards=2)), dataset)


def test_the_dataset_and_recording_read_together_fail_in_the_order_read_alone():
    """staged_inputs reads both files at once: the dataset's error comes first, then
    the checks' (the shard count), then the recording's; a good pair is staged whole."""
    good, bad = RECORDED / "outputs.jsonl", FIXTURES / "errors" / "bad_recording.jsonl"
    misspelt = FIXTURES / "errors" / "misspelt_field.jsonl"

    def staged(dataset, recording, shards=1):
        config = Config(adapter=AdapterSpec(RECORDER, {"path": str(recording)}))
        config = replace(config, run=replace(config.run, shards=shards))
        with staged_inputs(config, dataset, "r1", adapter_checked=True) as (checked, stored):
            return checked.dataset.rows, stored.rows, stored.path.exists()

    assert staged(DATASET, good) == (6, 5, True)  # one case has no recorded line
    with pytest.raises(DatasetError, match=r"misspelt_field\.jsonl:2: expected_sources_ids"):
        staged(misspelt, bad)
    with pytest.raises(ConfigError, match=r"^run.shards: 7 shards for 6 case\(s\)"):
        staged(DATASET, bad, shards=7)
    with pytest.raises(AdapterLoadError, match=r"bad_recording\.jsonl:2: not valid JSON"):
        staged(DATASET, bad)
