"""Statistical power: how small a change a comparison can see, and how many cases a
planned one needs (CONTRACT section 12). Two-sided alpha 0.05, power 80%.

- ``mde``: the minimum detectable effect of a paired comparison over ``n``
  paired differences d, ``(z_alpha + z_power) * sd(d) / sqrt(n)``. A true
  change of that size is found significant four times in five.
- ``cases_needed``: cases for a change of ``delta`` given a metric's per-case
  standard deviation, ``ceil(((z_alpha + z_power) * sd / delta) ** 2)``. It
  uses one run's spread of scores, not the spread of paired differences
  (unknown before the second run); pairing usually cancels much of the
  per-case spread, so the paired design usually needs fewer.

Standard deviations are sample ones (ddof 1): None with fewer than 2 values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

Z_ALPHA = 1.96  # two-sided alpha = 0.05
Z_POWER = 0.8416  # power = 0.80
Z_SUM = Z_ALPHA + Z_POWER


def sample_sd(values: Sequence[float]) -> float | None:
    arr = np.asarray(values, dtype=np.float64)
    if arr.size < 2:
        return None
    return float(arr.std(ddof=1))


def mde(deltas: Sequence[float]) -> float | None:
    """Minimum detectable effect over paired differences; None for fewer than 2."""
    sd = sample_sd(deltas)
    if sd is None:
        return None
    return Z_SUM * sd / math.sqrt(len(deltas))


def cases_needed(sd: float | None, delta: float) -> int | None:
    """Cases to detect a change of ``delta`` (> 0) for a metric with per-case ``sd``."""
    if delta <= 0:
        raise ValueError(f"delta must be positive, got {delta}")
    if sd is None:
        return None
    return math.ceil((Z_SUM * sd / delta) ** 2)
