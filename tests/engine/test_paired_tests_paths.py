"""Which path the sign-flip test of "no drop" takes, at the edges of each rule of the module's docstring, and
what each path reports: the lattice's tolerance, the documented thresholds (exactly at them and one past),
the normal limit's formula, the defaults, and the Monte Carlo path's count when its draws run out."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evalcore.engine import paired_tests
from evalcore.engine.paired_tests import (
    ENUMERATE_MAX,
    LATTICE_CHEAP,
    LATTICE_DENOMINATOR_MAX,
    LATTICE_SIZE_MAX,
    NORMAL_MAX_SHARE,
    NORMAL_MIN_CHANGED,
    DropTest,
    drop_test,
)

from .test_paired_tests import _PRIMES, scipy_sign_flip, subset_sum_cdf


def _signed(units: np.ndarray, seed: int, rose_share: float = 0.45) -> tuple[np.ndarray, np.ndarray]:
    rose = np.random.default_rng(1000 + seed).random(units.size) < rose_share
    return np.where(rose, units, -units), rose


# ---- every path reports its method and the number of changed questions ----
@pytest.mark.parametrize(("fell", "rose"), [(9, 2), (40, 25)])
def test_the_binomial_path_reports_an_exact_test_of_every_change(fell, rose):
    result = drop_test([-0.5] * fell + [0.5] * rose + [0.0] * 7)
    expected = stats.binomtest(rose, fell + rose, 0.5, alternative="less").pvalue
    assert result == DropTest(p_value=pytest.approx(expected, rel=1e-10), method="exact", changed=fell + rose)


def test_a_single_change_is_a_fair_coin():
    assert drop_test([0.0, -0.3, 0.0]) == DropTest(p_value=pytest.approx(0.5), method="exact", changed=1)
    assert drop_test([0.3]) == DropTest(p_value=1.0, method="exact", changed=1)


def test_no_question_at_all_is_no_evidence_of_a_drop():
    assert drop_test([]) == DropTest(p_value=1.0, method="exact", changed=0)


def test_the_binomial_p_value_of_changes_that_all_rose_is_exactly_one():
    # the log-space sum of all k + 1 terms rounds to 1 + 2e-16 for k = 3 and 6, 1 + 7e-16 for k = 11 ...:
    # a p-value never exceeds 1
    for k in range(1, 40):
        assert drop_test([1.0] * k).p_value == pytest.approx(1.0, abs=1e-14)
        assert drop_test([1.0] * k).p_value <= 1.0
    assert drop_test([1.0] * 3).p_value == drop_test([1.0] * 11).p_value == 1.0


def test_the_enumeration_path_reports_its_changes():
    diffs = np.random.default_rng(4).normal(-0.05, 0.2, 12)
    result = drop_test(diffs)
    assert result == DropTest(p_value=pytest.approx(scipy_sign_flip(diffs), rel=1e-12), method="exact", changed=12)


def test_the_monte_carlo_path_reports_its_changes_and_draws():
    diffs = np.random.default_rng(8).normal(-0.02, 0.2, 120)
    result = drop_test(diffs)
    assert (result.method, result.changed) == ("monte-carlo", 120)
    assert result.p_value == pytest.approx(paired_tests.STOP_AFTER / result.draws)


# ---- what counts as a change, and as "the same amount" ----
def test_a_floating_point_rounding_difference_is_no_change_but_a_tiny_real_one_is():
    thirds = np.array([-1 / 3, -2 / 3, 1 / 3] * 10)
    rounding = np.array([(0.1 + 0.2) - 0.3] * 5)  # 5.6e-17: equal scores summed in another order
    assert rounding[0] != 0.0
    result = drop_test(np.concatenate([rounding, thirds]))
    assert result == drop_test(thirds) and result.changed == 30
    tiny = np.array([-1.0] * 6 + [1.0] * 3 + [-1e-10])  # 1e-10 on a score of 1 is a change, off every lattice
    result = drop_test(tiny)
    assert (result.method, result.changed) == ("exact", 10)
    # between the count that breaks the ties of the nine unit amounts by the tiny one (88 of 512 halves) and
    # the count that takes a sum 1e-10 above the observed one as a tie (130 of 512, the nine alone)
    assert 88 / 512 <= result.p_value <= 130 / 512


def test_amounts_a_millionth_apart_are_not_read_as_pass_fail():
    # the amounts 1, 1 and 1.000001: only two of the eight halves sum to at most the 1 that rose
    diffs = [1.0, -1.0, -1.000001]
    assert drop_test(diffs).p_value == pytest.approx(scipy_sign_flip(diffs), rel=1e-12)
    assert drop_test(diffs).p_value == pytest.approx(3 / 8)


@pytest.mark.parametrize("unit", [1e-10, 1.0, 1e6])
def test_the_exact_p_value_does_not_depend_on_the_unit_of_the_scores(unit):
    # amounts 1, 1 and 2 (a rise of 1): 3 of the 8 halves sum to at most 1 (none, either 1), whatever the unit
    result = drop_test(np.array([1.0, -1.0, -2.0]) * unit)
    assert result == DropTest(p_value=pytest.approx(3 / 8), method="exact", changed=3)


# ---- the lattice: its tolerance, its denominators, its sizes ----
def test_amounts_on_a_lattice_up_to_a_relative_four_in_ten_billion_are_convolved_exactly():
    # 60ths of up to 3 points, each off by a relative 4e-10 (sums of floating-point scores in another order)
    units = np.random.default_rng(11).integers(1, 181, size=40)
    diffs, rose = _signed(units / 60 * (1 + 4e-10), seed=11)
    result = drop_test(diffs)
    assert result == DropTest(
        p_value=pytest.approx(subset_sum_cdf(units, int(units[rose].sum())), rel=1e-9), method="exact", changed=40
    )


def test_amounts_a_relative_three_billionth_off_a_lattice_are_not_on_it():
    amounts = np.array([0.5 + 1.5e-9] * 20 + [0.25] * 20)  # 0.5 + 1.5e-9 is not a half, it is no fraction at all
    assert paired_tests._lattice(amounts) is None
    result = drop_test(_signed(amounts, seed=2)[0])
    assert (result.method, result.changed) == ("monte-carlo", 40)


def _on_the_finest_lattice() -> np.ndarray:
    """Twenty amounts in eighths, ninths, fifths, sevenths and elevenths: the lattice of 1/27,720 (its lcm)."""
    return np.array([1 / 8, 1 / 9, 1 / 5, 1 / 7, 1 / 11] * 4)


def test_the_finest_lattice_allowed_is_convolved_exactly_by_the_fft():
    amounts = _on_the_finest_lattice()
    units = np.rint(amounts * LATTICE_DENOMINATOR_MAX).astype(np.int64)
    assert units.sum() > LATTICE_CHEAP  # not a cheap lattice, and fewer than 300 changes: the exact FFT
    diffs, rose = _signed(amounts, seed=5, rose_share=0.3)
    result = drop_test(diffs)
    expected = subset_sum_cdf(units, int(units[rose].sum()))
    assert 1e-3 < expected < 0.5
    assert result == DropTest(p_value=pytest.approx(expected, rel=1e-9), method="exact", changed=20)


def test_an_amount_a_hundred_thousandth_of_a_unit_off_the_finest_lattice_is_not_on_it():
    # 1/8 + 5e-10 passes as 1/8 alone, but on the lattice of 1/27,720 it is 1.4e-5 units from its point
    amounts = _on_the_finest_lattice()
    amounts[0] += 5e-10
    assert paired_tests._lattice(amounts) is None
    assert drop_test(_signed(amounts, seed=5, rose_share=0.3)[0]).method == "monte-carlo"


@pytest.mark.parametrize(("total", "method"), [(LATTICE_SIZE_MAX, "exact"), (LATTICE_SIZE_MAX + 1, "monte-carlo")])
def test_the_largest_lattice_convolved_exactly_has_lattice_size_max_sums(total, method):
    # 20 whole-number amounts (a latency in ms, say) summing to exactly LATTICE_SIZE_MAX, or one more
    units = np.array([13_000] * 10 + [13_107] * 9 + [0])
    units[-1] = total - units.sum()
    diffs, rose = _signed(units.astype(float), seed=9)
    result = drop_test(diffs)
    assert (result.method, result.changed) == (method, 20)
    if method == "exact":  # the FFT's rounding on a support this sparse: about 1e-10 (clipped at 0, summed)
        assert result.p_value == pytest.approx(subset_sum_cdf(units, int(units[rose].sum())), rel=1e-9, abs=1e-9)


def _whole_numbers(total: int, k: int, seed: int) -> np.ndarray:
    """k whole-number amounts of similar size summing to exactly total."""
    units = np.random.default_rng(seed).integers(1, 2 * total // k, size=k)
    units = np.maximum(1, np.rint(units * total / units.sum())).astype(np.int64)
    units[np.argmax(units)] += total - units.sum()
    assert units.sum() == total and units.min() >= 1
    return units


@pytest.mark.parametrize("total", [10_001, LATTICE_CHEAP - 1])
def test_from_300_changes_a_lattice_of_fewer_than_lattice_cheap_points_is_still_exact(total):
    # whole-number amounts (an odd lattice: its denominator is 1), from the 300 changes of the normal limit
    units = _whole_numbers(total, NORMAL_MIN_CHANGED, seed=total)
    diffs, rose = _signed(units.astype(float), seed=1)
    result = drop_test(diffs)
    expected = subset_sum_cdf(units, int(units[rose].sum()))
    assert result == DropTest(p_value=pytest.approx(expected, rel=1e-9, abs=1e-15), method="exact", changed=300)


def test_a_lattice_of_lattice_cheap_points_with_300_changes_takes_the_normal_limit():
    units = _whole_numbers(LATTICE_CHEAP, NORMAL_MIN_CHANGED, seed=2)
    squares = units.astype(float) ** 2
    assert squares.max() <= NORMAL_MAX_SHARE * squares.sum()
    assert drop_test(_signed(units.astype(float), seed=1)[0]).method == "normal"


# ---- the normal limit: its formula and its two conditions ----
def test_the_normal_limit_is_the_sum_over_the_root_of_the_sum_of_squares():
    diffs = np.random.default_rng(12).normal(-0.02, 0.2, 400)
    expected = stats.norm.cdf(diffs.sum() / np.sqrt(np.sum(diffs**2)))
    assert 1e-4 < expected < 0.5
    assert drop_test(diffs) == DropTest(p_value=pytest.approx(expected, rel=1e-12), method="normal", changed=400)
    worse_is_higher = drop_test(-diffs, higher_is_better=False)
    assert worse_is_higher.p_value == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("changed", "method"), [(NORMAL_MIN_CHANGED, "normal"), (NORMAL_MIN_CHANGED - 1, "monte-carlo")]
)
def test_the_normal_limit_is_used_from_normal_min_changed_changes(changed, method):
    amounts = np.random.default_rng(changed).uniform(0.05, 0.3, changed)  # none carries 1 % of the variance
    result = drop_test(_signed(amounts, seed=changed, rose_share=0.5)[0])
    assert (result.method, result.changed) == (method, changed)


def _one_large_share(ulps: int) -> np.ndarray:
    """300 amounts whose largest carries exactly NORMAL_MAX_SHARE of the sum of squares (ulps = 0) or one float more."""
    rng = np.random.default_rng(3)
    for _ in range(1000):
        others = rng.uniform(0.05, 0.3, 299)
        largest = math.sqrt(NORMAL_MAX_SHARE / (1 - NORMAL_MAX_SHARE) * float(np.sum(others * others)))
        for step in range(-20, 21):
            amounts = np.append(others, largest + step * math.ulp(largest))
            squares = amounts * amounts
            if squares.max() == NORMAL_MAX_SHARE * squares.sum():
                amounts[-1] = np.nextafter(amounts[-1], 1.0) if ulps else amounts[-1]
                return _signed(amounts, seed=3)[0]
    raise AssertionError("no amounts found")  # pragma: no cover


def test_a_difference_carrying_exactly_the_largest_share_of_the_variance_still_allows_the_normal_limit():
    assert drop_test(_one_large_share(0)).method == "normal"
    assert drop_test(_one_large_share(1)).method == "monte-carlo"  # a shade more than 3 %


@pytest.mark.parametrize(("changed", "method"), [(ENUMERATE_MAX, "exact"), (ENUMERATE_MAX + 1, "monte-carlo")])
def test_every_sign_pattern_is_counted_up_to_enumerate_max_changes(changed, method):
    diffs = np.random.default_rng(changed).normal(-0.05, 0.2, changed)
    result = drop_test(diffs)  # (the enumeration equals SciPy's: see test_paired_tests)
    assert (result.method, result.changed) == (method, changed)


# ---- the defaults, and the names in the errors ----
def test_the_default_max_draws_is_100_000():
    # every question fell: no random half is as extreme, so the p-value is 1 / (max_draws + 1)
    diffs = -np.abs(np.random.default_rng(0).normal(0, 0.2, 30))
    assert drop_test(diffs) == DropTest(p_value=1 / 100_001, method="monte-carlo", changed=30, draws=100_000)


def test_the_default_seed_is_7():
    diffs = np.random.default_rng(8).normal(-0.02, 0.2, 120)
    assert drop_test(diffs) == drop_test(diffs, seed=7)
    assert any(drop_test(diffs, seed=seed) != drop_test(diffs) for seed in (6, 8))


def test_the_errors_name_the_differences():
    with pytest.raises(
        ValueError, match=r"^diffs contains 1 missing or non-finite value\(s\), the first at position 1"
    ):
        drop_test([0.1, float("nan")])
    with pytest.raises(ValueError, match=r"^diffs must be a sequence of numbers"):
        drop_test(["a lot"])


# ---- the Monte Carlo path when its draws run out ----
def test_a_monte_carlo_test_that_runs_out_of_draws_counts_every_extreme_pattern_it_drew():
    # only the halves leaving out all eight large changes are as extreme: 1 in 256. With 1,500 draws (chunks of
    # 256, 1,024 and 220) about 6 are, and the p-value is (extreme + 1) / (draws + 1), extreme over all the draws
    small = [math.sqrt(p) / 100 for p in _PRIMES[:11]]
    diffs = np.array(
        [-(1000.0 + math.sqrt(p)) for p in _PRIMES[11:]] + [-(1000.0 + math.pi), -(1000.0 + math.e)] + small
    )
    results = [drop_test(diffs, max_draws=1_500, seed=seed) for seed in range(40)]
    assert {(r.method, r.draws) for r in results} == {("monte-carlo", 1_500)}
    expected = (1_500 / 256 + 1) / 1_501
    assert float(np.mean([r.p_value for r in results])) == pytest.approx(expected, rel=0.2)
