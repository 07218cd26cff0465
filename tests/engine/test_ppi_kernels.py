"""The kernels of prediction-powered estimation (``evalcore.engine._ppi``), value by value.

Each kernel is checked against a formula written out here or against its reference: the power-tuning
weight against ``ppi-python``'s own ``_calc_lam_glm`` (PPI++, arXiv 2311.01453) and the regression
slope, the t quantile against ``scipy.stats.t.ppf``, the Satterthwaite degrees of freedom and the
Jeffreys-smoothed residual variance against their formulas by hand, the guard at its exact threshold.
The estimator's own tests (``test_ppi.py``) check what these add up to; these pin each part, so a
change of any constant or comparison in them is seen.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from ppi_py.ppi import _calc_lam_glm
from scipy import stats

from evalcore.engine._ppi import (
    correlation_too_weak,
    fit_stratum,
    overlap_covariance,
    power_weight,
    satterthwaite,
    t_quantile,
)


def sample(seed: int, n: int, rows: int, slope: float = 0.7, noise: float = 0.2):
    """Graded labels ``y``, a judge ``f`` of them, and the judge's scores over ``rows`` rows (the labelled first)."""
    rng = np.random.default_rng(seed)
    truth = rng.random(rows)
    f_rows = truth + rng.normal(0, noise, rows)
    y = slope * truth[:n] + rng.normal(0, noise, n)
    return y, f_rows[:n], f_rows


def smoothed_variance(r: list[float], ddof: int, centre: float) -> float:
    """The Jeffreys-smoothed variance by hand: the residuals plus half a pass (1 - centre) and half a fail (-centre)."""
    values = [*r, 1.0 - centre, -centre]
    weights = [1.0] * len(r) + [0.5, 0.5]
    total = sum(weights)
    mean = sum(w * v for w, v in zip(weights, values)) / total
    return sum(w * (v - mean) ** 2 for w, v in zip(weights, values)) / (total - ddof)


# ---- the power-tuning weight ------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_the_independent_weight_is_ppi_pythons_calc_lam_glm(seed):
    y, f, f_rows = sample(seed, 40 + 10 * seed, 300)
    unlabelled = f_rows[y.size :]
    reference = float(_calc_lam_glm(y, f, unlabelled, np.eye(1), clip=True))
    assert 0 < reference < 1  # an inside optimum: the clip does not decide it
    assert power_weight(y, f, unlabelled, design="independent") == pytest.approx(reference, abs=1e-12)
    # by hand: cov(y, f) over n, over (1 + n / N) times the judge's variance pooled over both sets
    pooled = np.concatenate([f, unlabelled])
    by_hand = np.mean((y - y.mean()) * (f - f.mean())) / ((1 + y.size / unlabelled.size) * np.var(pooled, ddof=1))
    assert power_weight(y, f, unlabelled, design="independent") == pytest.approx(by_hand, abs=1e-12)


@pytest.mark.parametrize("design", ["run", "population"])
def test_within_a_run_the_weight_is_the_regression_slope_of_people_on_the_judge(design):
    y, f, f_rows = sample(7, 60, 400)
    slope = float(np.polyfit(f, y, 1)[0])
    assert 0 < slope < 1
    assert power_weight(y, f, f_rows, design=design) == pytest.approx(slope, abs=1e-12)
    # the rows beyond the labelled ones do not enter it (the judge's mean over them is known)
    assert power_weight(y, f, f_rows[:80], design=design) == pytest.approx(slope, abs=1e-12)


@pytest.mark.parametrize("design", ["run", "independent"])
def test_the_weight_is_clipped_to_zero_and_one(design):
    y, f, f_rows = sample(3, 50, 200)
    assert power_weight(-y, f, f_rows, design=design) == 0.0  # people disagree with the judge
    assert power_weight(3 * y, f, f_rows, design=design) == 1.0  # a slope of about 2
    assert power_weight(3 * y, f, f_rows, design=design) < float(np.polyfit(f, 3 * y, 1)[0])


@pytest.mark.parametrize("design", ["run", "population", "independent"])
def test_a_constant_judge_gets_weight_zero(design):
    y = np.array([0.0, 1.0, 1.0, 0.0, 1.0])
    assert power_weight(y, np.full(5, 0.8), np.full(12, 0.8), design=design) == 0.0


@pytest.mark.parametrize("design", ["run", "independent"])
def test_the_weight_and_the_overlap_do_not_move_when_every_score_is_shifted(design):
    # centred products: a shift of a million changes them by rounding only (1e-11), an uncentred factor by 1e-4
    y, f, f_rows = sample(9, 50, 300)
    unlabelled = f_rows[50:] if design == "independent" else f_rows
    shifted = power_weight(y + 1e6, f + 1e6, unlabelled + 1e6, design=design)
    assert shifted == pytest.approx(power_weight(y, f, unlabelled, design=design), abs=1e-9)
    assert overlap_covariance(y[:20] + 1e6, f[:20] + 1e6, 30, 30, 100) == pytest.approx(
        overlap_covariance(y[:20], f[:20], 30, 30, 100), rel=1e-8
    )


@pytest.mark.parametrize("design", ["run", "independent"])
def test_a_weight_that_overflows_counts_as_no_weight(design):
    # labels of order 1e150 and a judge varying by 1e-161: the slope is past the largest float
    y, f = np.array([0.0, 1.0, 1.0, 0.0, 1.0]) * 1e150, np.array([0.0, 1.0, 1.0, 0.0, 0.0]) * 1e-161
    assert np.var(f, ddof=1) > 0
    assert power_weight(y, f, f, design=design) == 0.0


# ---- the guard ----------------------------------------------------------------------------------

# six labelled rows whose correlation is exactly 1/2 = 1 / sqrt(6 - 2) in floating point
AT_THRESHOLD = (np.array([0.0, 0.0, 0.0, 1.0, 1.0, 0.0]), np.array([2.0, 0.0, 0.0, 2.0, 2.0, 2.0]))


def test_the_guard_holds_a_correlation_of_exactly_one_over_root_n_minus_2_too_weak():
    y, f = AT_THRESHOLD
    assert np.corrcoef(y, f)[0, 1] == pytest.approx(0.5, abs=1e-15)
    assert correlation_too_weak(y, f) is True


def test_the_guard_trusts_a_correlation_just_above_the_threshold_and_not_just_below():
    y = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 0.0])
    above = np.array([2.0, 0.0, 0.0, 2.0, 2.0, 1.9])  # 0.519: above 1/2 (by less than a ddof of 2 would move it)
    below = np.array([2.0, 0.0, 0.0, 2.0, 2.0, 2.4])  # 0.47
    assert 0.5 < np.corrcoef(y, above)[0, 1] < 0.5 / np.sqrt(4 / 5) < 1 / math.sqrt(3)
    assert 1 / math.sqrt(8) < np.corrcoef(y, below)[0, 1] < 0.5
    assert correlation_too_weak(y, above) is False
    assert correlation_too_weak(y, below) is True


def test_the_guard_needs_four_labelled_rows():
    y, f = np.array([0.0, 1.0, 1.0, 0.0]), np.array([0.1, 0.9, 0.8, 0.2])
    assert correlation_too_weak(y, f) is False  # four rows, correlation 0.99
    assert correlation_too_weak(y[:3], f[:3]) is True  # three rows are too few whatever the correlation


def test_the_guard_with_a_constant_side():
    varying, constant = np.array([0.0, 1.0, 1.0, 0.0, 1.0]), np.ones(5)
    assert correlation_too_weak(constant, varying) is True  # the judge varies, people agree: no evidence
    assert correlation_too_weak(varying, constant) is False  # a constant judge: its weight is 0 anyway
    assert correlation_too_weak(constant, constant) is False


# ---- one stratum: estimate, variance, smoothing -----------------------------------------------


def test_a_run_stratum_is_the_rectified_mean_with_the_finite_population_variance():
    y, f, f_rows = sample(11, 30, 90)
    fit = fit_stratum(y, f, f_rows, design="run", tuning=0.4, guard=True, smooth=True)  # graded: not smoothed
    r = y - 0.4 * f
    assert fit.estimate == pytest.approx(0.4 * f_rows.mean() + r.mean(), abs=1e-14)
    assert fit.variance == pytest.approx((1 - 30 / 90) * np.var(r, ddof=1) / 30, abs=1e-15)
    assert fit.labels_estimate == pytest.approx(y.mean(), abs=1e-14)
    assert fit.labels_variance == pytest.approx((1 - 30 / 90) * np.var(y, ddof=1) / 30, abs=1e-15)
    assert (fit.lam, fit.labelled, fit.rows, fit.guarded) == (0.4, 30, 90, False)
    assert fit.judge_mean == pytest.approx(f_rows.mean(), abs=1e-15)


def test_the_independent_stratum_has_ppi_pythons_population_variances():
    y, f, f_rows = sample(12, 30, 90)
    fit = fit_stratum(y, f, f_rows, design="independent", tuning=0.4, guard=True, smooth=False)
    expected = np.var(0.4 * f_rows, ddof=0) / 90 + np.var(y - 0.4 * f, ddof=0) / 30
    assert fit.variance == pytest.approx(expected, abs=1e-15)
    assert fit.labels_variance == pytest.approx(np.var(y, ddof=0) / 30, abs=1e-15)


def test_every_row_labelled_leaves_no_variance_of_the_run_s_own_mean():
    y, f, _ = sample(13, 20, 20)
    fit = fit_stratum(y, f, f, design="run", tuning="power", guard=False, smooth=False)
    assert fit.variance == 0.0 and fit.labels_variance == 0.0
    assert fit.estimate == pytest.approx(y.mean(), abs=1e-14)  # the judge's mean cancels over the same rows


@pytest.mark.parametrize("design, ddof", [("run", 1), ("independent", 0)])
@pytest.mark.parametrize("lam", [0.0, 0.6])
def test_pass_fail_labels_have_half_a_pass_and_half_a_fail_added_to_their_variance(design, ddof, lam):
    y = np.array([1.0] * 9 + [0.0])  # one disagreement in ten: the plain variance would claim too little
    f = np.array([1.0] * 8 + [0.0, 0.0])
    f_rows = np.concatenate([f, np.ones(30), np.zeros(10)])
    fit = fit_stratum(y, f, f_rows, design=design, tuning=lam, guard=False, smooth=True)
    plain = fit_stratum(y, f, f_rows, design=design, tuning=lam, guard=False, smooth=False)
    smoothed = smoothed_variance(list(y - lam * f), ddof, centre=lam * f.mean())
    if design == "run":
        assert fit.variance == pytest.approx((1 - 10 / 50) * smoothed / 10, abs=1e-15)
        assert plain.variance == pytest.approx((1 - 10 / 50) * np.var(y - lam * f, ddof=1) / 10, abs=1e-15)
    else:
        judge_part = np.var(lam * f_rows, ddof=0) / 50
        assert fit.variance == pytest.approx(judge_part + smoothed / 10, abs=1e-15)
    assert fit.variance > plain.variance
    assert fit.estimate == plain.estimate  # the pseudo-counts widen the variance only


def test_pass_fail_labels_all_alike_still_have_a_variance_when_smoothed():
    y, f = np.ones(6), np.ones(6)
    fit = fit_stratum(y, f, np.ones(60), design="run", tuning="labels", guard=False, smooth=True)
    assert fit.labels_variance == pytest.approx((1 - 6 / 60) * smoothed_variance([1.0] * 6, 1, 0.0) / 6, abs=1e-15)
    assert fit.labels_variance > 0


def test_graded_labels_are_not_smoothed():
    y = np.array([1.0, 0.5, 1.0, 0.0, 1.0])
    f = np.array([1.0, 1.0, 1.0, 0.0, 1.0])
    fit = fit_stratum(y, f, np.ones(20), design="run", tuning=0.5, guard=False, smooth=True)
    assert fit.variance == pytest.approx((1 - 5 / 20) * np.var(y - 0.5 * f, ddof=1) / 5, abs=1e-15)


def test_a_single_labelled_row_has_no_spread_rather_than_an_undefined_one():
    fit = fit_stratum(np.array([0.7]), np.array([0.5]), np.array([0.5, 0.9]), design="run", tuning=1.0,
                      guard=False, smooth=False)  # fmt: skip
    assert fit.variance == 0.0 and fit.labels_variance == 0.0


@pytest.mark.parametrize(("tuning", "lam"), [("none", 1.0), ("labels", 0.0), (0.25, 0.25)])
def test_a_stated_tuning_is_the_weight_used(tuning, lam):
    y, f, f_rows = sample(14, 25, 80)
    fit = fit_stratum(y, f, f_rows, design="run", tuning=tuning, guard=True, smooth=False)
    assert fit.lam == lam and fit.guarded is False
    assert fit.estimate == pytest.approx(lam * f_rows.mean() + np.mean(y - lam * f), abs=1e-14)


def test_the_guard_sets_a_weak_stratum_s_weight_to_zero_and_says_so():
    y, f = AT_THRESHOLD
    f_rows = np.concatenate([f, [2.0, 0.0, 2.0]])
    assert power_weight(y, f, f_rows, design="run") > 0
    fit = fit_stratum(y, f, f_rows, design="run", tuning="power", guard=True, smooth=False)
    assert (fit.lam, fit.guarded) == (0.0, True)
    assert (fit.estimate, fit.variance) == (fit.labels_estimate, fit.labels_variance)
    unguarded = fit_stratum(y, f, f_rows, design="run", tuning="power", guard=False, smooth=False)
    assert unguarded.lam == power_weight(y, f, f_rows, design="run") and unguarded.guarded is False


def test_a_weight_clipped_to_zero_is_not_the_guard_s_doing():
    y, f, f_rows = sample(15, 30, 90)
    fit = fit_stratum(-y, f, f_rows, design="run", tuning="power", guard=True, smooth=False)
    assert (fit.lam, fit.guarded) == (0.0, False)


# ---- the overlap of two samples, the t quantile, the degrees of freedom -----------------------


def test_the_overlap_covariance_is_cochrans_two_occasion_formula():
    ra, rb = np.array([0.1, 0.5, 0.2, 0.9]), np.array([0.3, 0.4, 0.1, 0.8])
    s_ab = np.cov(ra, rb)[0, 1]
    assert overlap_covariance(ra, rb, 10, 8, 50) == pytest.approx(s_ab * (4 / 80 - 1 / 50), abs=1e-16)
    assert overlap_covariance(ra[:2], rb[:2], 10, 8, 50) == pytest.approx(
        np.cov(ra[:2], rb[:2])[0, 1] * (2 / 80 - 1 / 50), abs=1e-16
    )
    assert overlap_covariance(ra[:1], rb[:1], 10, 8, 50) == 0.0  # one shared row estimates no covariance


@pytest.mark.parametrize("df", [3.0, 3.5, 5.0])
def test_the_t_quantile_from_three_degrees_of_freedom_is_students(df):
    z = float(stats.norm.ppf(0.975))
    assert t_quantile(z, df) == pytest.approx(float(stats.t.ppf(0.975, df)), abs=1e-12)


def test_the_satterthwaite_degrees_of_freedom_by_hand():
    contributions, labelled = [0.004, 0.001, 0.0025], [20, 2, 9]
    by_hand = sum(contributions) ** 2 / (0.004**2 / 19 + 0.001**2 / 1 + 0.0025**2 / 8)
    assert satterthwaite(contributions, labelled) == pytest.approx(by_hand, rel=1e-14)
    assert satterthwaite([0.004], [20]) == pytest.approx(19.0, rel=1e-14)  # one stratum: n - 1


def test_strata_of_one_labelled_row_add_no_degrees_of_freedom_term():
    assert satterthwaite([0.004, 0.001], [20, 1]) == pytest.approx(0.005**2 / (0.004**2 / 19), rel=1e-14)
    assert satterthwaite([0.004, 0.001], [1, 1]) == math.inf  # nothing to count: the normal quantile
    assert satterthwaite([0.0, 0.0], [5, 5]) == math.inf
