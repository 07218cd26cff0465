"""Every public function refuses bad input with ValueError or TypeError and a message naming the argument.

The cases live in ``bad_input_retrieval.py`` and ``bad_input_statistics.py``: (name, call, error, message).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalcore import engine as e

from . import bad_input_retrieval, bad_input_statistics

R = ["a", "b"]
G = {"a", "c"}

CASES = bad_input_retrieval.CASES + bad_input_statistics.CASES


@pytest.mark.parametrize(("call", "error", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_raises_a_clear_error_that_names_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_errors_are_value_or_type_errors_never_assertions_or_zero_division():
    for name, call, error, _ in CASES:
        assert error in (ValueError, TypeError), name
        try:
            call()
        except (ValueError, TypeError):
            pass
        else:  # pragma: no cover - the parametrized test reports it
            pytest.fail(f"{name} did not raise")


def test_paired_bootstrap_reports_the_first_nan_position_for_finding_the_bad_row():
    with pytest.raises(ValueError, match=r"contains 2 missing .* the first at position 3 \(nan\)"):
        e.paired_bootstrap([1, 1, 1, math.nan, math.nan], [1, 1, 1, 1, 1])


def test_a_numpy_integer_k_and_margin_of_zero_are_valid():
    assert e.recall_at_k(R, G, np.int32(2)) == 0.5
    assert e.decide(0.01, 0.1, margin=0) == "pass"
    assert e.gate("m", [0.0] * 20, [1.0] * 20, margin=0).status == "pass"
