"""`ragproof calibrate --run RUN_ID` without --labels: the labels people stored, on a
local store and on S3 (moto on loopback); PPI figures against numpy, the annotators'
agreement beside the judge's, the result stored and shown by `show`, the labels in
the `labels` view through `ragproof sql`."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from ragproof_core.store.labels import new_label
from ragproof_core.store.run_store import RunStore
from tests.support.cli import ragproof
from tests.support.judged_run import RELEVANCE, RELEVANCE_SCORES, write_judged_run

pytestmark = pytest.mark.slow
T = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
ANN = {"q01": 1.0, "q11": 0.5, "q12": 0.0, "q17": 0.0}
BOB = {"q01": 1.0, "q11": 0.0, "q17": 0.5, "q19": 0.0}


def test_calibrate_run_uses_the_stored_labels(any_store) -> None:
    store = RunStore(any_store.location)
    write_judged_run(store)
    for minute, (annotator, case_id, score) in enumerate(
        [("ann", c, s) for c, s in ANN.items()] + [("bob", c, s) for c, s in BOB.items()]
    ):
        now = T + timedelta(minutes=minute)
        store.write_label(new_label("judged", case_id, RELEVANCE, score, annotator, now=now))

    done = ragproof("calibrate", "--run", "judged", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert list(result) == ["run_id", "metrics", "unmatched"]
    assert result["unmatched"] == []
    relevance = next(m for m in result["metrics"] if m["metric"] == RELEVANCE)
    labelled = sorted(set(ANN) | set(BOB))
    y = np.array([np.mean([s[c] for s in (ANN, BOB) if c in s]) for c in labelled])
    f_l = np.array([RELEVANCE_SCORES[c] for c in labelled])
    f_u = np.array([s for c, s in sorted(RELEVANCE_SCORES.items()) if c not in labelled])
    ppi = f_u.mean() + (y - f_l).mean()
    half = 1.96 * np.sqrt(f_u.var(ddof=1) / len(f_u) + (y - f_l).var(ddof=1) / len(y))
    assert (relevance["n_judged"], relevance["n_labelled"]) == (20, 5)
    assert relevance["ppi_mean"] == pytest.approx(ppi, abs=1e-12)
    assert relevance["ppi_ci"] == pytest.approx(
        [max(0.0, ppi - half), min(1.0, ppi + half)], abs=1e-12
    )
    assert relevance["human_mean"] == pytest.approx(y.mean(), abs=1e-12)
    assert relevance["annotators"] == 2
    assert isinstance(relevance["annotator_alpha"], float)
    assert isinstance(relevance["judge_alpha"], float)

    # Stored: `show` puts the corrected mean, the label count and the agreement beside
    # the raw mean; the labels view holds every label.
    shown = ragproof("show", "judged", "--json")
    assert shown.returncode == 0, shown.stderr
    calibrated = json.loads(shown.stdout)["calibrations"][RELEVANCE]
    assert calibrated["n_labelled"] == 5
    assert calibrated["ppi_mean"] == pytest.approx(ppi, abs=1e-12)
    assert calibrated["annotators"] == 2
    assert calibrated["annotator_alpha"] == relevance["annotator_alpha"]
    counted = ragproof(
        "sql",
        "SELECT annotator, count(*) AS n FROM labels GROUP BY annotator ORDER BY annotator",
        "--json",
    )
    assert counted.returncode == 0, counted.stderr
    assert json.loads(counted.stdout) == [
        {"annotator": "ann", "n": 4},
        {"annotator": "bob", "n": 4},
    ]
    assert any_store.query(
        "SELECT labels_file, annotators FROM calibrations WHERE metric = ?", [RELEVANCE]
    ) == [(None, 2)]
