"""The judge against people on a stratified sample, weighted back to its population: equal weights
give the sample's own numbers (checked against scikit-learn), integer weights equal replicating the
items, the weighted miss rate recovers a known population's where the raw one is biased, and the
interval covers the truth about 95 % of the time over simulated campaigns."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from evalcore.engine import binary_agreement, proportion_interval, stratified_agreement

PASS, FAIL = 1, 0


def labels_of(table) -> tuple[list[int], list[int]]:
    """People's labels and the judge's verdicts of the items a 2x2 table counts (pass first)."""
    people, judge = [], []
    for (h, j), count in zip([(PASS, PASS), (PASS, FAIL), (FAIL, PASS), (FAIL, FAIL)], np.asarray(table).ravel()):
        people += [h] * int(count)
        judge += [j] * int(count)
    return people, judge


def test_equal_weights_give_the_samples_own_kappa_and_miss_rate():
    tables = [[[60, 3], [9, 1]], [[2, 20], [0, 25]]]
    result = stratified_agreement(tables, [1.0, 1.0])
    people, judge = labels_of(np.sum(tables, axis=0))
    assert result.kappa.estimate == pytest.approx(cohen_kappa_score(people, judge))
    pooled = binary_agreement(people, judge, failure_class=FAIL, labels=(PASS, FAIL))
    assert result.miss_rate.estimate == pytest.approx(pooled.miss_rate)
    assert result.agreement == pytest.approx(pooled.agreement)
    (tn, fp), (fn, tp) = confusion_matrix(people, judge, labels=[FAIL, PASS])  # fail = negative
    assert result.false_fail_rate.estimate == pytest.approx(fn / (fn + tp))
    assert result.people_fail_rate == pytest.approx((tn + fp) / len(people))


def test_integer_weights_equal_replicating_each_stratums_items():
    tables = np.array([[[30, 1], [5, 0]], [[3, 10], [0, 12]]])
    weights = [7, 2]
    replicated = np.einsum("s,sij->ij", weights, tables)
    people, judge = labels_of(replicated)
    result = stratified_agreement(tables, weights)
    assert result.kappa.estimate == pytest.approx(cohen_kappa_score(people, judge))
    assert result.miss_rate.estimate == pytest.approx(replicated[1, 0] / replicated[1].sum())


def population_and_sample(
    rng,
    *,
    n_pass_verdicts=4000,
    n_fail_verdicts=500,
    miss=0.36,
    false_fail=0.03,
    people_fail=0.12,
    sample_pass=180,
    sample_fail=60,
):
    """A judge with known error rates, and a campaign that over-samples its rare "fail" verdict."""
    # population: items by (people, judge); the judge passes `miss` of people's failures
    people_fail_n = int(people_fail * (n_pass_verdicts + n_fail_verdicts))
    missed = int(round(miss * people_fail_n))
    caught = people_fail_n - missed
    false_fails = n_fail_verdicts - caught
    strata = {
        PASS: [(PASS, PASS)] * (n_pass_verdicts - missed) + [(FAIL, PASS)] * missed,
        FAIL: [(PASS, FAIL)] * false_fails + [(FAIL, FAIL)] * caught,
    }
    true_miss = missed / people_fail_n
    tables, weights = [], []
    for verdict, size in ((PASS, sample_pass), (FAIL, sample_fail)):
        members = strata[verdict]
        chosen = rng.choice(len(members), size=size, replace=False)
        table = np.zeros((2, 2), dtype=int)
        for index in chosen:
            h, j = members[index]
            table[0 if h == PASS else 1, 0 if j == PASS else 1] += 1
        tables.append(table)
        weights.append(len(members) / size)
    return np.array(tables), np.array(weights), true_miss


def test_the_weighted_miss_rate_recovers_the_population_where_the_raw_sample_is_biased():
    rng = np.random.default_rng(3)
    raw, weighted, truth = [], [], None
    for _ in range(200):
        tables, weights, truth = population_and_sample(rng)
        pooled = tables.sum(axis=0)
        raw.append(pooled[1, 0] / pooled[1].sum())
        weighted.append(stratified_agreement(tables, weights, iterations=200).miss_rate.estimate)
    assert truth == pytest.approx(0.36, abs=0.01)
    assert np.mean(raw) < truth - 0.15  # over-sampling the judge's "fail" verdict hides its misses
    assert np.mean(weighted) == pytest.approx(truth, abs=0.03)


def test_the_miss_rate_interval_covers_the_population_value_about_95_percent_of_the_time():
    rng = np.random.default_rng(11)
    reps, covered = 300, 0
    truth = None
    for _ in range(reps):
        tables, weights, truth = population_and_sample(rng)
        interval = stratified_agreement(tables, weights, iterations=1000, seed=int(rng.integers(1 << 30))).miss_rate
        covered += interval.low <= truth <= interval.high
    coverage = covered / reps
    # 95 % nominal; the Monte Carlo error of 300 campaigns is about 1.3 points, the bootstrap a little liberal
    assert 0.88 <= coverage <= 0.99, coverage


def test_with_equal_weights_the_rate_intervals_are_the_samples_wilson_intervals():
    result = stratified_agreement([[[60, 3], [9, 1]], [[2, 20], [0, 25]]], [1.0, 1.0])
    wilson = proportion_interval(9, 35)  # missed of the failures people found
    assert (result.miss_rate.low, result.miss_rate.high) == pytest.approx((wilson.low, wilson.high))


def test_a_rate_of_zero_in_the_sample_still_gets_an_upper_bound():
    result = stratified_agreement([[[40, 0], [0, 0]], [[1, 5], [0, 16]]], [6.0, 1.0])
    assert result.miss_rate.estimate == 0.0 and result.miss_rate.low == 0.0
    # not "0-0 %": none of the 40 judge-passed items failed, but they stand for 240, and a 7 % failure rate among
    # them (quite possible at 0 of 40) would be 17 misses beside the 16 failures caught
    assert 0.3 < result.miss_rate.high < 0.6


def test_a_class_people_never_used_leaves_its_rate_undefined_not_zero():
    result = stratified_agreement([[[40, 2], [0, 0]]], [3.0])
    assert math.isnan(result.miss_rate.estimate) and math.isnan(result.miss_rate.low)
    assert result.false_fail_rate.estimate == pytest.approx(2 / 42)


@pytest.mark.parametrize(
    ("tables", "weights", "message"),
    [
        ([[1, 2], [3, 4]], [1.0], "shape"),
        ([[[1, 2], [3, -4]]], [1.0], "counts of 0 or more"),
        ([[[1, 2], [3, 4]]], [0.0], "positive number per stratum"),
        ([[[1, 2], [3, 4]]], [1.0, 2.0], "positive number per stratum"),
        ([[[0, 0], [0, 0]]], [1.0], "no labelled items"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(tables, weights, message):
    with pytest.raises(ValueError, match=message):
        stratified_agreement(tables, weights)


def test_every_interval_holds_its_own_estimate_even_where_no_stratum_shows_an_error():
    """The resamples are smoothed (a stratum that shows no miss may hold some), which pulls them below a
    perfect or near-perfect judge's kappa: the demo's tuned judge once read "kappa 0.93 (0.49–0.91)"."""
    tables = [[[11, 0], [0, 0]], [[1, 0], [0, 2]], [[13, 1], [0, 0]], [[1, 0], [0, 4]]]
    tables += [[[15, 0], [0, 1]], [[0, 0], [0, 6]], [[13, 0], [0, 1]], [[2, 0], [0, 2]]]  # the demo's, held out
    weights = [21.6364, 9.0, 20.0, 7.4, 20.25, 8.1667, 20.2143, 8.0]
    result = stratified_agreement(tables, weights)
    assert result.kappa.estimate == pytest.approx(0.9297, abs=1e-4)
    assert result.kappa.low < 0.6 and result.kappa.high == result.kappa.estimate
    for interval in (result.miss_rate, result.false_fail_rate):
        assert interval.low <= interval.estimate <= interval.high
