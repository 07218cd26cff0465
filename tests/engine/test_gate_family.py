"""The gate's family of decisions: evidence given from elsewhere, the correction over the family, and the words.

Found unguarded by mutation testing (issue 22):

* ``gate_frame(evidence=...)`` decides a cell on the evidence given (a judge-corrected difference),
  corrects the family with its p-value, and keeps in ``report.replaced`` the decision the cell's own
  evidence makes in the same family without replacement, also when every cell is replaced;
* ``correction="none"`` leaves every p-value of a family of several as it is;
* a review says "not significant after correcting for N decisions" exactly when the correction raised
  the p-value of a drop (a family of two is a family), "inconclusive" when the interval shows no drop
  (an interval ending exactly at 0 is not a drop, in either direction).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from evalcore.engine import gate, gate_frame
from evalcore.engine._gate_cells import Evidence
from evalcore.engine._interval import Interval
from evalcore.engine.paired_tests import DropTest


def _frames():
    """30 questions: a pass/fail metric that fell on 6 and rose on 2, and a graded one that rose a little."""
    rng = np.random.default_rng(11)
    base = pd.DataFrame({"faith": [1.0] * 24 + [0.0] * 6, "score": np.round(rng.random(30), 4)})
    cand = base.assign(faith=[0.0] * 6 + [1.0] * 18 + [1.0] * 2 + [0.0] * 4, score=base["score"] + 0.01)
    return base, cand


#: Evidence made elsewhere: a clear drop, tested by a normal approximation.
GIVEN = Evidence(
    interval=Interval(-0.1, -0.15, -0.05),
    interval_method="ppi",
    iterations=0,
    test=DropTest(p_value=0.004, method="normal", changed=30),
)


def test_a_cell_decided_on_given_evidence_blocks_on_it_and_the_family_is_corrected_with_its_p_value():
    base, cand = _frames()
    plain = gate_frame(base, cand, iterations=300)
    report = gate_frame(base, cand, iterations=300, evidence={("faith", "all"): GIVEN})
    faith, score = report.decisions
    assert (faith.metric, faith.status, faith.interval_method, faith.test_method) == ("faith", "block", "ppi", "normal")
    assert (faith.mean, faith.low, faith.high, faith.p_value, faith.iterations) == (-0.1, -0.15, -0.05, 0.004, 0)
    assert score == dataclasses.replace(plain.decisions[1], p_adjusted=score.p_adjusted)  # only its correction moved
    expected = multipletests([0.004, score.p_value], method="holm")[1]
    assert (faith.p_adjusted, score.p_adjusted) == pytest.approx(tuple(expected), abs=1e-12)
    assert report.family_size == 2 and (faith.family_size, score.family_size) == (2, 2)
    # the cell's own decision, in the same family without the replacement: the plain gate's
    assert report.replaced == (plain.decisions[0],)
    assert plain.replaced == ()


def test_when_every_cell_is_decided_on_given_evidence_each_own_decision_is_still_kept():
    base, cand = _frames()
    plain = gate_frame(base, cand, metrics=["faith"], iterations=300)
    report = gate_frame(base, cand, metrics=["faith"], iterations=300, evidence={("faith", "all"): GIVEN})
    (faith,) = report.decisions
    assert (faith.status, faith.interval_method, faith.p_adjusted) == ("block", "ppi", 0.004)
    assert report.replaced == plain.decisions
    assert report.replaced[0].interval_method == "tango" and report.replaced[0].p_value != 0.004


def test_evidence_for_a_cell_the_gate_does_not_test_changes_nothing():
    base, cand = _frames()
    plain = gate_frame(base, cand, iterations=300)
    report = gate_frame(base, cand, iterations=300, evidence={("faith", "x"): GIVEN, ("other", "all"): GIVEN})
    assert report.decisions == plain.decisions and report.replaced == ()


def test_no_correction_leaves_each_p_value_of_a_family_as_it_is():
    base, cand = _frames()
    report = gate_frame(base, cand, iterations=300, correction="none")
    assert report.family_size == 2
    for d in report.decisions:
        assert d.p_adjusted == d.p_value and d.correction == "none"
    holm = gate_frame(base, cand, iterations=300)
    expected = multipletests([d.p_value for d in holm.decisions], method="holm")[1]
    assert [d.p_adjusted for d in holm.decisions] == pytest.approx(list(expected), abs=1e-12)


def _unconfirmed_drop():
    """24 questions whose drop the bootstrap interval shows but the sign-flip test does not confirm (p = 0.027)."""
    rng = np.random.default_rng(263)
    base = rng.random(24)
    return base, base - rng.normal(0.03, 0.08, 24)


def _shown(d) -> str:
    return f"{d.mean:+.3f} [{d.low:+.3f}, {d.high:+.3f}]"


def test_a_family_of_two_drops_the_correction_raised_says_so():
    base, cand = _unconfirmed_drop()
    report = gate_frame(pd.DataFrame({"m": base, "n": base}), pd.DataFrame({"m": cand, "n": cand}), iterations=2000)
    for d in report.decisions:
        assert d.status == "review" and d.high < 0 and d.p_adjusted == pytest.approx(2 * d.p_value)
        assert d.message == (
            f"{d.metric}: drop {_shown(d)}, not significant after correcting for 2 decisions "
            f"(p = {d.p_value:.2g}, Holm-adjusted {d.p_adjusted:.2g})"
        )


def test_a_drop_whose_p_value_the_correction_left_as_it_was_is_not_said_to_be_corrected():
    base, cand = _unconfirmed_drop()
    clear = np.linspace(0.5, 0.9, 24)  # every question fell by 0.3: the exact p is 2**-24, Holm doubles it
    report = gate_frame(
        pd.DataFrame({"m": base, "clear": clear}), pd.DataFrame({"m": cand, "clear": clear - 0.3}), iterations=2000
    )
    m, other = report.decisions
    assert other.status == "block" and other.p_adjusted == pytest.approx(2 * other.p_value)
    # Holm's step-down: the larger p-value is adjusted to max(2 * 2**-24, p) = p
    assert m.status == "review" and m.high < 0 and m.family_size == 2 and m.p_adjusted == m.p_value
    assert m.message == f"m: drop {_shown(m)}, not significant by the paired sign-flip test (p = {m.p_value:.2g})"


def test_a_review_without_a_drop_in_a_family_is_inconclusive():
    base = pd.DataFrame({"m": [1.0, 0.0] * 10, "r": np.linspace(0, 1, 20)})
    report = gate_frame(base, base.copy(), iterations=300)
    m = report.decisions[0]
    assert (m.status, m.family_size, m.p_value, m.p_adjusted) == ("review", 2, 1.0, 1.0)
    assert m.message == f"m: inconclusive {_shown(m)}"


@pytest.mark.parametrize("higher_is_better", [True, False])
def test_an_interval_ending_exactly_at_zero_is_no_drop(higher_is_better):
    scores = np.full(20, 0.5)  # nothing changed; with no tolerated drop the gate cannot pass it
    d = gate("m", scores, scores.copy(), margin=0.0, iterations=300, higher_is_better=higher_is_better)
    assert (d.status, d.low, d.high, d.p_value) == ("review", 0.0, 0.0, 1.0)
    assert d.message == "m: inconclusive +0.000 [+0.000, +0.000]"


def test_p_values_below_one_in_ten_thousand_keep_their_first_decimal():
    from evalcore.engine.release_gate import _p

    assert [_p(v) for v in (5e-5, 2e-7, 0.0)] == ["5.0e-05", "2.0e-07", "0.0e+00"]


@pytest.mark.parametrize("runner", ["gate", "gate_frame"])
def test_a_bad_sign_flip_budget_is_named(runner):
    base, cand = [1.0, 0.0] * 10, [1.0, 1.0] * 10
    with pytest.raises(ValueError) as caught:
        if runner == "gate":
            gate("m", base, cand, sign_flips=0)
        else:
            gate_frame(pd.DataFrame({"m": base}), pd.DataFrame({"m": cand}), sign_flips=0)
    assert str(caught.value) == "sign_flips must be a positive integer, got 0"
