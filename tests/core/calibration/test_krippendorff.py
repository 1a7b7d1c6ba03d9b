"""Krippendorff's alpha for interval and ordinal data, against a hand computation, the
published reference values and the `krippendorff` package from PyPI."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from ragproof_core.calibration.krippendorff import krippendorff_alpha

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: four
# coders, twelve units, missing values as None. Published: interval 0.849, ordinal 0.815.
CODERS = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]
UNITS = [list(unit) for unit in zip(*CODERS, strict=True)]


def test_by_hand() -> None:
    # Units (0, 0), (1, 1), (0, 1): o00 = o11 = 2, o01 = o10 = 1; n0 = n1 = 3, n = 6.
    # Interval: D_o = 2 / 6, D_e = 2 * 3 * 3 / (6 * 5) = 0.6, alpha = 1 - (1/3) / 0.6 = 4/9.
    # Ordinal: d01 = (3 + 3 - (3 + 3) / 2)^2 = 9; D_o = 18 / 6, D_e = 18 * 9 / 30: also 4/9.
    units = [[0, 0], [1, 1], [0, 1]]
    assert krippendorff_alpha(units, "interval") == pytest.approx(4 / 9, abs=1e-12)
    assert krippendorff_alpha(units, "ordinal") == pytest.approx(4 / 9, abs=1e-12)


def test_the_published_reference_values() -> None:
    assert round(krippendorff_alpha(UNITS, "interval"), 3) == 0.849
    assert round(krippendorff_alpha(UNITS, "ordinal"), 3) == 0.815


@pytest.mark.parametrize("level", ["interval", "ordinal"])
def test_equal_to_the_krippendorff_package(level: str) -> None:
    rng = np.random.default_rng(25)
    for _ in range(30):
        coders, units = int(rng.integers(2, 5)), int(rng.integers(3, 40))
        data = rng.choice([0.0, 0.5, 1.0], size=(coders, units), p=[0.2, 0.3, 0.5])
        data[rng.random((coders, units)) < 0.2] = np.nan
        ours = krippendorff_alpha(
            [[None if np.isnan(v) else float(v) for v in unit] for unit in data.T], level
        )
        try:
            theirs = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        except ValueError:  # the package refuses data with one value only
            assert ours is None
            continue
        if np.isnan(theirs):
            assert ours is None
        else:
            assert ours == pytest.approx(theirs, abs=1e-12)
    data = np.array(CODERS, dtype=float)  # None -> nan
    assert krippendorff_alpha(UNITS, level) == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement=level), abs=1e-12
    )


def test_undefined_cases() -> None:
    assert krippendorff_alpha([[1, 1], [1, 1]]) is None  # no variation
    assert krippendorff_alpha([[1, None], [0]]) is None  # nothing pairable
    assert krippendorff_alpha([], "ordinal") is None
    with pytest.raises(ValueError, match="unknown level 'nominal'"):
        krippendorff_alpha([[0, 1]], "nominal")
