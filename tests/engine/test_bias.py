"""The bias battery's engine: flips beyond the placebo, clustered by item, Holm across probes.

Cross-checks: with one claim an item the interval is Tango's (:func:`tango_interval`) and the test is McNemar's
(statsmodels); the design effect's clustered variance is statsmodels' cluster-robust OLS variance of a mean.
Seeded simulations against a known truth: coverage of the interval with correlated claims, and the family-wise
error of the battery when no probe has any bias.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import statsmodels.api as sm
from statsmodels.stats.contingency_tables import mcnemar

from evalcore.engine.bias import (
    TO_SUPPORTED,
    TO_UNSUPPORTED,
    bias_battery,
    design_effect,
    flip_beyond_placebo,
)
from evalcore.engine.paired_proportions import tango_interval


def _case(rng: np.random.Generator, *, items: int, probe_rate: float, placebo_rate: float, spread: float = 0.0):
    """Claims in items of 1-4; baseline unsupported half the time; per item flip chances around the given rates."""
    sizes = rng.integers(1, 5, size=items)
    clusters = np.repeat(np.arange(items), sizes)
    n = clusters.size
    base = rng.random(n) < 0.5
    if spread:
        a = probe_rate * (1 / spread - 1)
        item_rate = rng.beta(a, a * (1 - probe_rate) / probe_rate, size=items) if probe_rate else np.zeros(items)
    else:
        item_rate = np.full(items, probe_rate)
    flip = rng.random(n) < item_rate[clusters]
    placebo_flip = rng.random(n) < placebo_rate
    return base, base ^ flip, base ^ placebo_flip, clusters


def test_with_one_claim_an_item_the_interval_is_tangos_and_the_test_is_mcnemars():
    rng = np.random.default_rng(3)
    base = rng.random(300) < 0.4
    probe = base ^ (rng.random(300) < 0.12)
    placebo = base ^ (rng.random(300) < 0.03)
    result = flip_beyond_placebo(base, probe, placebo, np.arange(300))
    at_risk = ~base
    c = int(np.sum((probe != base) & (placebo == base) & at_risk))
    b = int(np.sum((placebo != base) & (probe == base) & at_risk))
    reference = tango_interval(b, c, int(at_risk.sum()))
    assert result.design_effect == 1.0
    assert (result.only_probe, result.only_placebo, result.n) == (c, b, at_risk.sum())
    assert result.low == pytest.approx(reference.low, abs=1e-9)
    assert result.high == pytest.approx(reference.high, abs=1e-9)
    assert result.estimate == pytest.approx(reference.estimate)
    chi2 = mcnemar([[0, b], [c, 0]], exact=False, correction=False).statistic
    z = -np.sqrt(chi2) if c < b else np.sqrt(chi2)
    assert result.p_value == pytest.approx(1 - __import__("scipy").stats.norm.cdf(z), rel=1e-9)


def test_the_clustered_variance_is_statsmodels_cluster_robust_variance_of_the_mean():
    rng = np.random.default_rng(11)
    base, probe, placebo, clusters = _case(rng, items=120, probe_rate=0.2, placebo_rate=0.05, spread=0.3)
    e = (probe != base).astype(float) - (placebo != base).astype(float)
    fit = sm.OLS(e, np.ones_like(e)).fit(cov_type="cluster", cov_kwds={"groups": clusters})
    independent = sm.OLS(e, np.ones_like(e)).fit()
    expected = max(1.0, fit.bse[0] ** 2 / independent.bse[0] ** 2)
    assert design_effect(e, clusters) == pytest.approx(expected, rel=1e-9)
    assert expected > 1.05  # the case really is clustered


def test_the_direction_picks_the_claims_at_risk():
    base = np.array([False] * 10 + [True] * 10)
    probe = base.copy()
    probe[:4] = True  # four unsupported turned supported
    probe[10] = False  # one supported turned unsupported
    to_supported = flip_beyond_placebo(base, probe, base, np.arange(20), direction=TO_SUPPORTED)
    to_unsupported = flip_beyond_placebo(base, probe, base, np.arange(20), direction=TO_UNSUPPORTED)
    assert (to_supported.n, to_supported.flips, to_supported.estimate) == (10, 4, 0.4)
    assert (to_unsupported.n, to_unsupported.flips, to_unsupported.estimate) == (10, 1, 0.1)
    assert to_supported.p_value < to_unsupported.p_value


def test_the_placebos_flips_are_taken_off():
    base = np.zeros(100, dtype=bool)
    probe = base.copy()
    probe[:20] = True
    placebo = base.copy()
    placebo[10:18] = True  # noise flips eight, two of them the probe's
    result = flip_beyond_placebo(base, probe, placebo, np.arange(100))
    assert result.flip_rate == 0.2 and result.placebo_rate == 0.08
    assert result.estimate == pytest.approx(0.12)
    assert result.only_probe == 12 and result.only_placebo == 0


def test_no_flip_at_all_still_leaves_doubt():
    base = np.zeros(100, dtype=bool)
    result = flip_beyond_placebo(base, base, base, np.arange(100))
    assert result.estimate == 0 and result.p_value == 0.5
    assert result.low < 0 < 0.03 < result.high < 0.05


def test_correlated_flips_widen_the_interval():
    base = np.zeros(200, dtype=bool)
    probe = base.copy()
    probe[:30] = True
    alone = flip_beyond_placebo(base, probe, base, np.arange(200))
    paired = flip_beyond_placebo(base, probe, base, np.arange(200) // 10)  # ten claims an item, flips together
    assert paired.design_effect > 5
    assert paired.high - paired.low > 2 * (alone.high - alone.low)
    assert paired.p_value > alone.p_value


def test_no_claim_at_risk_is_no_test():
    base = np.ones(5, dtype=bool)
    result = flip_beyond_placebo(base, base, base, np.arange(5))
    assert result.n == 0 and math.isnan(result.estimate) and math.isnan(result.p_value)
    battery = bias_battery(base, {"padding": base}, base, np.arange(5))
    assert battery.family == 1 and not battery.blocks


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: flip_beyond_placebo([True], [True, False], [True], [0]), "probe has 2 verdicts"),
        (lambda: flip_beyond_placebo([True], [True], [True], [0, 1]), "clusters has 2 entries"),
        (lambda: flip_beyond_placebo([2], [1], [1], [0]), "baseline must hold verdicts"),
        (lambda: flip_beyond_placebo([True], [True], [True], [0], direction="up"), "direction must be one of"),
        (lambda: bias_battery([True], {}, [True], [0]), "at least one probe"),
        (lambda: bias_battery([True], {"p": [True]}, [True], [0], bar=1.5), "bar must be"),
        (lambda: bias_battery([True], {"p": [True]}, [True], [0], correction="bh"), "correction must be one of"),
    ],
)
def test_bad_input_is_refused_saying_what(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_a_probe_blocks_only_when_significant_and_above_the_bar():
    rng = np.random.default_rng(5)
    base = np.zeros(400, dtype=bool)
    strong = base ^ (rng.random(400) < 0.15)
    slight = base ^ (rng.random(400) < 0.02)
    result = bias_battery(base, {"authority": strong, "padding": slight}, base, np.arange(400), bar=0.05)
    by_name = {(f.probe, f.flips.direction): f for f in result.findings}
    assert by_name["authority", TO_SUPPORTED].blocks
    assert not by_name["padding", TO_SUPPORTED].blocks  # perhaps significant, but under the bar
    assert result.family == 2  # no supported claim: the other direction has nobody at risk
    assert result.blocking == (by_name["authority", TO_SUPPORTED],)


def _coverage(reps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    truth = 0.15 - 0.03
    hits = 0
    for _ in range(reps):
        base, probe, placebo, clusters = _case(rng, items=150, probe_rate=0.15, placebo_rate=0.03, spread=0.3)
        result = flip_beyond_placebo(base, probe, placebo, clusters)
        hits += result.low <= truth <= result.high
    return hits / reps


def test_the_clustered_interval_covers_a_known_truth():
    assert _coverage(300, seed=2026) >= 0.92  # nominal 0.95; Monte Carlo error about 1.3 points


@pytest.mark.slow
def test_the_clustered_interval_covers_a_known_truth_long():
    assert 0.93 <= _coverage(2000, seed=7) <= 0.975


def _family_wise_error(reps: int, seed: int, correction: str) -> float:
    rng = np.random.default_rng(seed)
    alarms = 0
    for _ in range(reps):
        items = 150
        sizes = rng.integers(1, 4, size=items)
        clusters = np.repeat(np.arange(items), sizes)
        base = rng.random(clusters.size) < 0.5
        noise = 0.05
        placebo = base ^ (rng.random(clusters.size) < noise)
        probes = {f"p{k}": base ^ (rng.random(clusters.size) < noise) for k in range(5)}
        result = bias_battery(base, probes, placebo, clusters, bar=0.0, correction=correction)
        alarms += result.blocks
    return alarms / reps


def test_holm_holds_the_family_wise_error_when_no_probe_has_a_bias():
    corrected = _family_wise_error(300, seed=99, correction="holm")
    uncorrected = _family_wise_error(300, seed=99, correction="none")
    assert corrected <= 0.07  # alpha 0.05 over ten tests; Monte Carlo error about 1.3 points
    assert uncorrected > corrected
