"""The labelling page's data: the case without the judge's verdict, the verdict after the
person's score, and the tally's bias-corrected mean (CONTRACT sections 12 and 22)."""

import json
from datetime import UTC, datetime

import numpy as np
import pytest

from ragproof_core.calibration.label_queue import LabelQueue
from ragproof_core.present.label_page import (
    LabelSession,
    item_view,
    label_page_data,
    label_tally,
    verdict,
)
from ragproof_core.store.labels import new_label
from ragproof_core.store.run_store import RunStore
from tests.support.judged_run import (
    GROUNDEDNESS,
    GROUNDEDNESS_SCORES,
    RELEVANCE,
    write_judged_run,
)

T = datetime(2026, 12, 2, tzinfo=UTC)


@pytest.fixture
def store(tmp_path) -> RunStore:
    store = RunStore(tmp_path / "store")
    write_judged_run(store)
    return store


def test_the_page_shows_no_verdict_before_the_score(store):
    session = LabelSession("judged", GROUNDEDNESS, 5, 3, "ann")
    queue = LabelQueue.load(store, "judged", metric=GROUNDEDNESS, per_metric=5, seed=3)
    state = queue.state(store, "ann")
    data = label_page_data(session, queue, state, store.labels("judged"))
    text = json.dumps(data)
    assert "judge_" not in text and '"claims"' not in text and '"supported"' not in text
    first = state.next
    assert data["case"] == item_view(first)
    assert data["case"]["context"] == [
        {"id": f"{first.case_id}-a", "text": f"Item {first.case_id} says yes."},
        {"id": f"{first.case_id}-b", "text": "Unrelated text."},
    ]
    assert [(b["key"], b["score"]) for b in data["bands"]] == [("1", 0.0), ("2", 0.5), ("3", 1.0)]
    assert (data["done"], data["total"], data["tally"]) == (0, 5, [])
    # Once scored, the verdict: the judge's score, its band and the reply verbatim.
    shown = verdict(first, 0.0)
    assert shown["judge_score"] == GROUNDEDNESS_SCORES[first.case_id]
    assert shown["agree"] is (shown["judge_band"] == 0.0)
    assert json.loads(shown["judge_reason"])["claims"]


def test_the_tally_is_section_12s_ppi_over_each_cases_mean_label(store):
    judged = LabelQueue.load(store, "judged", metric=GROUNDEDNESS).judged
    labels = [
        new_label("judged", "q01", GROUNDEDNESS, 1.0, "ann", now=T),
        new_label("judged", "q02", GROUNDEDNESS, 0.0, "ann", now=T),
        new_label("judged", "q02", GROUNDEDNESS, 0.5, "bob", now=T),
        new_label("judged", "q03", GROUNDEDNESS, 0.5, "bob", now=T),
        new_label("judged", "q04", RELEVANCE, 1.0, "bob", now=T),
        new_label("judged", "q99", GROUNDEDNESS, 1.0, "bob", now=T),  # not judge-scored
    ]
    rows = {row["metric"]: row for row in label_tally(judged, labels)}
    g = rows[GROUNDEDNESS]
    assert (g["labels"], g["annotators"], g["cases"]) == (4, 2, 3)
    f = GROUNDEDNESS_SCORES
    labelled, y = ["q01", "q02", "q03"], np.array([1.0, 0.25, 0.5])
    f_l = np.array([f[c] for c in labelled])
    f_u = np.array([f[c] for c in sorted(set(f) - set(labelled))])
    assert g["judge_mean"] == pytest.approx(np.mean(list(f.values())))
    assert g["human_mean"] == pytest.approx(y.mean())
    assert g["ppi_mean"] == pytest.approx(f_u.mean() + (y - f_l).mean())
    half = 1.96 * np.sqrt(f_u.var(ddof=1) / f_u.size + (y - f_l).var(ddof=1) / y.size)
    assert g["ppi_ci"] == pytest.approx(
        [max(0.0, g["ppi_mean"] - half), min(1.0, g["ppi_mean"] + half)]
    )
    # One labelled case: no PPI interval (n < 2), the count still shown.
    r = rows[RELEVANCE]
    assert (r["labels"], r["ppi_mean"], r["ppi_ci"]) == (1, None, None)
