"""Confusion matrix and quadratic-weighted kappa on hand-checked examples."""

from __future__ import annotations

import pytest

from ragproof_core.calibration.agreement import band, confusion_matrix, quadratic_kappa

# (human, judge) pairs giving the matrix [[3, 1, 0], [1, 2, 1], [0, 1, 3]]
HUMAN = [0, 0, 0, 0, 0.5, 0.5, 0.5, 0.5, 1, 1, 1, 1]
JUDGE = [0, 0.1, 0.2, 0.5, 0, 0.5, 0.6, 1, 0.5, 1, 0.9, 0.75]


def test_confusion_matrix_rows_are_human_bands_columns_judge_bands() -> None:
    assert confusion_matrix(HUMAN, JUDGE) == [[3, 1, 0], [1, 2, 1], [0, 1, 3]]


def test_quadratic_kappa_by_hand() -> None:
    # Weights (i-j)^2/4: one-band misses 0.25, two-band misses 1. Observed: four
    # one-band misses = 1.0. Expected: every margin is 4 of 12, so each cell
    # expects 4/3; the weights sum to 3, giving 4. kappa = 1 - 1/4.
    assert quadratic_kappa([[3, 1, 0], [1, 2, 1], [0, 1, 3]]) == pytest.approx(0.75, abs=1e-15)


def test_a_two_band_miss_weighs_four_one_band_misses() -> None:
    # Rows [1, 0, 1], columns [1, 0, 1]; observed: two far misses = 2 * 1;
    # expected: E_02 = E_20 = 1/2 with weight 1, E_00 = E_22 = 1/2 weight 0 -> 1.
    assert quadratic_kappa([[0, 0, 1], [0, 0, 0], [1, 0, 0]]) == -1.0


def test_kappa_is_undefined_without_pairs_or_with_one_shared_band() -> None:
    assert quadratic_kappa([[0, 0, 0], [0, 0, 0], [0, 0, 0]]) is None
    assert quadratic_kappa([[0, 0, 0], [0, 5, 0], [0, 0, 0]]) is None
    assert quadratic_kappa([[2, 0, 0], [0, 2, 0], [0, 0, 2]]) == 1.0


def test_bands_tie_upwards() -> None:
    assert [band(x) for x in (0.0, 0.249, 0.25, 0.5, 0.749, 0.75, 1.0)] == [
        0.0,
        0.0,
        0.5,
        0.5,
        0.5,
        1.0,
        1.0,
    ]


def test_unequal_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="2 human scores but 1 judge scores"):
        confusion_matrix([0, 1], [1])
