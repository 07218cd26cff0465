"""Holm's step-down correction, against statsmodels' implementation."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from evalcore.engine.multiplicity import CORRECTIONS, adjust, benjamini_yekutieli, check_correction, holm


@pytest.mark.parametrize("seed", range(8))
def test_holm_equals_statsmodels_on_generated_p_values(seed):
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.random(40), rng.random(10) * 1e-4, [0.0, 1.0, 0.5, 0.5]])
    rng.shuffle(p)
    reject, adjusted, _, _ = multipletests(p, alpha=0.025, method="holm")
    np.testing.assert_allclose(holm(p), adjusted, rtol=1e-12, atol=0)
    assert np.array_equal(holm(p) <= 0.025, reject)


def test_holm_leaves_untested_cells_out_of_the_family():
    p = np.array([0.01, np.nan, 0.02, np.nan])
    adjusted = holm(p)
    assert np.isnan(adjusted[[1, 3]]).all()
    np.testing.assert_allclose(adjusted[[0, 2]], multipletests([0.01, 0.02], method="holm")[1])


def test_holm_of_nothing_is_nothing_and_of_one_is_the_p_value_itself():
    assert holm([]).size == 0
    assert holm([0.03]).tolist() == [0.03]


def test_holm_rejects_what_is_not_a_p_value():
    with pytest.raises(ValueError, match=r"p_values must lie in \[0, 1\]"):
        holm([0.1, 1.5])
    with pytest.raises(ValueError, match="one-dimensional"):
        holm([[0.1, 0.2]])


def test_no_correction_returns_the_p_values_and_unknown_corrections_are_refused():
    assert adjust([0.01, 0.2], correction="none").tolist() == [0.01, 0.2]
    assert CORRECTIONS == ("holm", "none")
    with pytest.raises(ValueError, match=r"correction must be one of \('holm', 'none'\), got 'bonferroni'"):
        check_correction("bonferroni")


def test_holm_is_the_default_correction_and_a_missing_p_value_is_left_out_like_nan():
    p = [0.01, 0.04, 0.03, 0.005]
    assert adjust(p).tolist() == holm(p).tolist()
    with_none = holm([0.01, None, 0.02])
    assert np.isnan(with_none[1]) and with_none[[0, 2]].tolist() == pytest.approx([0.02, 0.02])
    as_given = adjust([None, 0.1], correction="none")
    assert np.isnan(as_given[0]) and as_given[1] == 0.1


def test_holm_names_what_is_wrong_with_its_p_values_in_full():
    with pytest.raises(ValueError) as caught:
        holm([0.1, -0.5])
    assert str(caught.value) == "p_values must lie in [0, 1] (or be NaN for a cell that was not tested)"
    with pytest.raises(ValueError) as caught:
        holm([[0.1, 0.2]])
    assert str(caught.value) == "p_values must be one-dimensional, got shape (1, 2)"


@pytest.mark.parametrize("correct", [holm, benjamini_yekutieli])
def test_tied_p_values_get_one_adjusted_value_in_any_order(correct):
    # ties broken either way give the same numbers: permuting the input only permutes the output
    p = np.array([0.02, 0.01, 0.02, 0.3, 0.02, 0.01, np.nan, 0.3])
    adjusted = correct(p)
    for value in (0.01, 0.02, 0.3):
        assert len(set(adjusted[p == value].tolist())) == 1
    rng = np.random.default_rng(5)
    for _ in range(20):
        order = rng.permutation(p.size)
        np.testing.assert_array_equal(correct(p[order]), adjusted[order])


def _by_written_out(p):
    """Benjamini-Yekutieli from its definition: min over j >= i of min(1, m c(m) p_(j) / j), c(m) = sum 1/k."""
    m = len(p)
    c = sum(1.0 / k for k in range(1, m + 1))
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    for rank, i in enumerate(order, start=1):
        out[i] = min(min(1.0, m * c * p[order[j - 1]] / j) for j in range(rank, m + 1))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_benjamini_yekutieli_equals_statsmodels_fdr_by_and_its_definition(seed):
    rng = np.random.default_rng(100 + seed)
    p = np.concatenate([rng.random(25) ** 3, rng.random(5) * 1e-4, [0.0, 1.0, 0.5, 0.5]])
    rng.shuffle(p)
    reject, adjusted, _, _ = multipletests(p, alpha=0.05, method="fdr_by")
    np.testing.assert_allclose(benjamini_yekutieli(p), adjusted, rtol=1e-12, atol=0)
    np.testing.assert_allclose(benjamini_yekutieli(p), _by_written_out(p.tolist()), rtol=1e-12, atol=0)
    assert np.array_equal(benjamini_yekutieli(p) <= 0.05, reject)


def test_benjamini_yekutieli_by_hand_on_four_p_values():
    # m = 4, c(4) = 25/12, m c(m) = 25/3; sorted 0.005, 0.01, 0.03, 0.04 -> 25/3 p / rank
    # = 0.041667, 0.041667, 0.083333, 0.083333, then the running minimum from the top changes nothing
    got = benjamini_yekutieli([0.01, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(got, [25 / 3 * 0.01 / 2, 25 / 3 * 0.04 / 4, 25 / 3 * 0.04 / 4, 25 / 3 * 0.005])
    # the running minimum from the largest p down: 0.02 at rank 1 gives 25/3 * 0.02 = 0.1667 > 0.021's 0.0875
    got = benjamini_yekutieli([0.02, 0.021, 0.9, 0.95])
    np.testing.assert_allclose(got, [25 / 3 * 0.021 / 2, 25 / 3 * 0.021 / 2, 1.0, 1.0])


def test_benjamini_yekutieli_caps_at_one_and_leaves_untested_cells_out_of_the_family():
    assert benjamini_yekutieli([0.7, 0.8]).tolist() == [1.0, 1.0]  # 3 * 0.7 = 2.1, 3 * 0.8 / 2 = 1.2
    p = np.array([np.nan, 0.01, np.nan, 0.02, 0.2])
    adjusted = benjamini_yekutieli(p)
    assert np.isnan(adjusted[[0, 2]]).all()
    # the family is the 3 tested cells: m = 3, c(3) = 11/6, m c(m) = 5.5
    np.testing.assert_allclose(adjusted[[1, 3, 4]], multipletests([0.01, 0.02, 0.2], method="fdr_by")[1], rtol=1e-12)
    np.testing.assert_allclose(adjusted[[1, 3, 4]], [5.5 * 0.01, 5.5 * 0.02 / 2, 5.5 * 0.2 / 3], rtol=1e-12)
    with_none = benjamini_yekutieli([None, 0.01, 0.03])
    assert np.isnan(with_none[0]) and with_none[1:].tolist() == pytest.approx([3 * 0.01, 3 * 0.03 / 2])


def test_benjamini_yekutieli_of_nothing_is_nothing_and_of_one_is_the_p_value_itself():
    assert benjamini_yekutieli([]).size == 0
    assert benjamini_yekutieli([0.03]).tolist() == [0.03]
    all_nan = benjamini_yekutieli([np.nan, np.nan])
    assert all_nan.shape == (2,) and np.isnan(all_nan).all()
    assert benjamini_yekutieli([np.nan, 0.03]).tolist()[1] == 0.03


def test_benjamini_yekutieli_names_what_is_wrong_with_its_p_values_in_full():
    with pytest.raises(ValueError) as caught:
        benjamini_yekutieli([0.1, 1.5])
    assert str(caught.value) == "p_values must lie in [0, 1] (or be NaN for a cell that was not tested)"
    with pytest.raises(ValueError) as caught:
        benjamini_yekutieli([[0.1, 0.2]])
    assert str(caught.value) == "p_values must be one-dimensional, got shape (1, 2)"
