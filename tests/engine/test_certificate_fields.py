"""A certificate's every field, as stored and as JSON, and what ``certify_intervals`` accepts at its edges.

The numbers are worked out by hand from the documented rules: kappa's standard error is half its
interval's width over ``z``; "label about N more" shrinks both intervals' distances to their estimates
by ``sqrt(failures / (failures + N))`` for intervals given from elsewhere.
"""

from __future__ import annotations

import math

import pytest

from evalcore.engine import (
    INCONCLUSIVE,
    CertificateBars,
    Interval,
    ProportionEstimate,
    certify_intervals,
    certify_judge,
)
from evalcore.engine.proportions import z_score

GIVEN = dict(kappa=Interval(0.8, 0.7, 0.9), miss_rate=Interval(0.1, 0.05, 0.22), items=100, failure_items=30, missed=3)


def test_a_certificate_from_given_intervals_holds_every_field_and_says_it_in_json():
    cert = certify_intervals(**GIVEN, weights="linear")
    # miss high 0.1 + 0.12 s <= 0.15 first at s = sqrt(30 / 173): 143 more failures, 143 * 100 / 30 -> 477 items
    assert (cert.state, cert.more_failure_labels, cert.more_items) == (INCONCLUSIVE, 143, 477)
    assert cert.kappa.se == pytest.approx(0.2 / (2 * 1.959963984540054), rel=1e-12)
    assert (cert.kappa.confidence, cert.kappa.undefined_reason) == (0.95, None)
    assert (cert.miss_rate.n, cert.miss_rate.confidence, cert.miss_rate.method) == (30, 0.95, "given")
    assert math.isnan(cert.miss_rate.se)
    data = cert.as_dict()
    assert data.pop("kappa")["se"] == pytest.approx(cert.kappa.se, rel=1e-12)
    assert data == {
        "state": "inconclusive",
        "miss_rate": {
            "estimate": 0.1,
            "low": 0.05,
            "high": 0.22,
            "n": 30,
            "missed": 3,
            "confidence": 0.95,
            "method": "given",
        },
        "items": 100,
        "failure_items": 30,
        "missed": 3,
        "more_failure_labels": 143,
        "more_items": 477,
        "reasons": [
            "misses up to 22 % of failure-class items (upper end of its 95 % interval) against a 15 % bar",
            "weighted kappa (linear) 0.80, at least 0.70 (lower end of its 95 % interval), clears the 0.6 bar",
            "label about 143 more failure-class items (about 477 more items at the sample's share) to decide",
        ],
        "bars": {"max_miss_rate": 0.15, "min_kappa": 0.6, "confidence": 0.95},
    }
    kappa = cert.as_dict()["kappa"]
    del kappa["se"]
    assert kappa == {
        "estimate": 0.8,
        "low": 0.7,
        "high": 0.9,
        "confidence": 0.95,
        "weights": "linear",
        "undefined_reason": None,
    }
    assert cert.sentence() == "inconclusive: " + "; ".join(cert.reasons)


def test_a_given_proportion_keeps_its_standard_error_and_method_and_the_bars_confidence_is_used():
    bars = CertificateBars(confidence=0.9)
    given = ProportionEstimate(0.1, 0.05, 0.22, n=30, se=0.04, confidence=0.9, method="wald")
    cert = certify_intervals(**{**GIVEN, "miss_rate": given}, bars=bars)
    assert (cert.miss_rate.se, cert.miss_rate.method, cert.miss_rate.confidence) == (0.04, "wald", 0.9)
    assert cert.kappa.se == pytest.approx(0.2 / (2 * z_score(0.9)), rel=1e-12)
    assert cert.kappa.confidence == 0.9 and cert.weights is None
    assert cert.reasons[1] == "kappa 0.80, at least 0.70 (lower end of its 90 % interval), clears the 0.6 bar"
    assert cert.as_dict()["bars"] == {"max_miss_rate": 0.15, "min_kappa": 0.6, "confidence": 0.9}


@pytest.mark.parametrize("confidence", [0.95, 0.8])
def test_without_failure_class_items_the_miss_rate_is_unknown_anywhere_in_zero_to_one(confidence):
    bars = CertificateBars(confidence=confidence)
    from_intervals = certify_intervals(**{**GIVEN, "failure_items": 0, "missed": 0}, bars=bars).miss_rate
    from_labels = certify_judge(human_failure=[False] * 5, judge_failure=[False] * 5, bars=bars).miss_rate
    for miss in (from_intervals, from_labels):
        assert (miss.low, miss.high, miss.n, miss.confidence, miss.method) == (0.0, 1.0, 0, confidence, "wilson")
        assert math.isnan(miss.estimate) and math.isnan(miss.se)
    data = certify_intervals(**{**GIVEN, "failure_items": 0, "missed": 0}, bars=bars).as_dict()["miss_rate"]
    assert data["estimate"] is None and data["n"] == 0


def test_the_counts_may_meet_at_their_edges():
    every = certify_intervals(**{**GIVEN, "failure_items": 100, "missed": 100, "miss_rate": Interval(1.0, 0.9, 1.0)})
    assert (every.items, every.failure_items, every.missed) == (100, 100, 100)
    none_missed = certify_intervals(**{**GIVEN, "missed": 0})
    assert none_missed.missed == 0 and none_missed.as_dict()["missed"] == 0
    at_high = certify_intervals(**{**GIVEN, "kappa": Interval(0.9, 0.7, 0.9)})  # an estimate at its bound is held
    assert at_high.kappa.estimate == 0.9


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({"items": 0}, ValueError, "items must be a positive integer, got 0"),
        ({"failure_items": -1}, ValueError, "failure_items must be a non-negative integer, got -1"),
        ({"missed": -1}, ValueError, "missed must be a non-negative integer, got -1"),
        ({"failure_items": 101}, ValueError, "need missed <= failure_items <= items, got missed=3, failure_items=101"),
        (
            {"missed": 31},
            ValueError,
            "need missed <= failure_items <= items, got missed=31, failure_items=30, items=100",
        ),
        ({"kappa": (0.8, 0.7, 0.9)}, TypeError, r"kappa must be an Interval \(estimate, low, high\)"),
        ({"miss_rate": Interval(0.3, 0.05, 0.2)}, ValueError, r"miss_rate's interval must hold its estimate, got \("),
        ({"kappa": Interval(0.6, 0.7, 0.9)}, ValueError, "kappa's interval must hold its estimate"),
        ({"bars": {"max_miss_rate": 0.1}}, TypeError, "^bars must be a CertificateBars$"),
    ],
)
def test_certify_intervals_names_what_is_wrong(change, error, message):
    with pytest.raises(error, match=message):
        certify_intervals(**{**GIVEN, **change})


@pytest.mark.parametrize(
    ("bars", "message"),
    [
        ({"max_miss_rate": 0.0}, "max_miss_rate must be strictly between 0 and 1, got 0.0"),
        ({"confidence": 1.0}, "confidence must be strictly between 0 and 1, got 1.0"),
        ({"min_kappa": True}, "min_kappa must be a number between -1 and 1, got True"),
        ({"min_kappa": "0.6"}, "min_kappa must be a number between -1 and 1, got '0.6'"),
        ({"min_kappa": -1.0}, r"min_kappa must be strictly between -1 and 1, got -1.0$"),
    ],
)
def test_bars_name_what_is_wrong(bars, message):
    with pytest.raises(ValueError, match=message):
        CertificateBars(**bars)


def test_an_integer_kappa_bar_is_a_number():
    assert CertificateBars(min_kappa=0).min_kappa == 0


def test_a_given_kappa_keeps_its_reason_for_being_undefined_and_a_nan_one_gets_the_engine_s():
    from evalcore.engine.agreement import KAPPA_UNDEFINED_REASON, KappaEstimate

    why = "kappa is undefined: the judge said the same thing of every item"
    given = KappaEstimate(math.nan, math.nan, math.nan, se=math.nan, confidence=0.95, undefined_reason=why)
    kept = certify_intervals(**{**GIVEN, "kappa": given})
    assert kept.kappa.undefined_reason == why and kept.reasons[1] == why and kept.state == INCONCLUSIVE
    assert kept.as_dict()["kappa"]["undefined_reason"] == why
    bare = certify_intervals(**{**GIVEN, "kappa": Interval(math.nan, math.nan, math.nan)})
    assert bare.kappa.undefined_reason == KAPPA_UNDEFINED_REASON and bare.reasons[1] == KAPPA_UNDEFINED_REASON
    defined = certify_intervals(**{**GIVEN, "kappa": KappaEstimate(0.8, 0.7, 0.9, se=0.05, confidence=0.95)})
    assert defined.kappa.undefined_reason is None
