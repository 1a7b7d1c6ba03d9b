"""Stored human labels: one file per label, written at once on a local folder and on S3
(moto's server on loopback), read back, the ``labels`` view, resuming from one listing,
concurrent annotators, and bad labels refused with nothing written."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from ragproof_core.store.labels import LabelError, new_label
from ragproof_core.store.run_store import RunNotFound, RunStore
from tests.support.judged_run import GROUNDEDNESS, RELEVANCE, write_judged_run

T = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)


@pytest.fixture
def store(local_or_s3_store: RunStore) -> RunStore:
    return local_or_s3_store


def _label(case_id: str, score: float, annotator: str, minutes: int, metric: str = RELEVANCE):
    moment = T + timedelta(minutes=minutes)
    return new_label("judged", case_id, metric, score, annotator, now=moment)


def test_labels_are_written_at_once_read_back_and_in_the_view(store: RunStore) -> None:
    write_judged_run(store)
    assert store.labels("judged") == []
    first = _label("q01", 1.0, "ann", 0)
    store.write_label(first)
    # At once: a fresh store object (another process's view) reads it back.
    assert RunStore(store.layout.location).labels("judged") == [first]
    store.write_label(_label("q02", 0.5, "ann", 1))
    store.write_label(_label("q01", 0.0, "bob", 2))
    store.write_label(_label("q01", 0.5, "ann", 3))  # ann changes her mind about q01
    store.write_label(_label("q03", 1.0, "bob", 4, GROUNDEDNESS))

    current = [(x.case_id, x.metric, x.score, x.annotator) for x in store.labels("judged")]
    assert current == [
        ("q02", RELEVANCE, 0.5, "ann"),
        ("q01", RELEVANCE, 0.0, "bob"),
        ("q01", RELEVANCE, 0.5, "ann"),
        ("q03", GROUNDEDNESS, 1.0, "bob"),
    ]
    assert [x.case_id for x in store.labels("judged", annotator="bob")] == ["q01", "q03"]
    assert store.labels("judged")[0].labelled_at == T + timedelta(minutes=1)

    store.ensure_views()
    with store.connect() as con:
        rows = con.execute(
            "SELECT run_id, case_id, metric, score, annotator, labelled_at FROM labels"
        ).fetchall()
    assert [(r[1], r[3], r[4]) for r in rows] == [
        ("q02", 0.5, "ann"),
        ("q01", 0.0, "bob"),
        ("q01", 0.5, "ann"),
        ("q03", 1.0, "bob"),
    ]
    assert {r[0] for r in rows} == {"judged"}
    assert rows[0][5] == T + timedelta(minutes=1)


def test_resume_reads_which_items_an_annotator_labelled_from_one_listing(store) -> None:
    write_judged_run(store)
    store.write_label(_label("q01", 1.0, "ann", 0))
    store.write_label(_label("q02", 1.0, "bob", 1))
    store.write_label(_label("q03", 1.0, "ann", 2, GROUNDEDNESS))
    items = [("q01", RELEVANCE), ("q02", RELEVANCE), ("q03", GROUNDEDNESS), ("q03", RELEVANCE)]
    assert store.labelled("judged", "ann", items) == {("q01", RELEVANCE), ("q03", GROUNDEDNESS)}
    assert store.labelled("judged", "bob", items) == {("q02", RELEVANCE)}
    assert store.labelled("judged", "carol", items) == set()


def test_concurrent_annotators_never_lose_a_write(store: RunStore) -> None:
    write_judged_run(store)
    labels = [
        _label(f"q{i:02d}", 1.0, annotator, i)
        for annotator in ("ann", "bob", "carol")
        for i in range(1, 11)
    ]
    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(lambda label: RunStore(store.layout.location).write_label(label), labels))
    assert sorted(store.labels("judged"), key=lambda x: (x.annotator, x.case_id)) == sorted(
        labels, key=lambda x: (x.annotator, x.case_id)
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("score", 2, "score must be a number in [0, 1], got 2"),
        ("score", True, "score must be a number in [0, 1], got True"),
        ("score", float("nan"), "score must be a number in [0, 1], got nan"),
        ("score", "1", "score must be a number in [0, 1], got '1'"),
        ("annotator", "  ", "annotator must be a non-empty name"),
        ("annotator", "a\nb", "annotator must not hold control characters"),
        ("annotator", "x" * 65, "annotator must be at most 64 characters"),
        ("case_id", "", "case_id must be a non-empty string"),
    ],
)
def test_a_bad_label_is_refused_naming_its_field(field, value, message) -> None:
    given = {"case_id": "q01", "score": 1.0, "annotator": "ann", field: value}
    with pytest.raises(LabelError) as error:
        new_label("judged", given["case_id"], RELEVANCE, given["score"], given["annotator"])
    assert str(error.value) == message


def test_labels_of_an_unfinished_run_are_refused_and_nothing_is_written(tmp_path) -> None:
    store = RunStore(tmp_path / "store")
    store.write_manifest("open", {"run_id": "open"})
    with pytest.raises(RunNotFound, match="the run has not finished"):
        store.write_label(new_label("open", "q01", RELEVANCE, 1.0, "ann"))
    assert not store.layout.record_dir("open", "labels").exists()
    with pytest.raises(RunNotFound):
        store.labels("missing")
