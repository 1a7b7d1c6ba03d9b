"""The labelling queue: a seeded sample stratified by the judge's band, exact; the next
case to label read back from the store (a reload resumes); several annotators; labels
of cases the judge did not score refused."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from ragproof_core.calibration.agreement import band
from ragproof_core.calibration.label_queue import LabelQueue, allocate, stratified_sample
from ragproof_core.store.labels import LabelError
from ragproof_core.store.run_store import RunNotFound, RunStore
from tests.support.judged_run import (
    GROUNDEDNESS,
    GROUNDEDNESS_SCORES,
    RELEVANCE,
    RELEVANCE_SCORES,
    RUBRIC,
    RUBRIC_BANDS,
    RUBRIC_VERDICTS,
    write_judged_run,
)


def test_seats_are_shared_in_proportion_by_largest_remainder() -> None:
    # 4 of 10: 2.0, 1.2, 0.8 -> 2, 1, 0 and the one seat left to the largest remainder.
    assert allocate([5, 3, 2], 4) == [2, 1, 1]
    # 10 of 20 from 4, 6, 10: exactly 2, 3, 5.
    assert allocate([4, 6, 10], 10) == [2, 3, 5]
    # 3 of 3 from 1, 1, 1: one each; remainders tie, the earlier stratum first.
    assert allocate([1, 1, 1], 3) == [1, 1, 1]
    assert allocate([1, 1, 1], 1) == [1, 0, 0]
    assert allocate([0, 0, 0], 0) == [0, 0, 0]
    with pytest.raises(ValueError, match="cannot draw 4 of 3"):
        allocate([1, 1, 1], 4)


def test_the_sample_is_stratified_by_band_seeded_and_exact() -> None:
    drawn = stratified_sample(RELEVANCE_SCORES, 10, np.random.default_rng(7))
    # Bands 0 / 0.5 / 1 hold 4 / 6 / 10 of the 20 cases: 2 / 3 / 5 of 10 exactly.
    assert Counter(band(RELEVANCE_SCORES[c]) for c in drawn) == {0.0: 2, 0.5: 3, 1.0: 5}
    assert len(set(drawn)) == 10
    assert drawn == stratified_sample(RELEVANCE_SCORES, 10, np.random.default_rng(7))
    assert drawn != stratified_sample(RELEVANCE_SCORES, 10, np.random.default_rng(8))
    # The bands come mixed, not one after another.
    bands = [band(RELEVANCE_SCORES[c]) for c in drawn]
    assert bands != sorted(bands) and bands != sorted(bands, reverse=True)
    # Exactly: per band (0, 0.5, 1) its seats drawn from its sorted ids, then one shuffle.
    rng = np.random.default_rng(7)
    strata = [["q17", "q18", "q19", "q20"], [f"q{i}" for i in range(11, 17)]]
    strata.append([f"q{i:02d}" for i in range(1, 11)])
    chosen = [
        ids[i]
        for ids, k in zip(strata, (2, 3, 5), strict=True)
        for i in rng.choice(len(ids), k, False)
    ]
    assert drawn == [chosen[i] for i in rng.permutation(10)]
    # Pinned too: a session resumes only if the same seed keeps giving the same sample.
    assert drawn == ["q14", "q03", "q15", "q10", "q09", "q13", "q19", "q08", "q20", "q01"]
    # Asking for more than there is gives everything, once.
    assert sorted(stratified_sample(GROUNDEDNESS_SCORES, 50, np.random.default_rng(0))) == sorted(
        GROUNDEDNESS_SCORES
    )


def test_a_queue_resumes_where_each_annotator_stopped(tmp_path) -> None:
    store = RunStore(tmp_path / "store")
    write_judged_run(store)
    queue = LabelQueue.load(store, "judged", per_metric=4, seed=3)
    assert [i.metric for i in queue.items] == [GROUNDEDNESS] * 4 + [RELEVANCE] * 4
    first = queue.items[0]
    assert first.question == f"What does item {first.case_id} say?"
    assert first.answer == f"Item {first.case_id} says yes."
    assert [c.id for c in first.context] == [f"{first.case_id}-a", f"{first.case_id}-b"]
    assert first.judge_score == GROUNDEDNESS_SCORES[first.case_id]
    assert '"claims"' in first.judge_raw_json
    assert [(b.score, b.key) for b in first.bands] == [(0.0, "1"), (0.5, "2"), (1.0, "3")]
    assert [b.name for b in queue.items[-1].bands] == ["irrelevant", "partial", "relevant"]

    state = queue.state(store, "ann")
    assert (state.next, state.done, state.total) == (first, 0, 8)
    for item in queue.items[:5]:
        queue.record(store, item.case_id, item.metric, 0.5, "ann")
    # A reload is a new queue from the same store: it resumes at the sixth item.
    again = LabelQueue.load(RunStore(store.layout.location), "judged", per_metric=4, seed=3)
    assert again.items == queue.items
    state = again.state(store, "ann")
    assert (state.next, state.done) == (queue.items[5], 5)
    # A second annotator starts at the beginning; the first one's labels stay.
    assert again.state(store, "bob").next == first
    again.record(store, first.case_id, first.metric, 1.0, "bob")
    assert Counter(x.annotator for x in store.labels("judged")) == {"ann": 5, "bob": 1}
    for item in queue.items[5:]:
        queue.record(store, item.case_id, item.metric, 1.0, "ann")
    done = queue.state(store, "ann")
    assert (done.next, done.done, done.total) == (None, 8, 8)


def test_one_metric_alone_and_what_is_refused(tmp_path) -> None:
    store = RunStore(tmp_path / "store")
    write_judged_run(store)
    queue = LabelQueue.load(store, "judged", metric=RELEVANCE, per_metric=3)
    assert [i.metric for i in queue.items] == [RELEVANCE] * 3
    # Any judge-scored case may be labelled, sampled or not; others are refused.
    queue.record(store, "q20", RELEVANCE, 0.0, "ann")
    with pytest.raises(LabelError, match="not a judge-scored case of run judged"):
        queue.record(store, "q20", GROUNDEDNESS, 0.0, "ann")
    with pytest.raises(LabelError, match="not a judge-scored case"):
        queue.record(store, "q01", "robustness.abstention", 1.0, "ann")  # a heuristic score
    with pytest.raises(LabelError, match="score must be a number in"):
        queue.record(store, "q01", RELEVANCE, 1.5, "ann")
    assert [x.case_id for x in store.labels("judged")] == ["q20"]
    with pytest.raises(LabelError, match="the judge scored no case of it"):
        LabelQueue.load(store, "judged", metric="robustness.abstention")
    with pytest.raises(LabelError, match="sample must be at least 1"):
        LabelQueue.load(store, "judged", per_metric=0)
    with pytest.raises(RunNotFound):
        LabelQueue.load(store, "nope")


def test_a_rubric_metric_of_the_runs_own_is_labelled_on_its_own_bands(tmp_path) -> None:
    # Issue 39, item 7: a 4-band rubric was shown with the generic no/partly/yes.
    store = RunStore(tmp_path / "store")
    write_judged_run(store, rubric=True)
    queue = LabelQueue.load(store, "judged", metric=RUBRIC, per_metric=6)
    assert sorted(i.case_id for i in queue.items) == sorted(RUBRIC_VERDICTS)
    assert [(b.score, b.name, b.key) for b in queue.items[0].bands] == [
        (0.0, "none", "1"),
        (1 / 3, "some", "2"),
        (2 / 3, "most", "3"),
        (1.0, "all", "4"),
    ]
    label_id, label = queue.record(store, "q03", RUBRIC, 1 / 3, "ann")
    assert (label.score, store.labels("judged")[0].score) == (1 / 3, 1 / 3)
    assert label_id.endswith(tuple("0123456789abcdef"))
    # The whole run's queue holds it beside the shipped metrics, which keep their bands.
    everything = LabelQueue.load(store, "judged", per_metric=2)
    bands = {i.metric: [b.name for b in i.bands] for i in everything.items}
    assert bands[RUBRIC] == list(RUBRIC_BANDS)
    assert bands[RELEVANCE] == ["irrelevant", "partial", "relevant"]
