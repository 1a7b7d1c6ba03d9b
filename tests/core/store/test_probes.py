"""Stored judge bias probes: one file per probe on a local folder and on S3 (moto), the
latest read back for the app, every probe in the ``probes`` view."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ragproof_core.calibration.binomial import wilson_interval
from ragproof_core.calibration.probe import ProbeResult, ProbeRow
from ragproof_core.store.run_store import RunNotFound, RunStore
from tests.support.judged_run import GROUNDEDNESS, RELEVANCE, write_judged_run


@pytest.fixture
def store(local_or_s3_store: RunStore) -> RunStore:
    return local_or_s3_store


def result(changed: int) -> ProbeResult:
    rows = (
        ProbeRow(GROUNDEDNESS, "position", 8, changed, 0),
        ProbeRow(RELEVANCE, "position", 0, 0, 0),
        ProbeRow(RELEVANCE, "verbosity", 10, 6, 1),
    )
    return ProbeResult("judged", "openai/judge-test", 10, 4, rows)


def test_probes_are_stored_and_the_latest_read_back(store: RunStore) -> None:
    write_judged_run(store)
    assert store.probes("judged") == []
    first = store.write_probe(result(1), now=datetime(2026, 12, 2, 9, tzinfo=UTC))
    second = store.write_probe(result(4), now=datetime(2026, 12, 2, 10, tzinfo=UTC))
    latest = store.probes("judged")
    assert [(r["probe_id"], r["metric"], r["perturbation"], r["changed"]) for r in latest] == [
        (second, GROUNDEDNESS, "position", 4),
        (second, RELEVANCE, "position", 0),
        (second, RELEVANCE, "verbosity", 6),
    ]
    assert (latest[0]["share"], latest[0]["ci_low"], latest[0]["ci_high"]) == (
        0.5,
        *wilson_interval(4, 8),
    )
    assert (latest[1]["share"], latest[1]["ci_low"]) == (None, None)  # no cases
    assert (latest[2]["unscored"], latest[2]["sample"], latest[2]["seed"]) == (1, 10, 4)
    assert [r["probe_id"] for r in store.probes("judged", latest=False)] == [first] * 3 + [
        second
    ] * 3
    store.ensure_views()
    with store.connect() as con:
        assert con.execute(
            "SELECT probe_id, count(*), sum(changed) FROM probes GROUP BY probe_id ORDER BY 1"
        ).fetchall() == [(first, 3, 7), (second, 3, 10)]


def test_an_unfinished_run_cannot_be_probed(tmp_path) -> None:
    store = RunStore(tmp_path / "store")
    store.write_manifest("open", {"run_id": "open"})
    with pytest.raises(RunNotFound, match="the run has not finished"):
        store.write_probe(ProbeResult("open", "m", 1, 0, ()))
