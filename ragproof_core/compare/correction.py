"""Correcting p-values for testing many metrics at once (CONTRACT section 19).

A comparison tests every metric both runs scored, fifteen or so: at p < 0.05
each, two runs that differ in nothing would flag at least one "significant"
metric about half the time. Holm's step-down method keeps the chance of any
false flag at alpha, whatever the dependence between the metrics, and never
flags fewer than Bonferroni would.
"""

from __future__ import annotations

from collections.abc import Sequence

HOLM = "holm"
NONE = "none"
CORRECTIONS: tuple[str, ...] = (HOLM, NONE)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's adjusted p-values, in the order given.

    With the m p-values sorted ascending, p(1) <= ... <= p(m), the adjusted
    p(i) is max over j <= i of min(1, (m - j + 1) * p(j)): the running maximum
    keeps the adjusted values in the order of the raw ones. Example: 0.01,
    0.04, 0.03 -> 0.03, 0.06, 0.06.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def adjust(p_values: Sequence[float], correction: str) -> list[float]:
    """``p_values`` adjusted by ``correction`` (``holm``; ``none`` returns them as they are)."""
    if correction == HOLM:
        return holm(p_values)
    if correction == NONE:
        return list(p_values)
    raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}, got {correction!r}")
