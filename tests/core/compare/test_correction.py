"""Holm's adjusted p-values (CONTRACT section 19) against a reference computed here.

The reference does not use the adjusted-p formula: it runs Holm's step-down
procedure itself (reject the smallest p while p(i) <= alpha / (m - i + 1),
stop at the first that fails) and finds, for each hypothesis, the smallest
alpha at which it is rejected. That alpha is, by definition, its adjusted p.
"""

from __future__ import annotations

import random

import pytest

from ragproof_core.compare.correction import adjust, holm


def step_down_rejects(p_values: list[float], alpha: float) -> set[int]:
    """Holm's procedure at level ``alpha``: the indices it rejects."""
    m = len(p_values)
    rejected: set[int] = set()
    for rank, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        if p_values[index] * (m - rank) > alpha:
            break
        rejected.add(index)
    return rejected


def smallest_rejecting_alpha(p_values: list[float], index: int) -> float:
    """The least alpha below 1 at which Holm's procedure rejects hypothesis ``index``
    (1.0 if none: an adjusted p is at most 1). Each rejection happens at one of the
    thresholds p(j) * (m - j + 1), so try them all."""
    m = len(p_values)
    candidates = sorted({p * (m - rank) for p in p_values for rank in range(m)} - {1.0})
    rejecting = (a for a in candidates if a < 1.0 and index in step_down_rejects(p_values, a))
    return next(rejecting, 1.0)


def test_the_worked_example():
    # Sorted 0.01, 0.03, 0.04: 3 x 0.01, 2 x 0.03, max(0.06, 1 x 0.04).
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06], abs=1e-15)


@pytest.mark.parametrize("seed", range(40))
def test_holm_equals_the_step_down_procedure(seed):
    rng = random.Random(seed)
    m = rng.randint(1, 15)
    # Coarse values so that ties and adjusted values past 1 both occur.
    p_values = [
        rng.choice((0.0001, 0.001, 0.004, 0.01, 0.02, 0.05, 0.2, 0.5, 1.0)) for _ in range(m)
    ]
    adjusted = holm(p_values)
    for index in range(m):
        assert adjusted[index] == smallest_rejecting_alpha(p_values, index), (p_values, index)
    assert all(p <= a <= 1.0 for p, a in zip(p_values, adjusted, strict=True))


def test_none_keeps_the_p_values_and_an_unknown_correction_is_refused():
    assert adjust([0.2, 0.01], "none") == [0.2, 0.01]
    assert adjust([0.2, 0.01], "holm") == [0.2, 0.02]
    assert adjust([], "holm") == []
    with pytest.raises(ValueError, match="correction must be one of holm, none"):
        adjust([0.1], "bonferroni")
