"""Minimum detectable effect and cases needed against closed-form examples."""

from __future__ import annotations

import math

import pytest

from ragproof_core.compare.power import Z_SUM, cases_needed, mde, sample_sd


def test_mde_of_four_paired_differences() -> None:
    # d = [0, 0, 1, 1]: mean 0.5, squared deviations 4 * 0.25 = 1, sample
    # variance 1/3, sd = 1/sqrt(3); mde = 2.8016 * sd / sqrt(4).
    assert abs(Z_SUM - 2.8016) < 1e-12
    assert mde([0, 0, 1, 1]) == pytest.approx(2.8016 / math.sqrt(3) / 2, rel=1e-12)
    assert mde([0, 0, 1, 1]) == pytest.approx(0.80875226, abs=1e-8)


def test_mde_needs_two_differences() -> None:
    assert mde([]) is None
    assert mde([0.3]) is None
    assert mde([0.5, 0.5]) == 0.0


def test_cases_needed_by_hand() -> None:
    # sd 0.5, delta 0.1: (2.8016 * 0.5 / 0.1)^2 = 14.008^2 = 196.224064 -> 197.
    assert cases_needed(0.5, 0.1) == 197
    # sd 0.3, delta 0.05: (2.8016 * 6)^2 = 16.8096^2 = 282.56... -> 283.
    assert cases_needed(0.3, 0.05) == 283
    assert cases_needed(None, 0.1) is None
    assert cases_needed(0.0, 0.1) == 0
    with pytest.raises(ValueError, match="delta must be positive"):
        cases_needed(0.5, 0.0)


def test_sample_sd_uses_ddof_one() -> None:
    assert sample_sd([1, 2, 3, 4]) == pytest.approx(math.sqrt(5 / 3), rel=1e-15)
    assert sample_sd([1]) is None
