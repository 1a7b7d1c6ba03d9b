"""A binomial proportion's 95% interval: the Wilson score interval.

For ``k`` successes in ``n`` trials, p = k / n and z = 1.96:

    centre = (p + z^2 / (2n)) / (1 + z^2 / n)
    half   = z / (1 + z^2 / n) * sqrt(p (1 - p) / n + z^2 / (4 n^2))

Wilson rather than the normal (Wald) interval because probe shares sit near 0
with a few dozen cases, where Wald's interval collapses to [0, 0] for k = 0;
Wilson's stays inside [0, 1] and keeps close to its nominal coverage there.
"""

from __future__ import annotations

import math

Z = 1.96


def wilson_interval(k: int, n: int, z: float = Z) -> tuple[float, float] | None:
    """The Wilson score interval of ``k`` of ``n``; None when ``n`` is 0."""
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return None
    p = k / n
    scale = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / scale
    half = z / scale * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (max(0.0, centre - half), min(1.0, centre + half))
