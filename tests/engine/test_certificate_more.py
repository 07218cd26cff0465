""" "Label about N more": the fewest extra failure-class items that decide, against a search written out here.

The reference walks N = 1, 2, 3... and stops at the first N whose bounds decide, with the bounds written
out from the documented rules: for intervals given from elsewhere both distances to the estimates shrink
by ``sqrt(failures / (failures + N))``; for labels the miss rate's bounds are the Wilson interval (its
formula written out below, z from SciPy) at the observed rate over ``failures + N`` items, kappa's shrink
the same way. Decided means trusted (miss high <= bar and kappa low >= bar) or untrusted (miss low > bar
or kappa high < bar).
"""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

from evalcore.engine import INCONCLUSIVE, CertificateBars, Interval, certify_intervals, certify_judge
from evalcore.engine.proportions import proportion_interval

BARS = CertificateBars()


def _decided(miss_low, miss_high, kappa_low, kappa_high, bars):
    untrusted = miss_low > bars.max_miss_rate or kappa_high < bars.min_kappa
    trusted = miss_high <= bars.max_miss_rate and kappa_low >= bars.min_kappa
    return untrusted or trusted


def _scaled(kappa, miss, n):
    return lambda extra: (
        miss.estimate - (miss.estimate - miss.low) * math.sqrt(n / (n + extra)),
        miss.estimate + (miss.high - miss.estimate) * math.sqrt(n / (n + extra)),
        kappa.estimate - (kappa.estimate - kappa.low) * math.sqrt(n / (n + extra)),
        kappa.estimate + (kappa.high - kappa.estimate) * math.sqrt(n / (n + extra)),
    )


def _first_decided(bounds, bars, limit=100_000):
    return next((extra for extra in range(1, limit) if _decided(*bounds(extra), bars)), None)


def _wilson(p, n, confidence):
    z = norm.ppf((1 + confidence) / 2)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


@pytest.mark.parametrize("high", [0.1505, 0.152, 0.153, 0.1535, 0.154, 0.156, 0.158, 0.16, 0.165, 0.17, 0.19, 0.3])
def test_given_intervals_ask_for_the_first_number_that_pulls_the_miss_rate_under_its_bar(high):
    # 30 failure-class items, miss rate 10 % up to ``high``: N = 1, 3, 4, 5, 5, 8, 11, 14, 21, 29, 68, 450
    kappa, miss = Interval(0.8, 0.7, 0.9), Interval(0.1, 0.05, high)
    cert = certify_intervals(kappa=kappa, miss_rate=miss, items=90, failure_items=30, missed=3)
    expected = _first_decided(_scaled(kappa, miss, 30), BARS)
    assert cert.state == INCONCLUSIVE and cert.more_failure_labels == expected
    assert cert.more_items == math.ceil(expected * 90 / 30)


def test_the_search_finds_one_three_and_four_more_exactly():
    kappa = Interval(0.8, 0.7, 0.9)
    found = [
        certify_intervals(kappa=kappa, miss_rate=Interval(0.1, 0.05, h), items=90, failure_items=30, missed=3)
        for h in (0.1505, 0.152, 0.153, 0.1535)
    ]
    # 0.1 + (h - 0.1) sqrt(30 / (30 + N)) <= 0.15: sqrt(30/31) = 0.9837, sqrt(30/33) = 0.9535, sqrt(30/34) = 0.9393,
    # sqrt(30/35) = 0.9258
    assert [cert.more_failure_labels for cert in found] == [1, 3, 4, 5]


def test_a_miss_rate_over_its_bar_is_decided_untrusted_by_its_lower_bound_rising_over_it():
    kappa, miss = Interval(0.8, 0.7, 0.9), Interval(0.3, 0.1, 0.5)
    cert = certify_intervals(kappa=kappa, miss_rate=miss, items=100, failure_items=30, missed=9)
    # 0.3 - 0.2 sqrt(30 / (30 + N)) > 0.15 first at N = 24 (30/54 = 0.5556 < 0.5625)
    assert (cert.state, cert.more_failure_labels) == (INCONCLUSIVE, 24)
    assert cert.more_failure_labels == _first_decided(_scaled(kappa, miss, 30), BARS)


@pytest.mark.parametrize(
    ("kappa", "expected"),
    [
        # 0.7 - 0.2 s >= 0.6 at s <= 1/2: 20 / (20 + N) <= 1/4, N >= 60
        (Interval(0.7, 0.5, 0.9), 60),
        # 0.5 + 0.25 s < 0.6 at s < 0.4: 20 / (20 + N) < 0.16, N > 105
        (Interval(0.5, 0.3, 0.75), 106),
    ],
)
def test_kappa_s_interval_shrinks_towards_its_estimate_on_both_sides(kappa, expected):
    miss = Interval(0.05, 0.02, 0.1)
    cert = certify_intervals(kappa=kappa, miss_rate=miss, items=100, failure_items=20, missed=1)
    assert cert.state == INCONCLUSIVE
    assert cert.more_failure_labels == expected == _first_decided(_scaled(kappa, miss, 20), BARS)


@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.99])
@pytest.mark.parametrize(("failures", "missed"), [(20, 1), (30, 2), (25, 8)])
def test_labels_at_another_confidence_ask_for_the_wilson_interval_at_that_confidence(confidence, failures, missed):
    human = [True] * failures + [False] * (100 - failures)
    judge = [False] * missed + [True] * (failures - missed) + [False] * (100 - failures)
    bars = CertificateBars(confidence=confidence)
    cert = certify_judge(human_failure=human, judge_failure=judge, bars=bars)
    if cert.state != INCONCLUSIVE:
        assert cert.more_failure_labels is None
        return
    k, rate = cert.kappa, missed / failures

    def bounds(extra):
        low, high = _wilson(rate, failures + extra, confidence)
        shrink = math.sqrt(failures / (failures + extra))
        return low, high, k.estimate - (k.estimate - k.low) * shrink, k.estimate + (k.high - k.estimate) * shrink

    assert cert.more_failure_labels == _first_decided(bounds, bars)


def test_labels_at_90_percent_confidence_ask_for_fewer_than_at_95():
    human = [True] * 20 + [False] * 80
    judge = [False] * 1 + [True] * 19 + [False] * 80
    at_90 = certify_judge(human_failure=human, judge_failure=judge, bars=CertificateBars(confidence=0.9))
    at_95 = certify_judge(human_failure=human, judge_failure=judge)
    assert at_90.more_failure_labels < at_95.more_failure_labels
    assert at_90.state == at_95.state == INCONCLUSIVE


@pytest.mark.parametrize(("confidence", "bar"), [(0.5, 0.4), (0.8, 0.3), (0.9, 0.1), (0.95, 0.15), (0.99, 0.05)])
def test_without_failure_class_items_the_least_is_the_first_zero_miss_wilson_bound_under_the_bar(confidence, bar):
    # 0 misses of n: the Wilson upper bound is z^2 / (n + z^2)
    z2 = norm.ppf((1 + confidence) / 2) ** 2
    expected = next(n for n in range(1, 10**6) if z2 / (n + z2) <= bar * (1 - 1e-12))
    bars = CertificateBars(max_miss_rate=bar, confidence=confidence)
    cert = certify_judge(human_failure=[False] * 10, judge_failure=[False] * 10, bars=bars)
    assert cert.state == INCONCLUSIVE and cert.more_failure_labels == expected
    assert cert.reasons[-1] == f"label at least {expected} more failure-class items to decide"


def test_at_0_5_confidence_one_failure_class_item_missed_by_none_can_decide():
    cert = certify_judge(
        human_failure=[False] * 10, judge_failure=[False] * 10, bars=CertificateBars(max_miss_rate=0.4, confidence=0.5)
    )
    assert cert.more_failure_labels == 1  # 0 of 1 missed: Wilson's upper bound 0.455 / 1.455 = 0.3127 <= 0.4


def test_a_bar_exactly_at_the_zero_miss_bound_is_met_there():
    # trusted needs the upper bound *at most* the bar: a bar set at the bound of 0 misses of 7 is met by 7 items
    bar = proportion_interval(0, 7).high
    assert proportion_interval(0, 6).high > bar
    cert = certify_judge(
        human_failure=[False] * 10, judge_failure=[False] * 10, bars=CertificateBars(max_miss_rate=bar)
    )
    assert cert.more_failure_labels == 7


def test_heading_to_untrusted_by_kappa_the_given_intervals_count_the_labels_too():
    kappa, miss = Interval(0.45, 0.2, 0.7), Interval(0.1, 0.02, 0.14)
    cert = certify_intervals(kappa=kappa, miss_rate=miss, items=100, failure_items=40, missed=4)
    expected = _first_decided(_scaled(kappa, miss, 40), BARS)
    assert cert.state == INCONCLUSIVE and cert.more_failure_labels == expected
    high = _scaled(kappa, miss, 40)(expected)[3]
    assert high < BARS.min_kappa <= _scaled(kappa, miss, 40)(expected - 1)[3]


_SCORES = dict(human_failure=[1, 0], judge_failure=[1, 0], human_scores=[1, 2], judge_scores=[1, 2])


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            dict(human_failure="TF", judge_failure=[True, False]),
            TypeError,
            "human_failure must be a sequence of booleans (True: the item is in the failure class), not a string",
        ),
        (
            dict(human_failure=[True, False], judge_failure=[[True], [False]]),
            ValueError,
            "judge_failure must be a one-dimensional sequence of booleans",
        ),
        (
            dict(human_failure=[True, 2], judge_failure=[True, False]),
            ValueError,
            "human_failure must hold booleans (True: the item is in the failure class), got 2",
        ),
        (
            dict(human_failure=[1, 0], judge_failure=[1, 0], judge_scores=[1, 2]),
            ValueError,
            "give both human_scores and judge_scores, or neither",
        ),
        (_SCORES, ValueError, "weights must be 'linear' or 'quadratic' with scores, got None"),
        (
            {**_SCORES, "weights": "linear"},
            ValueError,
            "scale (the ordinal labels in order, say [1, 2, 3, 4, 5]) is required with scores",
        ),
        (
            {**_SCORES, "human_scores": [1, 2, 3], "weights": "linear", "scale": [1, 2, 3]},
            ValueError,
            "the scores must cover the failure flags' 2 items: got 3 human and 2 judge scores",
        ),
        (
            {**_SCORES, "judge_scores": [1], "weights": "linear", "scale": [1, 2, 3]},
            ValueError,
            "the scores must cover the failure flags' 2 items: got 2 human and 1 judge scores",
        ),
        (
            dict(human_failure=[1, 0], judge_failure=[1, 0], scale=[1, 2]),
            ValueError,
            "weights and scale apply to scores: give human_scores and judge_scores with them",
        ),
        (dict(human_failure=[1, 0], judge_failure=[1, 0], bars=0.15), TypeError, "bars must be a CertificateBars"),
        (
            dict(human_failure=[1, 0, 1], judge_failure=[1, 0]),
            ValueError,
            "human_failure and judge_failure must cover the same items in the same order: got 3 and 2",
        ),
        (
            dict(human_failure=[], judge_failure=[]),
            ValueError,
            "human_failure and judge_failure are empty: there is nothing to certify",
        ),
    ],
)
def test_certify_judge_names_what_is_wrong_in_full(kwargs, error, message):
    with pytest.raises(error) as caught:
        certify_judge(**kwargs)
    assert str(caught.value) == message


def test_scores_get_weighted_kappa_on_the_whole_declared_scale_at_the_bars_confidence():
    from evalcore.engine.weighted_kappa import weighted_kappa_interval

    # scores use 1, 2 and 4 of a 1-5 scale: linear weights 1 - |i - j| / 4 on the whole scale, not on 3 labels
    people = [1, 2, 4, 4, 2, 1, 4, 2, 1, 4] * 3
    judge = [1, 2, 4, 2, 2, 1, 4, 4, 1, 4] * 3
    flags_people, flags_judge = [s <= 2 for s in people], [s <= 2 for s in judge]
    cert = certify_judge(
        human_failure=flags_people,
        judge_failure=flags_judge,
        human_scores=people,
        judge_scores=judge,
        scale=[1, 2, 3, 4, 5],
        weights="linear",
        bars=CertificateBars(confidence=0.9),
    )
    whole = weighted_kappa_interval(people, judge, weights="linear", labels=[1, 2, 3, 4, 5], confidence=0.9)
    used = weighted_kappa_interval(people, judge, weights="linear", labels=None, confidence=0.9)
    at_95 = weighted_kappa_interval(people, judge, weights="linear", labels=[1, 2, 3, 4, 5])
    assert (cert.kappa.estimate, cert.kappa.low, cert.kappa.high) == (whole.estimate, whole.low, whole.high)
    assert cert.kappa.estimate != used.estimate and cert.kappa.low != at_95.low
    assert cert.kappa.confidence == 0.9


def test_flags_may_come_from_any_iterable_and_a_zero_dimensional_array_is_refused_as_not_one_dimensional():
    import numpy as np

    from_iterables = certify_judge(
        human_failure=iter([True, False] * 10), judge_failure=(f for f in [True, False] * 10)
    )
    from_lists = certify_judge(human_failure=[True, False] * 10, judge_failure=[True, False] * 10)
    assert from_iterables == from_lists
    with pytest.raises(ValueError) as caught:
        certify_judge(human_failure=np.array(True), judge_failure=[True])
    assert str(caught.value) == "human_failure must be a one-dimensional sequence of booleans"
