"""Kappa's table arithmetic at its edges and the label sequences it accepts (against sklearn where it applies)."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from evalcore.engine import UndefinedMetricWarning, cohen_kappa
from evalcore.engine.agreement import _kappa_from_tables

A = ["s", "u", "s", "s", "u", "s", "u", "u", "s", "s"]
B = ["s", "u", "u", "s", "u", "s", "s", "u", "s", "u"]


def test_counts_too_large_for_integer_arithmetic_give_the_kappa_of_their_proportions():
    # n**2 of 4e9 counts overflows 64-bit integers: the table is computed in floats
    table = np.array([[2_000_000_000, 500_000_000], [500_000_000, 1_000_000_000]], dtype=np.int64)
    kappa, observed, expected = _kappa_from_tables(table)
    small = _kappa_from_tables(table // 500_000_000)
    assert float(kappa) == pytest.approx(float(small[0]), rel=1e-12)
    # in units of 5e8 the table is [[4, 1], [1, 2]]: observed 6/8, chance (5/8)^2 + (3/8)^2, kappa 7/15
    assert (float(observed), float(expected), float(kappa)) == pytest.approx((0.75, 34 / 64, 7 / 15), rel=1e-12)


def test_chance_agreement_within_1e_12_of_one_makes_kappa_undefined_and_no_nearer_than_that():
    kappa_near, _, expected_near = _kappa_from_tables(np.array([[1.0, 1e-13], [0.0, 0.0]]))
    assert 0 < 1 - float(expected_near) <= 1e-12 and np.isnan(kappa_near)
    for gap in (1e-10, 1e-7):  # within numpy's default tolerances of isclose, but not within 1e-12
        kappa, _, expected = _kappa_from_tables(np.array([[1.0, gap], [0.0, 0.0]]))
        assert 1 - float(expected) > 1e-12 and float(kappa) == pytest.approx(0.0, abs=1e-6)


def test_empty_and_one_label_tables_give_nan_without_numpy_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for table in ([[0.0, 0.0], [0.0, 0.0]], [[5.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 3.0]]):
            kappa, _, _ = _kappa_from_tables(np.array(table))
            assert np.isnan(kappa)


def test_labels_may_come_from_any_iterable_once():
    expected = cohen_kappa_score(A, B)
    assert cohen_kappa(iter(A), (label for label in B)) == pytest.approx(expected, abs=1e-12)
    assert cohen_kappa(tuple(A), np.array(B)) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("a, b", [([["s", "u"], ["u", "s"]], ["s", "u"]), (["s", "u"], [["s", "u"], ["u", "s"]])])
def test_either_rater_given_a_table_instead_of_a_sequence_is_refused(a, b):
    with pytest.raises(ValueError, match="must be one-dimensional sequences of labels"):
        cohen_kappa(a, b)


def test_the_undefined_kappa_warning_points_away_from_the_engine():
    with pytest.warns(UndefinedMetricWarning) as caught:
        value = cohen_kappa(["s"] * 5, ["s"] * 5)
    assert np.isnan(value)
    where = caught[0].filename
    assert os.path.basename(where) != "agreement.py"  # the caller's line, not the engine's
    if "MUTANT_UNDER_TEST" not in os.environ:  # under ./dev mutate a trampoline stands between the two
        assert where == __file__
