"""A dataset's trend: each run's mean of each metric with its normal-approximation interval."""

import math
from dataclasses import replace

import numpy as np
import pytest

from ragproof_core.metrics.registry import REGISTRY
from ragproof_core.present.trends import (
    MetricMoments,
    dataset_trends,
    normal_interval,
    run_moments,
    trend_window,
)
from ragproof_core.store.run_store import RunStore
from tests.support.judged_run import (
    GROUNDEDNESS,
    GROUNDEDNESS_SCORES,
    RELEVANCE,
    RELEVANCE_SCORES,
    write_judged_run,
)


def test_normal_interval_by_hand():
    # mean 0.5, sd 0.5, n 4: half width 1.96 * 0.5 / 2 = 0.49
    low, high = normal_interval(0.5, 0.5, 4)
    assert math.isclose(low, 0.01) and math.isclose(high, 0.99)
    assert normal_interval(0.5, None, 1) is None
    assert normal_interval(None, 0.1, 10) is None
    assert normal_interval(0.5, float("nan"), 1) is None


def test_run_moments_are_numpys(tmp_path):
    store = RunStore(tmp_path / "store")
    write_judged_run(store, "r1")
    moments = {m.metric: m for m in run_moments(store, ["r1"])}
    for metric, scores in ((GROUNDEDNESS, GROUNDEDNESS_SCORES), (RELEVANCE, RELEVANCE_SCORES)):
        values = np.array(list(scores.values()))
        m = moments[metric]
        assert m.n == values.size
        assert math.isclose(m.mean, values.mean())
        assert math.isclose(m.sd, values.std(ddof=1))
    assert run_moments(store, []) == []


def test_dataset_trends_keep_the_datasets_runs_oldest_first(tmp_path):
    store = RunStore(tmp_path / "store")
    first = store.get_run(write_judged_run(store, "r1"))
    second = replace(first, run_id="r2", started_at=first.started_at.replace(hour=10))
    elsewhere = replace(first, run_id="r3", dataset="other.jsonl")
    moments = [
        MetricMoments("r1", GROUNDEDNESS, 4, 0.5, 0.5),
        MetricMoments("r2", GROUNDEDNESS, 1, 0.75, None),
        MetricMoments("r3", GROUNDEDNESS, 9, 0.1, 0.1),
        MetricMoments("r2", RELEVANCE, 4, 1.0, 0.0),
    ]
    trend = dataset_trends("judged.jsonl", [first, second, elsewhere], moments, REGISTRY)
    assert [r["run_id"] for r in trend["runs"]] == ["r1", "r2"]
    series = {m["metric"]: m for m in trend["metrics"]}
    assert list(series) == REGISTRY.order({GROUNDEDNESS, RELEVANCE})
    points = series[GROUNDEDNESS]["points"]
    assert [(p["run"], p["mean"], p["n"]) for p in points] == [(0, 0.5, 4), (1, 0.75, 1)]
    assert points[0]["ci"] == pytest.approx([0.01, 0.99])
    assert points[1]["ci"] is None  # one scored case: no interval
    # A run that did not score a metric has no point on its line.
    assert [p["run"] for p in series[RELEVANCE]["points"]] == [1]
    assert series[GROUNDEDNESS]["higher_is_better"] is True


def test_one_named_line_per_adapter_and_config_digest_and_aborted_runs_apart(tmp_path):
    store = RunStore(tmp_path / "store")
    base = replace(store.get_run(write_judged_run(store, "r1")), config_digest="a" * 64)
    hour = base.started_at.hour
    runs = [
        base,
        replace(base, run_id="r2", started_at=base.started_at.replace(hour=hour + 1),
                config_digest="b" * 64, name="k10"),
        replace(base, run_id="r3", started_at=base.started_at.replace(hour=hour + 2),
                name="nightly"),
        replace(base, run_id="r4", started_at=base.started_at.replace(hour=hour + 3),
                status="aborted:budget"),
        replace(base, run_id="r5", started_at=base.started_at.replace(hour=hour + 4),
                adapter="my.pipeline:Other"),
    ]  # fmt: skip
    moments = [MetricMoments(r.run_id, "agent.steps", 2, 4.0 + i, 3.0) for i, r in enumerate(runs)]
    trend = dataset_trends("judged.jsonl", runs, moments, REGISTRY)
    assert [(s["adapter"], s["config_digest"], s["label"], s["runs"]) for s in trend["series"]] == [
        ("recorded", "a" * 64, "nightly · aaaaaaaa", 3),
        ("recorded", "b" * 64, "k10 · bbbbbbbb", 1),
        ("my.pipeline:Other", "a" * 64, "Other · aaaaaaaa", 1),
    ]
    assert [(r["series"], r["aborted"]) for r in trend["runs"]] == [
        (0, False), (1, False), (0, False), (0, True), (2, False),
    ]  # fmt: skip
    assert trend["runs"][3]["status"] == "aborted:budget"
    assert trend["runs"][2]["name"] == "nightly"
    # A count is not a bounded score: its interval is not clipped to [0, 1].
    (steps,) = trend["metrics"]
    assert steps["bounded"] is False
    half = 1.96 * 3.0 / math.sqrt(2)
    assert steps["points"][0]["ci"] == pytest.approx([4.0 - half, 4.0 + half])
    assert steps["points"][0]["ci"][0] < 0


def test_a_bounded_metrics_interval_stays_within_0_and_1(tmp_path):
    store = RunStore(tmp_path / "store")
    record = store.get_run(write_judged_run(store, "r1"))
    trend = dataset_trends(
        "judged.jsonl", [record], [MetricMoments("r1", GROUNDEDNESS, 3, 0.9, 0.5)], REGISTRY
    )
    (point,) = trend["metrics"][0]["points"]
    assert point["ci"] == pytest.approx([0.9 - 1.96 * 0.5 / math.sqrt(3), 1.0])


def test_a_trend_page_shows_the_newest_runs_and_pages_to_older_ones(tmp_path):
    store = RunStore(tmp_path / "store")
    first = store.get_run(write_judged_run(store, "r0"))
    records = [replace(first, run_id=f"r{i}") for i in range(5)]
    other = replace(first, run_id="x", dataset="other.jsonl")
    runs, window = trend_window([*records, other], "judged.jsonl", limit=2)
    assert [r.run_id for r in runs] == ["r3", "r4"]
    assert window == {"offset": 0, "limit": 2, "total": 5}
    runs, _ = trend_window(records, "judged.jsonl", offset=2, limit=2)
    assert [r.run_id for r in runs] == ["r1", "r2"]
    runs, _ = trend_window(records, "judged.jsonl", offset=4, limit=2)
    assert [r.run_id for r in runs] == ["r0"]
    assert trend_window(records, "judged.jsonl", offset=9, limit=2)[0] == []
