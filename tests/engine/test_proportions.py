"""Standard errors and intervals of pass rates, and paired sample sizes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm
from statsmodels.stats.proportion import proportion_confint

from evalcore.engine import (
    ProportionEstimate,
    detectable_difference,
    paired_sample_size,
    proportion_interval,
    proportion_se,
    z_score,
)

confidences = st.sampled_from([0.8, 0.9, 0.95, 0.99])


@st.composite
def count_and_n(draw):
    n = draw(st.integers(1, 2000))
    return draw(st.integers(0, n)), n


def test_z_score_at_95_percent_is_1_96_and_equals_scipy():
    assert z_score(0.95) == pytest.approx(1.959964, abs=1e-6)
    for confidence in (0.5, 0.8, 0.9, 0.99, 0.999):
        assert z_score(confidence) == pytest.approx(norm.ppf(0.5 + confidence / 2), rel=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.floats(0, 1), st.integers(1, 10_000))
def test_proportion_se_is_sqrt_p_times_one_minus_p_over_n(p, n):
    assert proportion_se(p, n) == pytest.approx(math.sqrt(p * (1 - p) / n), rel=1e-12, abs=0)


def test_proportion_se_is_zero_at_the_ends():
    assert proportion_se(0.0, 10) == 0.0 and proportion_se(1.0, 10) == 0.0


@settings(max_examples=200, deadline=None)
@given(count_and_n(), confidences)
def test_wilson_interval_equals_statsmodels(pair, confidence):
    count, n = pair
    est = proportion_interval(count, n, confidence=confidence)
    low, high = proportion_confint(count, n, alpha=1 - confidence, method="wilson")
    assert est.low == pytest.approx(low, rel=1e-9, abs=1e-12)
    assert est.high == pytest.approx(high, rel=1e-9, abs=1e-12)
    assert est.method == "wilson"
    assert est.low <= est.estimate <= est.high


@settings(max_examples=200, deadline=None)
@given(count_and_n(), confidences)
def test_wald_interval_is_p_plus_or_minus_z_se_clipped_to_zero_one_and_equals_statsmodels_normal(pair, confidence):
    count, n = pair
    est = proportion_interval(count, n, confidence=confidence, method="wald")
    p = count / n
    se = math.sqrt(p * (1 - p) / n)
    z = norm.ppf(0.5 + confidence / 2)
    assert est.se == pytest.approx(se, abs=1e-15)
    assert est.low == pytest.approx(max(0.0, p - z * se), abs=1e-12)
    assert est.high == pytest.approx(min(1.0, p + z * se), abs=1e-12)
    low, high = proportion_confint(count, n, alpha=1 - confidence, method="normal")
    assert (est.low, est.high) == pytest.approx((low, high), abs=1e-12)


def test_wilson_interval_contains_p_exactly_at_zero_and_one():
    # regression: rounding put the Wilson lower bound of a zero count at 1e-17, above p = 0
    for n in (1, 20, 557, 10_000):
        for confidence in (0.8, 0.95):
            zero = proportion_interval(0, n, confidence=confidence)
            one = proportion_interval(n, n, confidence=confidence)
            assert zero.low == 0.0 < zero.high
            assert one.low < one.high == 1.0


def test_wilson_interval_of_a_zero_count_is_not_degenerate_where_wald_is():
    wilson = proportion_interval(0, 20)
    wald = proportion_interval(0, 20, method="wald")
    assert wilson.low == 0.0 and wilson.high > 0.1
    assert wald.low == 0.0 and wald.high == 0.0


def test_a_float_successes_is_read_as_a_proportion_and_an_int_as_a_count():
    as_rate = proportion_interval(0.7, 300)
    as_count = proportion_interval(210, 300)
    assert as_rate.estimate == pytest.approx(as_count.estimate)
    assert (as_rate.low, as_rate.high) == pytest.approx((as_count.low, as_count.high))
    assert as_count.successes == 210
    assert proportion_interval(np.int64(3), 10).estimate == 0.3


def test_proportion_estimate_records_its_inputs():
    est = proportion_interval(22, 50, confidence=0.9, method="wald")
    assert isinstance(est, ProportionEstimate)
    assert (est.estimate, est.n, est.confidence, est.method) == (0.44, 50, 0.9, "wald")


def test_doc_example_miss_rate_interval():
    est = proportion_interval(22, 50)
    assert (round(est.low, 2), round(est.high, 2)) == (0.31, 0.58)


# --------------------------------------------------------------------------------------------
# Sample sizes
# --------------------------------------------------------------------------------------------


def test_paired_sample_size_doc_example_is_483():
    assert paired_sample_size(0.04, discordant=0.10) == 483


@settings(max_examples=150, deadline=None)
@given(
    st.floats(0.005, 0.5),
    st.floats(0.01, 2.0),
    confidences,
    st.sampled_from([0.5, 0.8, 0.9, 0.95]),
)
def test_paired_sample_size_equals_the_normal_approximation_formula(difference, sd, confidence, power):
    expected = math.ceil(((norm.ppf(0.5 + confidence / 2) + norm.ppf(power)) * sd / difference) ** 2)
    got = paired_sample_size(difference, sd=sd, confidence=confidence, power=power)
    # the exact real value can sit on an integer boundary; allow the rounding to go either way there
    assert abs(got - expected) <= 1
    raw = ((z_score(confidence) + norm.ppf(power)) * sd / difference) ** 2
    assert got == math.ceil(raw)


def test_paired_sample_size_with_discordant_uses_sd_squared_equals_discordant_minus_difference_squared():
    assert paired_sample_size(0.04, discordant=0.10) == paired_sample_size(0.04, sd=math.sqrt(0.10 - 0.04**2))


def test_paired_sample_size_ignores_the_sign_of_the_difference():
    assert paired_sample_size(-0.03, sd=0.3) == paired_sample_size(0.03, sd=0.3)


def test_a_smaller_change_needs_more_questions():
    assert paired_sample_size(0.01, sd=0.3) > paired_sample_size(0.02, sd=0.3) > paired_sample_size(0.05, sd=0.3)


@settings(max_examples=100, deadline=None)
@given(st.floats(0.005, 0.5), st.floats(0.01, 2.0))
def test_detectable_difference_inverts_paired_sample_size(difference, sd):
    n = paired_sample_size(difference, sd=sd)
    assert detectable_difference(n, sd=sd) <= difference * (1 + 1e-9)
    if n > 1:
        assert detectable_difference(n - 1, sd=sd) > difference * (1 - 1e-9)


def test_detectable_difference_doc_example():
    assert round(detectable_difference(300, sd=0.3), 3) == 0.049


def test_paired_sample_size_gives_about_the_requested_power_in_simulation():
    difference, sd = 0.1, 0.5
    n = paired_sample_size(difference, sd=sd, power=0.8)
    rng = np.random.default_rng(2024)
    diffs = rng.normal(difference, sd, size=(4000, n))
    z = diffs.mean(axis=1) / (sd / math.sqrt(n))
    power = float(np.mean(np.abs(z) > norm.ppf(0.975)))
    assert 0.77 <= power <= 0.83
    # and one third of the questions gives clearly less power
    small = diffs[:, : n // 3]
    z_small = small.mean(axis=1) / (sd / math.sqrt(n // 3))
    assert float(np.mean(np.abs(z_small) > norm.ppf(0.975))) < 0.5


def test_a_boolean_sd_is_refused_not_read_as_one():
    with pytest.raises(ValueError, match=r"^sd must be a positive finite number, got True$"):
        paired_sample_size(0.05, sd=True)


def test_a_change_that_needs_exactly_every_flip_there_is_refused():
    # a change of 0.5 with 25 % of questions flipping leaves no variance: no sample size follows
    with pytest.raises(
        ValueError, match=r"^a change of 0.5 needs more than 25.0 % of questions to flip \(0.25 given\)$"
    ):
        paired_sample_size(0.5, discordant=0.25)


def test_detectable_difference_names_a_bad_confidence():
    with pytest.raises(ValueError, match=r"^confidence must be strictly between 0 and 1, got 1.5$"):
        detectable_difference(100, sd=0.3, confidence=1.5)


@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.99])
def test_every_success_gives_a_wilson_interval_ending_exactly_at_one(confidence):
    # the Wilson bound is 1 in exact arithmetic; in floating point it can land a hair above
    for n in range(1, 120):
        assert proportion_interval(n, n, confidence=confidence).high == 1.0
        assert proportion_interval(0, n, confidence=confidence).low == 0.0
