"""Weighted kappa on an ordinal scale: cross-checked against scikit-learn (point) and statsmodels (standard error)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa as statsmodels_kappa

from evalcore.engine import UndefinedMetricWarning, weighted_kappa, weighted_kappa_interval
from evalcore.engine.weighted_kappa import _scale_table, agreement_weights

SCALE = [1, 2, 3, 4, 5]


def _ordinal_pair(rng, n, m, noise=1):
    a = rng.integers(1, m + 1, n)
    b = np.clip(a + rng.integers(-noise, noise + 1, n), 1, m)
    return a, b


@pytest.mark.parametrize("weights", ["linear", "quadratic"])
def test_weighted_kappa_matches_scikit_learn_to_1e_12_on_generated_data(weights):
    rng = np.random.default_rng(20)
    checked = 0
    for _ in range(300):
        n, m = int(rng.integers(2, 400)), int(rng.integers(2, 8))
        a, b = _ordinal_pair(rng, n, m, noise=int(rng.integers(0, 3)))
        scale = list(range(1, m + 1))
        ours = weighted_kappa(a, b, weights=weights, labels=scale) if len(set(a) | set(b)) > 1 else None
        if ours is None:
            continue
        assert ours == pytest.approx(cohen_kappa_score(a, b, weights=weights, labels=scale), abs=1e-12)
        checked += 1
    assert checked > 250


@pytest.mark.parametrize("weights", ["linear", "quadratic"])
def test_the_standard_error_is_statsmodels_fleiss_cohen_everitt_variance(weights):
    rng = np.random.default_rng(21)
    for _ in range(200):
        n, m = int(rng.integers(5, 400)), int(rng.integers(2, 7))
        a, b = _ordinal_pair(rng, n, m, noise=2)
        scale = list(range(1, m + 1))
        if len(set(a) | set(b)) < 2:
            continue
        est = weighted_kappa_interval(a, b, weights=weights, labels=scale)
        reference = statsmodels_kappa(_scale_table(a, b, scale), wt=weights)
        assert est.estimate == pytest.approx(reference.kappa, abs=1e-12)
        assert est.se == pytest.approx(math.sqrt(reference.var_kappa), abs=1e-12)
        assert est.low == pytest.approx(est.estimate - 1.959963984540054 * est.se, abs=1e-12)


def test_a_label_nobody_used_still_counts_on_the_declared_scale():
    people, judge = [1, 2, 4, 5, 5, 2, 4], [1, 4, 4, 5, 4, 2, 1]  # nobody used 3: 4 and 5 sit further from 1 and 2
    declared = weighted_kappa(people, judge, weights="linear", labels=SCALE)
    seen = weighted_kappa(people, judge, weights="linear")
    assert declared == pytest.approx(cohen_kappa_score(people, judge, weights="linear", labels=SCALE), abs=1e-12)
    assert seen == pytest.approx(cohen_kappa_score(people, judge, weights="linear"), abs=1e-12)
    assert declared != pytest.approx(seen)


def test_unweighted_on_two_labels_is_cohen_kappa_and_weights_have_the_stated_shape():
    a, b = [0, 1, 1, 0, 1, 1, 0], [0, 1, 0, 0, 1, 1, 1]
    assert weighted_kappa(a, b, weights="linear") == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    assert agreement_weights(5, weights="quadratic")[0].tolist() == [1.0, 0.9375, 0.75, 0.4375, 0.0]
    with pytest.raises(ValueError, match="weights must be 'linear' or 'quadratic'"):
        agreement_weights(3, weights="cubic")


def test_undefined_when_both_raters_used_one_label_and_bad_input_is_named():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert math.isnan(weighted_kappa([3, 3], [3, 3], weights="linear", labels=SCALE))
    assert caught[0].category is UndefinedMetricWarning
    est = weighted_kappa_interval([3, 3], [3, 3], weights="quadratic")
    assert math.isnan(est.low) and est.undefined_reason
    with pytest.raises(ValueError, match=r"label 7 is not one of the expected labels \[1, 2, 3, 4, 5\]"):
        weighted_kappa([1, 7], [1, 2], weights="linear", labels=SCALE)
    with pytest.raises(ValueError, match="each label of the scale once"):
        weighted_kappa([1, 2], [1, 2], weights="linear", labels=[1, 1, 2])
    with pytest.raises(ValueError, match="same items in the same order"):
        weighted_kappa([1, 2, 3], [1, 2], weights="linear")
    with pytest.raises(ValueError, match="weights must be"):
        weighted_kappa([1, 2], [1, 2], weights="ordinal")  # type: ignore[arg-type]


def _coverage(weights, n, sims, seed):
    """Share of Wald intervals covering the population's weighted kappa, items drawn from a fixed 5x5 table."""
    rng = np.random.default_rng(seed)
    truth = np.array(
        [
            [10, 4, 1, 0, 0],
            [3, 12, 4, 1, 0],
            [1, 4, 14, 4, 1],
            [0, 1, 4, 12, 3],
            [0, 0, 1, 4, 10],
        ],
        dtype=float,
    )
    truth /= truth.sum()
    big = np.rint(truth * 10**6)
    true_kappa = statsmodels_kappa(big, wt=weights).kappa
    cells = rng.choice(25, size=(sims, n), p=truth.ravel())
    covered = 0
    for row in cells:
        a, b = row // 5 + 1, row % 5 + 1
        est = weighted_kappa_interval(a, b, weights=weights, labels=SCALE)
        covered += est.low <= true_kappa <= est.high
    return covered / sims


@pytest.mark.parametrize("weights", ["linear", "quadratic"])
def test_the_95_percent_interval_covers_the_true_weighted_kappa_by_simulation(weights):
    coverage = _coverage(weights, n=150, sims=600, seed=22)
    assert 0.92 <= coverage <= 0.975, (
        coverage
    )  # measured 0.928 (linear) and 0.925 (quadratic) on these 600 runs; 0.942 and 0.938 on 2000


@pytest.mark.slow
@pytest.mark.parametrize("weights", ["linear", "quadratic"])
@pytest.mark.parametrize("n", [50, 200, 800])
def test_the_interval_coverage_over_sizes_slow(weights, n):
    coverage = _coverage(weights, n=n, sims=4000, seed=23)
    # measured with 4000 runs: linear 0.938 / 0.948 / 0.951, quadratic 0.925-0.93 / 0.944 / 0.955 at n 50 / 200 / 800
    assert 0.92 <= coverage <= 0.965, coverage
