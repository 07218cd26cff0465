"""Tango's score interval at its edges: the score where the null is impossible or the table is empty, the
score against a numerical maximum likelihood near a table of no change, the interval's fields, its ends at
-1 and +1, and the names in its errors."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest
from scipy import optimize

from evalcore.engine.paired_proportions import PairedProportionInterval, tango_interval, tango_score
from evalcore.engine.proportions import z_score


def reference_score(b: int, c: int, n: int, delta: float) -> float:
    """Tango's score with the nuisance parameter by numerical maximum likelihood (not the closed form)."""
    lo, hi = max(0.0, -delta), (1.0 - delta) / 2.0  # p_b >= 0, p_c = p_b + delta >= 0, p_b + p_c <= 1

    def negative_log_likelihood(p: float) -> float:
        terms = b * math.log(p) if b else 0.0
        terms += c * math.log(p + delta) if c else 0.0
        rest = n - b - c
        terms += rest * math.log(1.0 - 2.0 * p - delta) if rest else 0.0
        return -terms

    p = optimize.minimize_scalar(
        negative_log_likelihood, bounds=(lo + 1e-15, hi - 1e-15), method="bounded", options={"xatol": 1e-15}
    ).x
    return (c - b - n * delta) / math.sqrt(n * (2 * p + delta - delta**2))


@pytest.mark.parametrize(
    ("b", "c", "n", "delta"),
    [
        (0, 0, 40, 0.001),
        (0, 0, 40, -0.003),
        (0, 2, 40, 0.01),
        (1, 0, 300, -0.0005),
        (20, 7, 300, -0.05),
        (3, 9, 50, 0.2),
    ],
)
def test_the_score_equals_a_numerical_maximum_likelihood_even_a_hair_from_no_change(b, c, n, delta):
    # near delta = 0 on a table with no fall (or no rise) the constrained p_b is 0 or a whisker above it
    assert tango_score(b, c, n, delta) == pytest.approx(reference_score(b, c, n, delta), rel=1e-6, abs=1e-9)


def test_the_score_where_the_null_is_impossible_or_the_table_says_nothing():
    assert tango_score(0, 0, 40, 0.0) == 0.0  # no change at all: no evidence either way at delta = 0
    assert tango_score(3, 1, 30, 1.0) == -math.inf  # every question rising is refuted by any that did not
    assert tango_score(3, 1, 30, -1.0) == math.inf  # and every question falling, likewise
    assert tango_score(0, 30, 30, 1.0) == 0.0  # ... unless every question did rise
    assert tango_score(30, 0, 30, -1.0) == 0.0  # ... or fall


def test_the_interval_carries_its_table_and_level():
    interval = tango_interval(20, 7, 300, confidence=0.9)
    assert isinstance(interval, PairedProportionInterval)
    assert (interval.b, interval.c, interval.n, interval.confidence) == (20, 7, 300, 0.9)
    assert tango_interval(20, 7, 300).confidence == 0.95
    assert interval.low > tango_interval(20, 7, 300).low  # a narrower interval at 90 %


def test_every_question_rising_has_its_upper_bound_at_one():
    interval = tango_interval(0, 40, 40)
    mirror = tango_interval(40, 0, 40)
    assert interval.high == 1.0 and interval.estimate == 1.0
    assert interval.low == pytest.approx(-mirror.high, rel=1e-12)


def test_a_table_at_the_edge_of_the_search_reaches_minus_one_or_one():
    # every question but one in a trillion fell (rose): not even a difference of -1 (+1) is rejected
    n = 10**12
    fell = tango_interval(n - 1, 0, n)
    assert fell.low == -1.0 and fell.estimate < fell.high < -1 + 1e-10
    rose = tango_interval(0, n - 1, n)
    assert rose.high == 1.0 and 1 - 1e-10 < rose.low < rose.estimate


def test_the_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"^n must be a positive integer, got 0"):
        tango_interval(0, 0, 0)
    with pytest.raises(ValueError, match=r"^c must be a non-negative integer, got -1"):
        tango_interval(0, -1, 10)
    with pytest.raises(ValueError, match=r"^confidence must be strictly between 0 and 1, got 1.5"):
        tango_interval(0, 0, 10, confidence=1.5)


def _level_with_z_at(score: float) -> float | None:
    """The confidence whose z is exactly ``score`` (searched over neighbouring floats), or None."""
    if not 0.0 < score < 6.0:
        return None
    level = 2.0 * (NormalDist().cdf(score) - 0.5)
    for step in range(-300, 301):
        candidate = level + step * math.ulp(level)
        if 0.0 < candidate < 1.0 and z_score(candidate) == score:
            return candidate
    return None


@pytest.mark.parametrize("side", ["high", "low"])
def test_an_end_whose_score_is_exactly_the_critical_value_is_in_the_interval(side):
    # the interval is the closed set {delta : -z <= T(delta) <= z}: where the score at the end of the search
    # (delta = 1 - 1e-12, or its mirror) is exactly -z (z), that end is not rejected and the bound is 1 (-1);
    # at a confidence one float lower, z is a shade smaller and the bound a root just inside
    edge = 1.0 - 1e-12
    for n in (10**9, 10**12, 2 * 10**12, 3 * 10**12, 4 * 10**12):
        for gap in range(2, 7):
            if side == "high":
                b, c, score = 0, n - gap, -tango_score(0, n - gap, n, edge)
            else:
                b, c, score = n - gap, 0, tango_score(n - gap, 0, n, -edge)
            level = _level_with_z_at(score)
            if level is not None:
                break
        if level is not None:
            break
    assert level is not None, "no table with a score exactly at a z found"
    at, below = tango_interval(b, c, n, confidence=level), tango_interval(b, c, n, confidence=np.nextafter(level, 0))
    if side == "high":
        assert at.high == 1.0 and below.high < 1.0
    else:
        assert at.low == -1.0 and below.low > -1.0
