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
