"""Bias-corrected means from stored labels: several annotators' scores averaged per
case, PPI figures checked against numpy, and the annotators' and the judge's agreement
(Krippendorff's alpha) checked against the `krippendorff` package."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import krippendorff
import numpy as np
import pytest

from ragproof_core.calibration.agreement import band
from ragproof_core.calibration.stored_calibration import calibrate_stored
from ragproof_core.store.labels import new_label
from ragproof_core.store.run_store import RunStore
from tests.support.judged_run import (
    GROUNDEDNESS,
    GROUNDEDNESS_SCORES,
    RELEVANCE,
    RELEVANCE_SCORES,
    write_judged_run,
)

T = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
# (annotator, case, score) on answer_relevance; bob and ann disagree on q11 and q17.
ANN = {"q01": 1.0, "q02": 1.0, "q11": 0.5, "q12": 0.0, "q17": 0.0, "q18": 0.5}
BOB = {"q01": 1.0, "q11": 0.0, "q17": 0.5, "q18": 0.5, "q19": 0.0}


def stored(tmp_path) -> RunStore:
    store = RunStore(tmp_path / "store")
    write_judged_run(store)
    minute = 0
    for annotator, scores in (("ann", ANN), ("bob", BOB)):
        for case_id, score in scores.items():
            minute += 1
            now = T + timedelta(minutes=minute)
            store.write_label(new_label("judged", case_id, RELEVANCE, score, annotator, now=now))
    # ann labels one groundedness case, and one case the judge never scored for it.
    store.write_label(new_label("judged", "q02", GROUNDEDNESS, 0.5, "ann", now=T))
    store.write_label(new_label("judged", "q20", GROUNDEDNESS, 1.0, "ann", now=T))
    return store


def test_ppi_from_stored_labels_equals_numpy(tmp_path) -> None:
    store = stored(tmp_path)
    result = calibrate_stored("judged", store.case_results_frame("judged"), store.labels("judged"))
    relevance = next(m for m in result.metrics if m.metric == RELEVANCE).estimate

    labelled = sorted(set(ANN) | set(BOB))
    y = np.array([np.mean([s[c] for s in (ANN, BOB) if c in s]) for c in labelled])
    f_l = np.array([RELEVANCE_SCORES[c] for c in labelled])
    f_u = np.array([s for c, s in sorted(RELEVANCE_SCORES.items()) if c not in labelled])
    n, rest = len(labelled), len(f_u)
    ppi = f_u.mean() + (y - f_l).mean()
    half = 1.96 * np.sqrt(f_u.var(ddof=1) / rest + (y - f_l).var(ddof=1) / n)
    human_half = 1.96 * y.std(ddof=1) / np.sqrt(n)
    f_all = np.concatenate([f_l, f_u])
    judge_half = 1.96 * f_all.std(ddof=1) / np.sqrt(20)
    assert (relevance.n_judged, relevance.n_labelled) == (20, 7)
    assert relevance.ppi_mean == pytest.approx(ppi, abs=1e-12)
    assert relevance.ppi_ci == pytest.approx(
        (max(0.0, ppi - half), min(1.0, ppi + half)), abs=1e-12
    )
    assert relevance.human_mean == pytest.approx(y.mean(), abs=1e-12)
    assert relevance.human_ci == pytest.approx(
        (max(0.0, y.mean() - human_half), min(1.0, y.mean() + human_half))
    )
    assert relevance.judge_mean == pytest.approx(f_all.mean(), abs=1e-12)
    assert relevance.judge_ci == pytest.approx(
        (f_all.mean() - judge_half, f_all.mean() + judge_half)
    )
    # One groundedness label: n = 1, so its human and PPI figures are null.
    grounded = next(m for m in result.metrics if m.metric == GROUNDEDNESS)
    assert (grounded.estimate.n_labelled, grounded.estimate.ppi_mean) == (1, None)
    assert result.unmatched == (
        {
            "run_id": "judged",
            "case_id": "q20",
            "metric": GROUNDEDNESS,
            "score": 1.0,
            "annotator": "ann",
            "labelled_at": T.isoformat(),
        },
    )


def test_annotator_and_judge_agreement_equal_the_krippendorff_package(tmp_path) -> None:
    store = stored(tmp_path)
    result = calibrate_stored("judged", store.case_results_frame("judged"), store.labels("judged"))
    agreement = next(m for m in result.metrics if m.metric == RELEVANCE).agreement
    labelled = sorted(set(ANN) | set(BOB))
    people = np.array([[band(s[c]) if c in s else np.nan for c in labelled] for s in (ANN, BOB)])
    judge = np.array([[band(RELEVANCE_SCORES[c]) for c in labelled]])
    assert agreement.annotators == 2
    assert agreement.annotator_alpha == pytest.approx(
        krippendorff.alpha(reliability_data=people, level_of_measurement="interval"), abs=1e-12
    )
    assert agreement.judge_alpha == pytest.approx(
        krippendorff.alpha(
            reliability_data=np.vstack([people, judge]), level_of_measurement="interval"
        ),
        abs=1e-12,
    )
    # One annotator: no alpha among annotators; the judge's agreement with that one person.
    grounded = next(m for m in result.metrics if m.metric == GROUNDEDNESS).agreement
    assert (grounded.annotators, grounded.annotator_alpha) == (1, None)
    # One unit, q02: the person's 0.5 and the judge's 0.25 (band 0.5) agree, and with no
    # variation at all alpha is undefined.
    assert band(GROUNDEDNESS_SCORES["q02"]) == 0.5
    assert grounded.judge_alpha is None
    # The dict the CLI prints carries the agreement after the contract's keys.
    shown = next(m for m in result.to_dict()["metrics"] if m["metric"] == RELEVANCE)
    assert list(shown)[-3:] == ["annotators", "annotator_alpha", "judge_alpha"]
