"""A certificate's bounds exactly at its bars: which side of each rule an interval ending on the bar falls.

The rules (docs/conventions.md, certificates): trusted when the miss rate's upper end is at most the bar and kappa's
lower end at least its bar; untrusted only when the miss rate's lower end is *over* the bar or kappa's upper end
*under* its bar. An interval that ends exactly on a bar therefore counts as within it, never as over or under.
"""

from __future__ import annotations

import math

from evalcore.engine import (
    INCONCLUSIVE,
    TRUSTED,
    CertificateBars,
    Interval,
    certificate_state,
    certify_intervals,
    certify_judge,
)

BARS = CertificateBars()  # a 15 % miss rate, kappa 0.6, at 95 %


def test_intervals_ending_exactly_on_the_bars_are_within_them_and_the_reasons_say_so():
    cert = certify_intervals(
        kappa=Interval(0.7, 0.6, 0.8), miss_rate=Interval(0.1, 0.05, 0.15), items=100, failure_items=30, missed=3
    )
    assert cert.state == TRUSTED
    assert cert.reasons == (
        "misses at most 15 % of failure-class items (upper end of its 95 % interval), within the 15 % bar",
        "kappa 0.70, at least 0.60 (lower end of its 95 % interval), clears the 0.6 bar",
    )


def test_intervals_starting_or_ending_exactly_on_the_bars_from_the_other_side_are_not_over_or_under_them():
    cert = certify_intervals(
        kappa=Interval(0.5, 0.4, 0.6), miss_rate=Interval(0.2, 0.15, 0.25), items=100, failure_items=30, missed=6
    )
    assert cert.state == INCONCLUSIVE
    assert cert.reasons[:2] == (
        "misses up to 25 % of failure-class items (upper end of its 95 % interval) against a 15 % bar",
        "kappa 0.50, as low as 0.40 (lower end of its 95 % interval) against a 0.6 bar",
    )


def test_the_state_at_each_bar_exactly():
    on_the_bars = dict(miss_low=0.15, miss_high=0.3, kappa_low=0.3, kappa_high=0.6, bars=BARS)
    assert certificate_state(**on_the_bars) == INCONCLUSIVE
    assert certificate_state(**{**on_the_bars, "miss_low": math.nextafter(0.15, 1)}) != INCONCLUSIVE
    assert certificate_state(**{**on_the_bars, "kappa_high": math.nextafter(0.6, 0)}) != INCONCLUSIVE
    assert certificate_state(miss_low=0.0, miss_high=0.15, kappa_low=0.6, kappa_high=0.9, bars=BARS) == TRUSTED


def test_a_judge_and_people_who_both_use_one_class_give_a_kappa_with_no_standard_error_at_the_bars_confidence():
    bars = CertificateBars(confidence=0.9)
    cert = certify_judge(human_failure=[False] * 30, judge_failure=[False] * 30, bars=bars)
    assert math.isnan(cert.kappa.estimate) and math.isnan(cert.kappa.se)
    assert cert.kappa.confidence == 0.9
