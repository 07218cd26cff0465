"""Tango's score interval for paired pass/fail scores: a published example, an independent numerical
implementation, and its exact behaviour at the gate's boundary."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from evalcore.engine import gate
from evalcore.engine.paired_proportions import tango_interval, tango_score

from .gate_simulation import exact_pass_rate


def reference_tango(b, c, n, confidence=0.95):
    """Tango's interval computed from its definition: the nuisance parameter by numerical maximum likelihood
    (not the closed form), the bounds by Brent's method."""
    z = stats.norm.ppf(0.5 + confidence / 2)

    def score(delta):
        lo, hi = max(0.0, -delta), (1.0 - delta) / 2.0  # p_b >= 0, p_c = p_b + delta >= 0, p_b + p_c <= 1

        def negative_log_likelihood(p):
            terms = b * math.log(p) if b else 0.0
            terms += c * math.log(p + delta) if c else 0.0
            rest = n - b - c
            terms += rest * math.log(1.0 - 2.0 * p - delta) if rest else 0.0
            return -terms

        eps = 1e-13
        p = optimize.minimize_scalar(
            negative_log_likelihood, bounds=(lo + eps, hi - eps), method="bounded", options={"xatol": 1e-14}
        ).x
        variance = n * (2 * p + delta - delta**2)
        return (c - b - n * delta) / math.sqrt(variance)

    estimate = (c - b) / n
    low = optimize.brentq(lambda d: score(d) - z, -1 + 1e-9, estimate - 1e-12) if b else None
    high = optimize.brentq(lambda d: score(d) + z, estimate + 1e-12, 1 - 1e-9) if c else None
    return estimate, low, high


def test_tango_reproduces_the_published_example_of_cavo_2012():
    # Fagerland, Lydersen and Laake, "Statistical Analysis of Contingency Tables" (2017), the paired 2x2 table
    # (59, 6; 16, 80): their R package prints "estimate = -0.0621 (95% CI -0.1240 to -0.0054)"
    interval = tango_interval(16, 6, 161)
    assert (round(interval.estimate, 4), round(interval.low, 4), round(interval.high, 4)) == (-0.0621, -0.1240, -0.0054)


@pytest.mark.parametrize(("b", "c", "n"), [(20, 7, 300), (3, 1, 30), (12, 12, 100), (40, 3, 1000), (5, 0, 60)])
def test_tango_equals_an_independent_numerical_implementation(b, c, n):
    interval = tango_interval(b, c, n)
    estimate, low, high = reference_tango(b, c, n)
    assert interval.estimate == pytest.approx(estimate)
    if low is not None:
        assert interval.low == pytest.approx(low, abs=1e-7)
    if high is not None:
        assert interval.high == pytest.approx(high, abs=1e-7)


def test_the_score_at_no_difference_is_mcnemars_statistic():
    assert tango_score(20, 7, 300, 0.0) == pytest.approx((7 - 20) / math.sqrt(27))


def test_no_change_still_leaves_doubt_that_shrinks_with_n():
    for n in (40, 400):
        interval = tango_interval(0, 0, n)
        z2 = stats.norm.ppf(0.975) ** 2
        assert interval.high == pytest.approx(z2 / (n + z2), rel=1e-9)  # the closed form at b = c = 0
        assert interval.low == pytest.approx(-interval.high)


def test_every_question_falling_has_its_lower_bound_at_minus_one():
    interval = tango_interval(40, 0, 40)
    assert interval.low == -1.0 and interval.estimate == -1.0 and interval.high < -0.8


def test_counts_that_do_not_fit_are_refused():
    with pytest.raises(ValueError, match=r"b \+ c \(pairs that changed, 11\) cannot exceed n \(all pairs, 10\)"):
        tango_interval(6, 5, 10)
    with pytest.raises(ValueError, match="b must be a non-negative integer"):
        tango_interval(-1, 0, 10)


@pytest.mark.parametrize("n", [100, 300, 1000])
@pytest.mark.parametrize("discordance", [0.04, 0.10])
def test_a_pass_fail_change_of_exactly_minus_the_margin_passes_at_most_3_percent_of_the_time(n, discordance):
    passed, total = exact_pass_rate(n, discordance)
    assert total == pytest.approx(1.0, abs=1e-9)  # every table that matters was counted
    assert passed <= 0.03
    assert passed >= 0.01  # and the rule is not so timid that it never passes a boundary case


def test_the_gate_passes_at_the_exact_rate_on_simulated_runs():
    # n = 100, 10 % of questions flip, a true change of exactly -0.02: the gate's empirical pass rate
    # over seeded simulated runs agrees with the exact probability within the simulation's error
    n, discordance, margin, reps = 100, 0.10, 0.02, 1500
    rng = np.random.default_rng(2026)
    passes = 0
    for _ in range(reps):
        fall, rise, _ = rng.multinomial(n, [(discordance + margin) / 2, (discordance - margin) / 2, 1 - discordance])
        base = np.array([1.0] * fall + [0.0] * rise + [1.0] * (n - fall - rise))
        cand = np.array([0.0] * fall + [1.0] * rise + [1.0] * (n - fall - rise))
        passes += gate("pass-fail", base, cand, margin=margin, iterations=100).status == "pass"
    exact, _ = exact_pass_rate(n, discordance)
    assert abs(passes / reps - exact) <= 3.5 * math.sqrt(exact * (1 - exact) / reps)
