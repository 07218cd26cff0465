"""The paired sign-flip test of "no drop": exact against SciPy's enumeration and McNemar's exact test,
Monte Carlo and normal paths against the exact distribution, and its size under exchangeable runs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evalcore.engine import paired_tests
from evalcore.engine.paired_tests import ENUMERATE_MAX, STOP_AFTER, drop_test


def scipy_sign_flip(diffs, *, n_resamples=np.inf, seed=0):
    """SciPy's paired randomization test of the sum, one-sided towards a drop."""
    return stats.permutation_test(
        (np.asarray(diffs, dtype=float),),
        np.sum,
        permutation_type="samples",
        alternative="less",
        n_resamples=n_resamples,
        rng=np.random.default_rng(seed),
    ).pvalue


@pytest.mark.parametrize("seed", range(6))
def test_exact_path_equals_scipys_enumeration_of_every_sign_pattern(seed):
    rng = np.random.default_rng(seed)
    diffs = rng.normal(-0.05, 0.2, 14) * (rng.random(14) < 0.85)
    result = drop_test(diffs)
    assert result.method == "exact"
    assert result.p_value == pytest.approx(scipy_sign_flip(diffs), rel=1e-12)


@pytest.mark.parametrize(("fell", "rose"), [(9, 2), (16, 6), (0, 5), (40, 25), (300, 240)])
def test_pass_fail_differences_give_mcnemars_exact_test(fell, rose):
    diffs = [-1.0] * fell + [1.0] * rose + [0.0] * 50
    expected = stats.binomtest(rose, fell + rose, 0.5, alternative="less").pvalue
    assert drop_test(diffs).p_value == pytest.approx(expected, rel=1e-10)


def subset_sum_cdf(units, observed):
    """``P(sum of a random half of the integer amounts <= observed)`` by dynamic programming over the sums (no FFT)."""
    counts = np.zeros(int(np.sum(units)) + 1)
    counts[0] = 1.0
    for amount in units:
        counts[amount:] = 0.5 * counts[amount:] + 0.5 * counts[:-amount].copy()
        counts[:amount] *= 0.5
    return counts[: observed + 1].sum()


def random_signs_cdf(diffs, *, draws=200_000, seed=0):
    """A plain Monte Carlo over random signs, in blocks."""
    rng = np.random.default_rng(seed)
    amounts, observed = np.abs(diffs), np.sum(diffs)
    hits = 0
    for _ in range(draws // 10_000):
        signs = rng.choice([-1.0, 1.0], size=(10_000, amounts.size))
        hits += int(np.count_nonzero(signs @ amounts <= observed + 1e-9))
    return hits / draws


@pytest.mark.parametrize("denominator", [3, 5, 60])
def test_differences_on_a_lattice_are_convolved_exactly(denominator):
    rng = np.random.default_rng(denominator)
    units = rng.integers(-denominator, denominator + 1, size=300)
    units[rng.random(300) < 0.5] = 0
    diffs = units / denominator
    result = drop_test(diffs)
    assert result.method == "exact"
    moved = units[units != 0]
    expected = subset_sum_cdf(np.abs(moved), int(moved[moved > 0].sum()))
    assert result.p_value == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_the_lattice_equals_enumeration_where_both_apply():
    diffs = np.array([-2 / 3, -1 / 3, 1 / 3, -1.0, 2 / 3, -1 / 3, -1 / 3, 1.0, -2 / 3, -1 / 3, 1 / 3])
    assert drop_test(diffs).p_value == pytest.approx(scipy_sign_flip(diffs), rel=1e-12)


def test_rounding_differences_of_equal_scores_are_no_change():
    # two equal scores reached by different sums differ by rounding (0.1 + 0.2 - 0.3 is 5.6e-17, 0.7 + 0.1 - 0.8 is
    # -1.1e-16): not a change, and the lattice of thirds still applies to the real changes
    noise = [(0.1 + 0.2) - 0.3, (0.7 + 0.1) - 0.8]
    assert all(value != 0 for value in noise)  # the case is real rounding, not an exact zero
    diffs = np.array(noise * 3 + [-1 / 3, -2 / 3, 1 / 3] * 10)
    result = drop_test(diffs)
    assert result.method == "exact" and result.changed == 30


def test_monte_carlo_path_is_within_its_error_of_plain_random_signs_and_stops_early_when_far_from_significant():
    rng = np.random.default_rng(3)
    diffs = rng.normal(-0.03, 0.2, 250)
    result = drop_test(diffs, max_draws=200_000, seed=2)
    assert result.method == "monte-carlo"
    reference = random_signs_cdf(diffs, seed=4)
    # Besag-Clifford stops at 50 extreme patterns: a relative error of about 1/sqrt(50)
    assert result.p_value == pytest.approx(reference, rel=0.5)
    harmless = drop_test(rng.normal(0.0, 0.2, 250), max_draws=200_000)
    assert harmless.draws < 2_000 and harmless.p_value > 0.02


def test_monte_carlo_p_value_is_never_below_one_over_the_draws_plus_one():
    diffs = -np.abs(np.random.default_rng(0).normal(0, 0.2, 100))  # every question fell
    result = drop_test(diffs, max_draws=5_000)
    assert result.method == "monte-carlo" and result.draws == 5_000
    assert result.p_value == pytest.approx(1 / 5_001)


@pytest.mark.parametrize("claims", [range(1, 7), range(1, 11)])
def test_the_normal_limit_from_300_changes_errs_towards_not_blocking(claims):
    # fractions of claims on a fine lattice: the exact tail beside the normal one at Holm's thresholds
    rng = np.random.default_rng(len(claims))
    count = rng.choice(list(claims), size=300)
    diffs = (rng.binomial(count, 0.7) - rng.binomial(count, 0.7)) / count
    diffs = diffs[diffs != 0][:300]
    units = paired_tests._lattice(np.abs(diffs))
    assert units is not None
    mean, sd = units.sum() / 2, np.sqrt((units.astype(float) ** 2).sum()) / 2
    for z in (-3.0, -3.7, -4.5):
        observed = int(np.floor(mean + z * sd))
        exact = subset_sum_cdf(units, observed)
        normal = stats.norm.cdf((observed - mean) / sd)
        assert 1.0 <= normal / exact <= 2.0  # never smaller than the exact p-value, and close to it


def test_normal_path_for_many_changes_agrees_with_monte_carlo():
    rng = np.random.default_rng(5)
    diffs = rng.normal(-0.004, 0.2, 5_000)
    result = drop_test(diffs)
    assert result.method == "normal"
    monte_carlo = paired_tests._monte_carlo_cdf(np.abs(diffs), diffs > 0, max_draws=40_000, seed=1)[0]
    assert result.p_value == pytest.approx(monte_carlo, rel=0.3)


def test_one_dominant_difference_is_never_read_off_the_normal_limit():
    diffs = np.concatenate([np.random.default_rng(1).normal(0, 0.01, 2_000), [-5.0]])
    assert drop_test(diffs, max_draws=2_000).method == "monte-carlo"


def test_direction_lower_is_better_tests_a_rise():
    diffs = [0.1, 0.2, 0.15, 0.3, -0.05] * 4
    assert drop_test(diffs, higher_is_better=False).p_value == pytest.approx(drop_test([-d for d in diffs]).p_value)
    assert drop_test(diffs).p_value > 0.9


def test_no_change_at_all_is_no_evidence_of_a_drop():
    result = drop_test([0.0] * 30)
    assert (result.p_value, result.method, result.changed) == (1.0, "exact", 0)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="non-finite value"):
        drop_test([0.1, float("nan")])
    with pytest.raises(ValueError, match="max_draws must be a positive integer"):
        drop_test([0.1], max_draws=0)


@pytest.mark.parametrize("changed", [6, ENUMERATE_MAX + 6])
def test_size_under_exchangeable_differences_is_at_most_alpha(changed):
    # symmetric differences: the test's null holds exactly, so P(p <= a) <= a at every a
    rng = np.random.default_rng(changed)
    p_values = np.array(
        [drop_test(rng.normal(0, 0.2, changed) * rng.choice([1, 2], changed)).p_value for _ in range(600)]
    )
    for level in (0.025, 0.05, 0.1, 0.3):
        assert np.mean(p_values <= level) <= level + 3 * np.sqrt(level * (1 - level) / 600)


def test_on_a_fine_lattice_every_tail_is_exact_from_no_rise_to_all_rising():
    # 300 changes in 60ths: a lattice of more than 4,096 sums, turned back by the FFT
    rng = np.random.default_rng(60)
    units = rng.integers(1, 61, size=300)
    assert units.sum() + 1 > 4096
    signs = np.where(rng.random(300) < 0.5, -1, 1)
    for rose in (np.zeros(300, bool), signs > 0, np.ones(300, bool)):
        diffs = np.where(rose, units, -units) / 60
        result = drop_test(diffs)
        assert result.method == "exact"
        expected = subset_sum_cdf(units, int(units[rose].sum()))
        assert result.p_value == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert 0.0 <= result.p_value <= 1.0
    assert drop_test(units / 60).p_value == 1.0  # every change rose: nothing is more extreme than no drop at all


def test_the_direct_convolution_and_the_fft_agree_either_side_of_their_switch():
    # sums of 4,095 and 4,097 lattice points: one is convolved directly, the other by the FFT (and a
    # larger one, where the top of three amounts carries an eighth of the distribution)
    for total in (4094, 4096, 6000):
        units = np.array([total - 2, 1, 1])
        for rose in ([False, True, True], [True, False, False], [True, True, True], [False, False, False]):
            rose = np.array(rose)
            expected = subset_sum_cdf(units, int(units[rose].sum()))
            got = paired_tests._lattice_cdf(units, rose)
            assert got == pytest.approx(expected, abs=1e-10)  # the FFT's rounding: about 1e-12 here


def test_the_monte_carlo_path_is_reproducible_from_its_seed():
    diffs = np.random.default_rng(8).normal(-0.02, 0.2, 120)
    first, again = drop_test(diffs, seed=3), drop_test(diffs, seed=3)
    assert first.method == "monte-carlo"
    assert (first.p_value, first.draws) == (again.p_value, again.draws)


def test_a_monte_carlo_test_that_stops_early_reports_fifty_extreme_patterns_over_its_draws():
    # Besag and Clifford: stopped at the STOP_AFTER-th extreme pattern, the p-value is STOP_AFTER / draws
    for seed in range(5):
        diffs = np.random.default_rng(seed).normal(-0.01, 0.2, 60)
        result = drop_test(diffs, seed=seed)
        assert result.method == "monte-carlo" and result.draws < 100_000
        assert result.p_value == paired_tests.STOP_AFTER / result.draws


def test_a_change_equal_to_the_sum_of_two_others_ties_with_them_however_large_the_scores():
    # latency-like amounts of 1e5: floating-point sums in another order differ in the last digits,
    # and the pattern that swaps the two for their sum must still count as "as extreme"
    rng = np.random.default_rng(0)
    for _ in range(7):
        amounts = rng.random(12) * 1e5 + 1e5
        rose = rng.random(12) < 0.5
    amounts = np.concatenate([amounts, [amounts[0] + amounts[1]]])
    rose = np.concatenate([rose, [True]])
    rose[:2] = False
    diffs = np.where(rose, amounts, -amounts)
    result = drop_test(diffs)
    assert result.method == "exact"
    assert result.p_value == pytest.approx(scipy_sign_flip(diffs), rel=1e-12)


# ---- the Monte Carlo path's bookkeeping, on sums whose exact distribution is known ----
_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59)


def _two_amounts(i0: int, j0: int, scale: float = 1.0) -> np.ndarray:
    """Ten changes of pi and nine of e (no lattice, 19 > ENUMERATE_MAX: the Monte Carlo path); i0 and j0 rose."""
    amounts = np.array([math.pi] * 10 + [math.e] * 9) * scale
    rose = np.array([True] * i0 + [False] * (10 - i0) + [True] * j0 + [False] * (9 - j0))
    return np.where(rose, amounts, -amounts)


def test_monte_carlo_counts_sums_tied_with_the_observed_one_and_is_within_its_error_of_the_exact_tail():
    # the exact tail counts the patterns tied with the observed one (here 43 % of it): C(10, i) C(9, j) / 2^19
    observed = 2 * math.pi + 2 * math.e
    exact = sum(
        math.comb(10, i) * math.comb(9, j) for i in range(11) for j in range(10) if i * math.pi + j * math.e <= observed + 1e-9
    ) / 2**19  # fmt: skip
    results = [drop_test(_two_amounts(2, 2), seed=seed) for seed in range(12)]
    assert {r.method for r in results} == {"monte-carlo"}
    mean = float(np.mean([r.p_value for r in results]))
    assert abs(mean - exact) < 0.15 * exact, (mean, exact)  # 12 x 50 extreme draws: about 4 % error


def test_the_monte_carlo_p_value_does_not_depend_on_the_unit_of_the_scores():
    for seed in range(4):
        plain = drop_test(_two_amounts(3, 2), seed=seed)
        assert drop_test(_two_amounts(3, 2, scale=1e8), seed=seed) == plain
        assert drop_test(_two_amounts(3, 2, scale=1e-6), seed=seed) == plain


def test_monte_carlo_stops_at_the_stop_after_th_extreme_pattern_and_never_below_its_true_tail():
    # two large changes that fell and 17 small ones that rose: a random half is at least as extreme exactly when
    # it leaves both large ones out, probability 1/4
    small = [math.sqrt(p) / 100 for p in _PRIMES]
    diffs = np.array([-(1000.0 + math.pi), -(1000.0 + math.e), *small])
    results = [drop_test(diffs, seed=seed) for seed in range(200)]  # seed 137: exactly 50 in the first 256 draws
    assert {r.method for r in results} == {"monte-carlo"}
    assert all(r.p_value * r.draws == pytest.approx(STOP_AFTER) for r in results)
    assert all(0.15 < r.p_value < 0.4 for r in results), min(r.p_value for r in results)
    assert float(np.mean([r.p_value for r in results])) == pytest.approx(0.25, abs=0.015)


def test_when_every_pattern_is_as_extreme_the_monte_carlo_p_value_is_one_after_stop_after_draws():
    everything_rose = np.array([math.sqrt(p) for p in _PRIMES] + [math.pi, math.e])
    result = drop_test(everything_rose)
    assert (result.method, result.p_value, result.draws) == ("monte-carlo", 1.0, STOP_AFTER)


def test_a_one_in_256_tail_is_found_by_monte_carlo():
    # eight large changes fell, eleven small ones rose: only halves leaving all eight out are as extreme (1/256);
    # the draws' first byte carries those eight signs
    small = [math.sqrt(p) / 100 for p in _PRIMES[:11]]
    diffs = np.array(
        [-(1000.0 + math.sqrt(p)) for p in _PRIMES[11:]] + [-(1000.0 + math.pi), -(1000.0 + math.e)] + small
    )
    results = [drop_test(diffs, seed=seed) for seed in range(3)]
    assert {r.method for r in results} == {"monte-carlo"}
    assert all(1 / 400 < r.p_value < 1 / 170 for r in results), [r.p_value for r in results]
