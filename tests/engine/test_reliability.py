"""The human ceiling: Krippendorff's alpha with a unit bootstrap interval, and the majority-label baseline."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest

from evalcore.engine.reliability import (
    ALPHA_UNDEFINED_REASON,
    krippendorff_alpha,
    krippendorff_alpha_interval,
    majority_baseline,
)


def _ratings(rng, *, units, annotators, categories, keep=0.6, missing=0.3):
    """A reliability matrix (annotators x units, NaN missing) and the same data as a list of units."""
    truth = rng.integers(1, categories + 1, units)
    data = np.where(rng.random((annotators, units)) < keep, truth, rng.integers(1, categories + 1, (annotators, units)))
    data = data.astype(float)
    data[rng.random((annotators, units)) < missing] = np.nan
    listed = [[int(v) for v in data[:, u] if not np.isnan(v)] for u in range(units)]
    return data, listed


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_matches_the_krippendorff_package_on_generated_data(level):
    rng = np.random.default_rng(40)
    checked = 0
    for _ in range(150):
        data, units = _ratings(
            rng,
            units=int(rng.integers(3, 80)),
            annotators=int(rng.integers(2, 7)),
            categories=int(rng.integers(2, 7)),
            keep=rng.uniform(0, 0.9),
        )
        ours = krippendorff_alpha_interval(units, level=level, resamples=20)
        if ours.undefined_reason:
            continue
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        assert ours.estimate == pytest.approx(expected, abs=1e-12)
        checked += 1
    assert checked > 120


def test_nominal_alpha_agrees_with_the_existing_point_function_and_strings_work():
    units = [["a", "a"], ["b", "b"], ["a", "b"], ["a", "a", "a"], ["c", "b"]]
    assert krippendorff_alpha_interval(units).estimate == pytest.approx(krippendorff_alpha(units), abs=1e-15)


def test_ordinal_alpha_counts_near_misses_and_interval_alpha_needs_numbers():
    units = [[1, 2], [2, 3], [4, 5], [5, 4], [1, 1], [3, 3], [2, 2], [5, 5]]
    nominal = krippendorff_alpha_interval(units, level="nominal").estimate
    ordinal = krippendorff_alpha_interval(units, level="ordinal").estimate
    assert ordinal > nominal
    with pytest.raises(ValueError, match="interval alpha needs numeric labels, got 'a'"):
        krippendorff_alpha_interval([["a", "b"], ["a", "a"]], level="interval")
    with pytest.raises(ValueError, match="level must be one of"):
        krippendorff_alpha_interval(units, level="ratio")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="units must be a sequence of items"):
        krippendorff_alpha_interval({"q1": [1, 2]})  # type: ignore[arg-type]


def test_undefined_alpha_says_why_and_the_interval_is_seeded():
    est = krippendorff_alpha_interval([[1, 1], [1, 1, 1], [2]])
    assert math.isnan(est.estimate) and est.undefined_reason == ALPHA_UNDEFINED_REASON
    units = [[1, 1, 2], [3, 3], [4, 4, 4], [2, 3], [5, 5], [1, 2], [4, 5, 4], [2, 2]] * 4
    first = krippendorff_alpha_interval(units, level="ordinal", seed=3)
    assert first == krippendorff_alpha_interval(units, level="ordinal", seed=3)
    assert first.low < first.estimate < first.high
    assert (first.units, first.pairable_values, first.resamples) == (32, 4 * 19, 2000)


def _coverage(level, *, units, sims, seed, resamples=400):
    """Share of bootstrap intervals covering alpha of the population (one huge sample of the same model)."""
    rng = np.random.default_rng(seed)
    _, population = _ratings(rng, units=60_000, annotators=3, categories=4, keep=0.5, missing=0.2)
    truth = krippendorff_alpha_interval(population, level=level, resamples=1).estimate
    covered = 0
    for k in range(sims):
        _, sample = _ratings(rng, units=units, annotators=3, categories=4, keep=0.5, missing=0.2)
        est = krippendorff_alpha_interval(sample, level=level, resamples=resamples, seed=k)
        covered += est.low <= truth <= est.high
    return covered / sims


@pytest.mark.parametrize("level", ["nominal", "ordinal"])
def test_the_unit_bootstrap_interval_covers_the_population_alpha_by_simulation(level):
    coverage = _coverage(level, units=120, sims=200, seed=41)
    assert 0.9 <= coverage <= 0.985, coverage  # measured 0.945 (nominal) and 0.94 (ordinal)


@pytest.mark.slow
@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
@pytest.mark.parametrize("units", [40, 200])
def test_the_unit_bootstrap_coverage_over_sizes_slow(level, units):
    coverage = _coverage(level, units=units, sims=1000, seed=42, resamples=1000)
    assert 0.925 <= coverage <= 0.97, coverage


def test_majority_baseline_is_the_share_of_the_most_frequent_label():
    assert majority_baseline(["s"] * 150 + ["u"] * 50) == 0.75
    assert majority_baseline([1, 2, 3, 3]) == 0.5
    assert majority_baseline([True]) == 1.0
    with pytest.raises(ValueError, match="empty"):
        majority_baseline([])
    with pytest.raises(ValueError, match="missing label"):
        majority_baseline([1, None])
    with pytest.raises(TypeError, match="not a string"):
        majority_baseline("ssu")
