"""The paired bootstrap: exact resamplers, percentile positions, determinism, scipy as the anchor."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.engine import BootstrapResult, paired_bootstrap, percentile_positions
from evalcore.engine import bootstrap as bootstrap_module

from . import spec_reference as spec
from .scipy_reference import scipy_paired_bootstrap

RESAMPLERS = ["multinomial", "resample"]


@st.composite
def continuous_pairs(draw):
    n = draw(st.integers(20, 300))
    seed = draw(st.integers(0, 2**32 - 1))
    shift = draw(st.floats(-0.2, 0.2))
    rng = np.random.default_rng(seed)
    base = rng.uniform(0, 1, n)
    cand = np.clip(base + rng.normal(shift, 0.2, n), 0, 1)
    return base, cand


@st.composite
def binary_pairs(draw):
    n = draw(st.integers(30, 600))
    seed = draw(st.integers(0, 2**32 - 1))
    p = draw(st.floats(0.2, 0.9))
    flip = draw(st.floats(0.05, 0.3))
    rng = np.random.default_rng(seed)
    base = (rng.random(n) < p).astype(float)
    cand = np.where(rng.random(n) < flip, 1 - base, base)
    return base, cand


def tolerance(base, cand, *, grid: bool = True) -> float:
    """Monte Carlo tolerance between two 10,000-resample intervals.

    The 2.5 % quantile of the resampled means has a Monte Carlo standard error of about 0.027 of
    the bootstrap SD, so two independent estimates differ by about 0.038 SD: 0.2 SD is over five
    standard errors, and still catches a wrong percentile (2.5 % against 5 % is 0.3 SD). Scores on a
    1/n grid may land one step apart.
    """
    diffs = np.asarray(cand) - np.asarray(base)
    n = diffs.size
    sd = diffs.std() / math.sqrt(n)
    return 0.2 * sd + (1.0 / n if grid else 0.0) + 1e-12


# --------------------------------------------------------------------------------------------
# Against scipy.stats.bootstrap (percentile method)
# --------------------------------------------------------------------------------------------


def assert_interval_equals_scipy(base, cand, *, method: str, grid: bool) -> BootstrapResult:
    """Check our interval against SciPy's on the same pairs, within the Monte Carlo tolerance; return ours."""
    result = paired_bootstrap(base, cand, method=method)
    low, high = scipy_paired_bootstrap(base, cand)
    tol = tolerance(base, cand, grid=grid)
    assert result.low == pytest.approx(low, abs=tol)
    assert result.high == pytest.approx(high, abs=tol)
    return result


@pytest.mark.parametrize("method", RESAMPLERS)
@settings(max_examples=6, deadline=None, derandomize=True)
@given(pairs=continuous_pairs())
def test_interval_equals_scipy_percentile_bootstrap_on_continuous_scores(method, pairs):
    base, cand = pairs
    result = assert_interval_equals_scipy(base, cand, method=method, grid=False)
    assert result.estimate == pytest.approx(float(np.mean(cand - base)), abs=1e-12)


@pytest.mark.parametrize("method", RESAMPLERS)
@settings(max_examples=8, deadline=None, derandomize=True)
@given(pairs=binary_pairs())
def test_interval_equals_scipy_percentile_bootstrap_on_zero_one_scores(method, pairs):
    base, cand = pairs
    result = assert_interval_equals_scipy(base, cand, method=method, grid=True)
    # 0/1 scores: every resampled mean lies on the 1/n grid
    n = len(base)
    assert result.low * n == pytest.approx(round(result.low * n), abs=1e-6)
    assert result.high * n == pytest.approx(round(result.high * n), abs=1e-6)


@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.99])
def test_other_confidence_levels_equal_scipy(confidence):
    base, cand = spec.spec_bootstrap_data()
    low, high = scipy_paired_bootstrap(base, cand, confidence=confidence, seed=1)
    for method in RESAMPLERS:
        result = paired_bootstrap(base, cand, confidence=confidence, method=method)
        assert result.low == pytest.approx(low, abs=tolerance(base, cand))
        assert result.high == pytest.approx(high, abs=tolerance(base, cand))
        assert result.confidence == confidence


def test_spec_example_equals_scipy_within_one_grid_step():
    base, cand = spec.spec_bootstrap_data()
    low, high = scipy_paired_bootstrap(base, cand, seed=3)
    for method in RESAMPLERS:
        result = paired_bootstrap(base, cand, method=method)
        assert abs(result.low - low) <= 1 / 300 + 1e-9
        assert abs(result.high - high) <= 1 / 300 + 1e-9


# --------------------------------------------------------------------------------------------
# The two resamplers draw from the same distribution
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", RESAMPLERS)
def test_resampled_means_have_the_exact_bootstrap_mean_and_variance(method):
    rng = np.random.default_rng(5)
    diffs = rng.choice([-1.0, 0.0, 0.0, 0.0, 0.5, 1.0], size=400)
    means, used = bootstrap_module.resampled_means(diffs, iterations=20_000, seed=11, method=method)
    assert used == method
    # the bootstrap distribution of the mean has mean(diffs) and variance var(diffs, ddof=0) / n
    expected_sd = diffs.std() / math.sqrt(diffs.size)
    assert means.mean() == pytest.approx(diffs.mean(), abs=4 * expected_sd / math.sqrt(20_000))
    assert means.std() == pytest.approx(expected_sd, rel=0.03)


def test_the_two_resamplers_give_the_same_distribution_by_a_two_sample_test():
    rng = np.random.default_rng(6)
    diffs = rng.choice([-1.0, 0.0, 1.0], p=[0.1, 0.75, 0.15], size=250)
    multinomial, _ = bootstrap_module.resampled_means(diffs, iterations=20_000, seed=1, method="multinomial")
    resample, _ = bootstrap_module.resampled_means(diffs, iterations=20_000, seed=2, method="resample")
    # on a 1/250 grid, so compare the quantiles (KS is too strict on discrete data) within one step
    for q in (0.01, 0.025, 0.1, 0.5, 0.9, 0.975, 0.99):
        assert abs(np.quantile(multinomial, q) - np.quantile(resample, q)) <= 1 / 250 + 1e-12


def test_auto_picks_multinomial_for_few_distinct_differences_and_resample_for_many():
    base, cand = spec.spec_bootstrap_data()
    assert paired_bootstrap(base, cand).method == "multinomial"
    rng = np.random.default_rng(0)
    assert paired_bootstrap(rng.random(200), rng.random(200)).method == "resample"
    # a constant difference always takes the trivial multinomial path
    assert paired_bootstrap([0.2, 0.4], [0.3, 0.5]).method == "multinomial"


@pytest.mark.parametrize("method", RESAMPLERS + ["auto"])
def test_a_constant_difference_gives_a_zero_width_interval(method):
    result = paired_bootstrap([0.0] * 50, [0.25] * 50, method=method)
    assert result.estimate == result.low == result.high == 0.25


def test_doc_example_of_four_questions():
    result = paired_bootstrap([1, 0, 1, 1], [1, 1, 1, 1], iterations=1000)
    assert (result.estimate, result.high) == (0.25, 0.75)
    assert result.low == 0.0


@settings(max_examples=25, deadline=None)
@given(continuous_pairs(), st.floats(-1, 1))
def test_shifting_the_candidate_by_a_constant_shifts_the_interval_by_it(pairs, shift):
    base, cand = pairs
    plain = paired_bootstrap(base, cand, method="resample", iterations=2000)
    shifted = paired_bootstrap(base, cand + shift, method="resample", iterations=2000)
    assert shifted.estimate == pytest.approx(plain.estimate + shift, abs=1e-9)
    assert shifted.low == pytest.approx(plain.low + shift, abs=1e-9)
    assert shifted.high == pytest.approx(plain.high + shift, abs=1e-9)


@settings(max_examples=25, deadline=None)
@given(binary_pairs(), st.sampled_from(RESAMPLERS))
def test_the_interval_contains_the_mean_and_is_ordered(pairs, method):
    base, cand = pairs
    result = paired_bootstrap(base, cand, method=method, iterations=2000)
    assert result.low <= result.estimate <= result.high
    assert -1.0 <= result.low <= result.high <= 1.0


# --------------------------------------------------------------------------------------------
# Percentile positions
# --------------------------------------------------------------------------------------------


def test_percentile_positions_at_95_percent_of_10000_are_250_and_9750():
    assert percentile_positions(10_000, confidence=0.95) == (250, 9750)


def test_percentile_positions_equal_the_spec_int_of_fraction_times_iterations():
    for iterations in (1000, 2000, 4000, 9999, 10_000, 12_345):
        assert percentile_positions(iterations, confidence=0.95) == (int(0.025 * iterations), int(0.975 * iterations))


@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.95, 0.99])
def test_percentile_positions_floor_the_exact_fraction_without_floating_point_slips(confidence):
    alpha = (1 - Fraction(str(confidence))) / 2
    for iterations in range(1, 3001):
        low, high = percentile_positions(iterations, confidence=confidence)
        assert low == min(math.floor(alpha * iterations), iterations - 1)
        assert high == min(math.floor((1 - alpha) * iterations), iterations - 1)


def test_percentile_positions_stay_inside_a_single_iteration():
    assert percentile_positions(1, confidence=0.95) == (0, 0)


# --------------------------------------------------------------------------------------------
# Determinism
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", RESAMPLERS)
def test_the_same_seed_gives_the_identical_result(method):
    rng = np.random.default_rng(1)
    base, cand = rng.random(300), rng.random(300)
    first = paired_bootstrap(base, cand, seed=123, method=method, iterations=3000)
    assert paired_bootstrap(base, cand, seed=123, method=method, iterations=3000) == first


@pytest.mark.parametrize("method", RESAMPLERS)
def test_different_seeds_generally_give_different_intervals(method):
    rng = np.random.default_rng(2)
    base, cand = rng.random(300), rng.random(300)
    results = {
        (r.low, r.high)
        for r in (paired_bootstrap(base, cand, seed=s, method=method, iterations=2000) for s in range(5))
    }
    assert len(results) >= 4


def test_threads_do_not_change_the_result_of_the_resampling_path(monkeypatch):
    # force many chunks so that two threads really split the work
    monkeypatch.setattr(bootstrap_module, "CHUNK_ELEMENTS", 5_000)
    rng = np.random.default_rng(3)
    base, cand = rng.random(500), rng.random(500)
    one = paired_bootstrap(base, cand, method="resample", threads=1, iterations=3000)
    two = paired_bootstrap(base, cand, method="resample", threads=2, iterations=3000)
    four = paired_bootstrap(base, cand, method="resample", threads=4, iterations=3000)
    assert one == two == four
    means_1, _ = bootstrap_module.resampled_means(cand - base, iterations=3000, seed=7, method="resample", threads=1)
    means_2, _ = bootstrap_module.resampled_means(cand - base, iterations=3000, seed=7, method="resample", threads=2)
    np.testing.assert_array_equal(means_1, means_2)


def test_the_chunk_size_bounds_memory_without_changing_the_distribution(monkeypatch):
    rng = np.random.default_rng(4)
    diffs = rng.normal(0.05, 0.3, 300)
    big, _ = bootstrap_module.resampled_means(diffs, iterations=10_000, seed=9, method="resample")
    monkeypatch.setattr(bootstrap_module, "CHUNK_ELEMENTS", 3_000)
    small, _ = bootstrap_module.resampled_means(diffs, iterations=10_000, seed=9, method="resample")
    assert small.std() == pytest.approx(big.std(), rel=0.05)
    assert small.mean() == pytest.approx(big.mean(), abs=0.002)


def test_result_records_how_it_was_computed():
    base, cand = spec.spec_bootstrap_data()
    result = paired_bootstrap(base, cand, iterations=500, seed=3, confidence=0.9)
    assert isinstance(result, BootstrapResult)
    assert (result.iterations, result.seed, result.confidence, result.n) == (500, 3, 0.9, 300)


def test_numpy_arrays_tuples_and_integer_scores_are_accepted():
    result = paired_bootstrap(np.array([0, 1, 1, 0]), (1, 1, 1, 0), iterations=200)
    assert result.estimate == 0.25
    assert paired_bootstrap([True, False], [True, True], iterations=100, seed=np.int64(3)).estimate == 0.5
