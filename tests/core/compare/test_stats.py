import itertools

import numpy as np
import pytest

from ragproof_core.compare.stats import (
    bootstrap_mean_cis,
    paired_bootstrap_ci,
    paired_randomization_p,
)


def test_exact_enumeration_p_for_four_equal_deltas():
    # 2**4 = 16 sign vectors; only all-plus and all-minus reach |mean| >= 1.
    assert paired_randomization_p([1, 1, 1, 1]) == 2 / 16 == 0.125


def test_exact_enumeration_counts_ties_with_zero_deltas():
    # Nonzero deltas 0.5, 0.5, 1 (sum 2): only the two same-sign labellings of
    # those reach |sum| >= 2; the zero's sign is free, doubling the count.
    assert paired_randomization_p([0.5, 0.5, 0.0, 1.0]) == 4 / 16


def test_exact_enumeration_with_one_opposite_delta():
    # Nine deltas of magnitude 1 (eight -1, one +1) plus a zero: |9 - 2k| >= 7
    # for k in {0, 1, 8, 9} minus signs -> 1 + 9 + 9 + 1 = 20, doubled by the zero.
    assert paired_randomization_p([-1] * 8 + [1, 0]) == 40 / 1024


def test_monte_carlo_formula_counts_the_observed_labelling_once():
    # 2**20 > 3 permutations, so Monte Carlo: three random sign vectors almost
    # surely never reach |mean| = 1 (chance 2/2**20 each); the seed makes it certain.
    assert paired_randomization_p([1.0] * 20, permutations=3, seed=0) == 1 / 4


def test_exact_enumeration_matches_a_brute_force_in_integers():
    tenths = [3, -1, 4, 2, -2, 5, 1, 0, 3, -4, 2, 6, 1]
    observed = abs(sum(tenths))
    hits = sum(
        abs(sum(s * d for s, d in zip(signs, tenths, strict=True))) >= observed
        for signs in itertools.product((1, -1), repeat=len(tenths))
    )
    exact = paired_randomization_p([t / 10 for t in tenths], permutations=2**13)
    assert exact == hits / 2**13
    # One permutation fewer than 2**13 switches to Monte Carlo, which lands close.
    sampled = paired_randomization_p([t / 10 for t in tenths], permutations=2**13 - 1, seed=7)
    assert abs(sampled - exact) < 0.02


def test_same_inputs_give_identical_results_on_every_call():
    deltas = np.random.default_rng(3).normal(0.05, 0.3, 200).tolist()
    assert paired_randomization_p(deltas) == paired_randomization_p(deltas)
    assert paired_bootstrap_ci(deltas) == paired_bootstrap_ci(deltas)
    assert paired_bootstrap_ci(deltas, seed=1) != paired_bootstrap_ci(deltas, seed=2)


def test_no_deltas_gives_no_result():
    assert paired_randomization_p([]) is None
    assert paired_bootstrap_ci([]) is None


def test_all_zero_deltas():
    assert paired_randomization_p([0.0] * 50) == 1.0
    assert paired_bootstrap_ci([0.0] * 50) == (0.0, 0.0)


def test_constant_deltas_have_a_degenerate_interval():
    assert paired_bootstrap_ci([0.5] * 8) == (0.5, 0.5)


def test_bootstrap_interval_of_two_values():
    # Resample means of {0, 1} (n=2) are 0, 0.5 or 1 with chances 1/4, 1/2, 1/4:
    # the 2.5% and 97.5% percentiles are 0 and 1.
    assert paired_bootstrap_ci([0.0, 1.0]) == (0.0, 1.0)


def test_large_inputs_are_processed_in_blocks():
    # n = 10,000 spans several blocks of resamples; the interval must bracket
    # the mean, and the test must not flag a 0.1 shift on 10,000 cases as chance.
    deltas = np.random.default_rng(11).normal(0.1, 0.3, 10_000)
    low, high = paired_bootstrap_ci(deltas, resamples=1000)
    assert low < deltas.mean() < high
    assert high - low < 0.02
    assert paired_randomization_p(deltas, permutations=1000) == 1 / 1001


def test_bad_inputs_are_rejected():
    with pytest.raises(ValueError, match="finite"):
        paired_randomization_p([0.1, float("nan")])
    with pytest.raises(ValueError, match="confidence"):
        paired_bootstrap_ci([0.1], confidence=1.5)


def test_intervals_drawn_together_equal_each_drawn_alone_bit_for_bit():
    # Columns of one length share the drawn indices; lengths differ, an all-zero and an
    # empty column keep their own answers; 5,000 values x 10,000 resamples take blocks.
    rng = np.random.default_rng(3)
    columns = [
        rng.random(100),
        np.zeros(100),
        rng.random(37),
        [],
        rng.normal(0.1, 0.3, 100),
        [0.5] * 8,
        rng.random(5_000),
    ]
    alone = [paired_bootstrap_ci(c, resamples=10_000, seed=4) for c in columns]
    assert bootstrap_mean_cis(columns, resamples=10_000, seed=4) == alone
    assert alone[1] == (0.0, 0.0) and alone[3] is None
    assert bootstrap_mean_cis([[], []]) == [None, None]
