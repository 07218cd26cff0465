"""Agreement between raters: Cohen's kappa, its standard error and interval, the judge's error rates."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.stats import norm
from sklearn.exceptions import UndefinedMetricWarning as SklearnUndefinedMetricWarning
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa as statsmodels_kappa

from evalcore.engine import (
    KAPPA_UNDEFINED_REASON,
    SUPPORTED,
    UNSUPPORTED,
    UndefinedMetricWarning,
    binary_agreement,
    cohen_kappa,
    kappa_interval,
    kappa_standard_error,
    proportion_interval,
)
from evalcore.engine.agreement import _kappa_from_table, _kappa_from_tables
from evalcore.engine.judge import kappa_bootstrap

from . import spec_reference as spec
from .spec_reference import SPEC_HUMAN, SPEC_JUDGE


def paired_labels(labels, min_size=1, max_size=120):
    return st.integers(min_size, max_size).flatmap(
        lambda n: st.tuples(st.lists(labels, min_size=n, max_size=n), st.lists(labels, min_size=n, max_size=n))
    )


def labels_from_table(table: np.ndarray) -> tuple[list[int], list[int]]:
    a, b = [], []
    for i in range(table.shape[0]):
        for j in range(table.shape[1]):
            a += [i] * int(table[i, j])
            b += [j] * int(table[i, j])
    return a, b


def sklearn_kappa(a, b) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SklearnUndefinedMetricWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)  # "A single label was found"
        return float(cohen_kappa_score(a, b))


def count_tables(size: int):
    return st.lists(st.integers(0, 40), min_size=size * size, max_size=size * size).map(
        lambda cells: np.array(cells, dtype=np.int64).reshape(size, size)
    )


# --------------------------------------------------------------------------------------------
# Cohen's kappa
# --------------------------------------------------------------------------------------------


def assert_kappa_equals_scikit_learn(a, b) -> None:
    """Our kappa of two raters' labels is scikit-learn's (NaN where scikit-learn's is undefined)."""
    expected = sklearn_kappa(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        got = cohen_kappa(a, b)
    if math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(expected, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(paired_labels(st.sampled_from([0, 1])))
def test_binary_kappa_equals_scikit_learn(pair):
    assert_kappa_equals_scikit_learn(*pair)


@settings(max_examples=40, deadline=None)
@given(paired_labels(st.sampled_from(["none", "partial", "full", "n/a"])))
def test_multi_class_kappa_equals_scikit_learn(pair):
    assert_kappa_equals_scikit_learn(*pair)


@settings(max_examples=60, deadline=None)
@given(paired_labels(st.sampled_from([0, 1])))
def test_binary_kappa_equals_the_spec_function_where_it_is_defined(pair):
    a, b = pair
    pa, pb = sum(a) / len(a), sum(b) / len(b)
    assume(pa * pb + (1 - pa) * (1 - pb) < 1)
    assert cohen_kappa(a, b) == pytest.approx(spec.cohen_kappa(a, b), abs=1e-12)


@pytest.mark.parametrize("labels", [[1, 1, 1], [0, 0], ["yes"] * 5])
def test_kappa_is_nan_with_a_warning_when_both_raters_give_one_and_the_same_label(labels):
    with pytest.warns(UndefinedMetricWarning, match="kappa is undefined"):
        value = cohen_kappa(labels, list(labels))
    assert math.isnan(value)


def test_undefined_kappa_never_raises_zero_division_where_the_spec_code_does():
    with pytest.raises(ZeroDivisionError):
        spec.cohen_kappa([1, 1], [1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # anything but our warning would raise here
        with pytest.raises(UndefinedMetricWarning):
            cohen_kappa([1, 1], [1, 1])


@pytest.mark.filterwarnings("ignore:A single label was found")
def test_scikit_learn_also_returns_nan_with_an_undefined_metric_warning_for_a_single_shared_label():
    with pytest.warns(SklearnUndefinedMetricWarning):
        assert math.isnan(cohen_kappa_score([1, 1, 1], [1, 1, 1]))


def test_engine_warning_class_is_a_user_warning():
    assert issubclass(UndefinedMetricWarning, UserWarning)


def test_kappa_is_zero_when_raters_use_different_single_labels():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cohen_kappa([1, 1, 1], [0, 0, 0]) == 0.0


def test_kappa_is_one_for_perfect_agreement_and_minus_one_for_perfect_disagreement_on_balanced_labels():
    assert cohen_kappa([0, 1, 0, 1], [0, 1, 0, 1]) == 1.0
    assert cohen_kappa([0, 1, 0, 1], [1, 0, 1, 0]) == -1.0


@settings(max_examples=60, deadline=None)
@given(paired_labels(st.sampled_from([0, 1, 2])), st.permutations(["x", "y", "z"]))
def test_kappa_is_symmetric_in_the_raters_and_invariant_to_renaming_labels(pair, names):
    a, b = pair
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        value = cohen_kappa(a, b)
        swapped = cohen_kappa(b, a)
        renamed = cohen_kappa([names[x] for x in a], [names[x] for x in b])
    if math.isnan(value):
        assert math.isnan(swapped) and math.isnan(renamed)
    else:
        assert swapped == pytest.approx(value, abs=1e-12)
        assert renamed == pytest.approx(value, abs=1e-12)


def test_kappa_accepts_booleans_numpy_arrays_and_tuples():
    a = np.array([True, True, False, False, True])
    b = (True, False, False, False, True)
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa([1, 1, 0, 0, 1], [1, 0, 0, 0, 1]))


# --------------------------------------------------------------------------------------------
# Standard error and interval against statsmodels
# --------------------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(st.sampled_from([2, 3, 4]).flatmap(count_tables), st.sampled_from([0.9, 0.95, 0.99]))
def test_kappa_standard_error_and_interval_equal_statsmodels(table, confidence):
    assume(table.sum() > 0)
    n = table.sum()
    pe = float(table.sum(axis=1) @ table.sum(axis=0)) / n**2
    assume(pe < 1 - 1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        reference = statsmodels_kappa(table)  # its interval is always at 95 %
    # statsmodels takes the square root of a variance that rounds to -3e-16 (NaN); the engine clips at 0
    assert reference.var_kappa > -1e-12
    expected_se = math.sqrt(max(reference.var_kappa, 0.0))
    z = norm.ppf(0.5 + confidence / 2)
    low, high = reference.kappa - z * expected_se, reference.kappa + z * expected_se
    if confidence == 0.95 and not math.isnan(reference.std_kappa):
        assert (low, high) == pytest.approx((reference.kappa_low, reference.kappa_upp), rel=1e-9, abs=1e-12)
    assert kappa_standard_error(table) == pytest.approx(expected_se, rel=1e-7, abs=1e-7)
    a, b = labels_from_table(table)
    est = kappa_interval(a, b, confidence=confidence)
    assert est.estimate == pytest.approx(reference.kappa, abs=1e-12)
    assert est.se == pytest.approx(expected_se, rel=1e-7, abs=1e-7)
    assert est.low == pytest.approx(low, rel=1e-7, abs=1e-6)
    assert est.high == pytest.approx(high, rel=1e-7, abs=1e-6)
    assert est.confidence == confidence
    assert est.undefined_reason is None


def test_spec_example_kappa_interval_equals_statsmodels():
    table = np.array([[28, 22], [8, 142]])
    reference = statsmodels_kappa(table)
    est = kappa_interval(SPEC_HUMAN, SPEC_JUDGE)
    assert est.se == pytest.approx(reference.std_kappa, rel=1e-12)
    assert (est.low, est.high) == pytest.approx((reference.kappa_low, reference.kappa_upp), rel=1e-12)
    assert kappa_standard_error(table) == pytest.approx(0.0705, abs=5e-5)


def test_a_textbook_kappa_standard_error():
    # Fleiss, Cohen and Everitt (1969) as in statsmodels' tests: symmetric 2x2 with kappa 0.6
    table = np.array([[40, 10], [10, 40]])
    assert kappa_standard_error(table) == pytest.approx(statsmodels_kappa(table).std_kappa, rel=1e-12)


def test_kappa_interval_is_nan_with_a_reason_when_kappa_is_undefined():
    est = kappa_interval([1] * 10, [1] * 10)
    assert math.isnan(est.estimate) and math.isnan(est.se) and math.isnan(est.low) and math.isnan(est.high)
    assert est.undefined_reason == KAPPA_UNDEFINED_REASON


def test_kappa_standard_error_is_nan_for_a_single_label_table():
    assert math.isnan(kappa_standard_error(np.array([[10, 0], [0, 0]])))


def test_a_wider_confidence_gives_a_wider_kappa_interval():
    narrow = kappa_interval(SPEC_HUMAN, SPEC_JUDGE, confidence=0.9)
    wide = kappa_interval(SPEC_HUMAN, SPEC_JUDGE, confidence=0.99)
    assert wide.low < narrow.low < narrow.estimate < narrow.high < wide.high


# --------------------------------------------------------------------------------------------
# The judge's error rates
# --------------------------------------------------------------------------------------------


def test_binary_agreement_confusion_table_of_the_spec_example():
    report = binary_agreement(SPEC_HUMAN, SPEC_JUDGE)
    assert report.n == 200
    assert report.labels == (SUPPORTED, UNSUPPORTED)
    assert report.counts == {(1, 1): 142, (1, 0): 8, (0, 1): 22, (0, 0): 28}
    frame = report.confusion_frame()
    assert frame.loc[0, 1] == 22 and frame.loc[1, 0] == 8
    assert frame.index.name == "people" and frame.columns.name == "judge"
    assert report.false_alarms == 8
    assert report.sensitivity == pytest.approx(28 / 50)
    assert report.specificity == pytest.approx(142 / 150)
    assert report.pass_class == SUPPORTED
    assert report.kappa_undefined_reason is None


def test_miss_rate_interval_is_the_wilson_interval_of_misses_over_failures():
    report = binary_agreement(SPEC_HUMAN, SPEC_JUDGE)
    assert report.miss_rate_interval == proportion_interval(22, 50)
    assert (round(report.miss_rate_interval.low, 2), round(report.miss_rate_interval.high, 2)) == (0.31, 0.58)


def test_failure_class_supported_swaps_the_roles_of_the_classes():
    report = binary_agreement(SPEC_HUMAN, SPEC_JUDGE, failure_class=SUPPORTED)
    assert report.failures == 150
    assert report.caught == 142
    assert report.missed == 8
    assert report.false_alarms == 22
    assert report.pass_class == UNSUPPORTED


def test_binary_agreement_with_string_labels_sorts_them_and_needs_a_failure_class():
    reference = ["yes", "yes", "no", "no", "no"]
    predicted = ["yes", "no", "yes", "no", "no"]
    report = binary_agreement(reference, predicted, failure_class="no")
    assert report.labels == ("no", "yes")
    assert report.failures == 3 and report.missed == 1 and report.caught == 2
    assert report.kappa == pytest.approx(cohen_kappa(reference, predicted))


def test_binary_agreement_with_explicit_labels_counts_a_class_nobody_used():
    report = binary_agreement(["a", "a"], ["a", "a"], labels=("a", "b"), failure_class="b")
    assert report.failures == 0
    assert math.isnan(report.miss_rate)
    assert report.miss_rate_interval is None
    assert math.isnan(report.sensitivity)
    assert report.specificity == 1.0
    assert math.isnan(report.kappa)
    assert report.kappa_undefined_reason == KAPPA_UNDEFINED_REASON


def test_binary_agreement_accepts_booleans_as_zero_one_labels():
    report = binary_agreement([True, True, False, False], [True, False, False, True])
    assert report.failures == 2 and report.missed == 1


def test_binary_agreement_uses_custom_rater_names_in_the_sentence():
    report = binary_agreement(SPEC_HUMAN, SPEC_JUDGE, reference_name="annotators", predicted_name="gpt judge")
    assert report.miss_sentence(item="replies", failure_word="wrong") == (
        "the gpt judge passed 22 of the 50 replies annotators found wrong"
    )


@settings(max_examples=80, deadline=None)
@given(paired_labels(st.sampled_from([0, 1]), min_size=2))
def test_binary_agreement_counts_add_up_and_match_kappa(pair):
    reference, predicted = pair
    report = binary_agreement(reference, predicted)
    assert sum(report.counts.values()) == report.n == len(reference)
    assert report.caught + report.missed == report.failures == reference.count(0)
    assert report.agreement == pytest.approx(np.mean(np.array(reference) == np.array(predicted)))
    assert report.reference_rate[0] + report.reference_rate[1] == pytest.approx(1.0)
    assert report.predicted_rate[0] == pytest.approx(predicted.count(0) / len(predicted))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        kappa = cohen_kappa(reference, predicted)
    assert (math.isnan(kappa) and math.isnan(report.kappa)) or report.kappa == pytest.approx(kappa)


# --------------------------------------------------------------------------------------------
# One formula for kappa: cohen_kappa / binary_agreement and the judge's bootstrap share it
# --------------------------------------------------------------------------------------------


def _labels_of(table):
    """Rater labels (1 = supported) that give the 2x2 table [[1-1, 1-0], [0-1, 0-0]]."""
    (a, b), (c, d) = table
    return [1] * (a + b) + [0] * (c + d), [1] * a + [0] * b + [1] * c + [0] * d


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=4, max_size=4).filter(any))
def test_the_judge_bootstrap_and_cohen_kappa_give_the_same_kappa_for_a_table(cells):
    table = [cells[:2], cells[2:]]
    human, judge = _labels_of(table)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        scalar = cohen_kappa(human, judge)
    boot = kappa_bootstrap(table, iterations=20)
    report = binary_agreement(human, judge, labels=(1, 0))
    if math.isnan(scalar):
        assert math.isnan(boot.estimate) and math.isnan(report.kappa)
    else:
        assert boot.estimate == scalar == report.kappa


def test_the_vectorised_kappa_of_stacked_tables_equals_each_table_on_its_own():
    rng = np.random.default_rng(4)
    tables = rng.integers(0, 30, size=(200, 3, 3))
    tables[:5] = 0
    tables[:5, 1, 1] = 7  # one label only: undefined
    kappa, observed, expected = _kappa_from_tables(tables)
    assert kappa.shape == observed.shape == expected.shape == (200,)
    assert np.isnan(kappa[:5]).all() and np.isfinite(kappa[5:]).all()
    for i in range(5, 200):
        assert (kappa[i], observed[i], expected[i]) == _kappa_from_table(tables[i])
        assert kappa[i] == pytest.approx(cohen_kappa_score(*_pairs_of(tables[i])), abs=1e-12)


def _pairs_of(table):
    m = len(table)
    a = [i for i in range(m) for j in range(m) for _ in range(int(table[i][j]))]
    b = [j for i in range(m) for j in range(m) for _ in range(int(table[i][j]))]
    return a, b


def test_kappa_without_a_second_class_has_no_standard_error_and_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no division by zero behind the NaN
        assert math.isnan(kappa_standard_error([[40, 0], [0, 0]]))
        assert math.isnan(kappa_standard_error(np.array([[0, 0], [0, 7]], dtype=np.int64)))


def test_an_undefined_kappa_interval_keeps_its_level_and_says_why():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimate = kappa_interval(["a"] * 6, ["a"] * 6, confidence=0.9)
    assert estimate.confidence == 0.9
    assert math.isnan(estimate.estimate) and math.isnan(estimate.se)
    assert estimate.undefined_reason == KAPPA_UNDEFINED_REASON


def test_one_rater_given_as_a_string_is_refused_whichever_side():
    for a, b in (("ab", [1, 0]), ([1, 0], "ab")):
        with pytest.raises(TypeError, match=r"^labels must be sequences of labels, not strings$"):
            cohen_kappa(a, b)


def test_kappa_over_labels_of_mixed_types_orders_them_by_type_then_value():
    # an object column can hold an int beside strings: counted, not refused
    a = np.array([1, 1, "x", "x", "y"], dtype=object)
    b = np.array([1, "x", "x", "x", "y"], dtype=object)
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score([str(v) for v in a], [str(v) for v in b]))
