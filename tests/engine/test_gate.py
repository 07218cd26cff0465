"""The non-inferiority release gate: the decision rule, its messages, and gating whole frames by slice."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from evalcore.engine import (
    DEFAULT_MARGIN,
    STATUSES,
    GateDecision,
    GateReport,
    decide,
    gate,
    gate_frame,
    overall_status,
    paired_bootstrap,
)
from evalcore.engine.paired_proportions import tango_interval

from . import spec_reference as spec

finite = st.floats(-1, 1, allow_nan=False)


# --------------------------------------------------------------------------------------------
# decide
# --------------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(finite, finite, st.floats(0, 0.2))
def test_decide_passes_iff_low_is_above_minus_margin_blocks_iff_high_is_below_zero_else_review(a, b, margin):
    low, high = min(a, b), max(a, b)
    status = decide(low, high, margin=margin)
    if low > -margin:
        assert status == "pass"
    elif high < 0:
        assert status == "block"
    else:
        assert status == "review"
    assert status in STATUSES


@settings(max_examples=200, deadline=None)
@given(finite, finite, st.floats(0, 0.2))
def test_decide_for_lower_is_better_mirrors_the_interval(a, b, margin):
    low, high = min(a, b), max(a, b)
    assert decide(low, high, margin=margin, higher_is_better=False) == decide(-high, -low, margin=margin)


def test_decide_does_not_pass_a_lower_bound_exactly_at_minus_the_margin():
    # a bound on -margin does not reject "a drop of the margin" (the spec wrote >=; a tie on the 1/n lattice is not a pass)
    assert decide(-0.02, 0.01, margin=0.02) == "review"
    assert decide(-0.0199999, 0.01, margin=0.02) == "pass"
    assert decide(-0.0200001, 0.01, margin=0.02) == "review"


def test_decide_blocks_on_the_test_when_it_is_given_not_on_the_interval():
    assert decide(-0.077, -0.010, margin=0.02, significant_drop=False) == "review"
    assert decide(-0.077, 0.003, margin=0.02, significant_drop=True) == "block"
    assert decide(-0.01, 0.03, margin=0.02, significant_drop=True) == "pass"  # a pass needs no correction


def test_decide_pass_takes_precedence_over_block_for_a_small_certain_drop():
    # the whole interval is below zero but within the margin: a tolerated drop
    assert decide(-0.015, -0.005, margin=0.02) == "pass"


def test_decide_blocks_when_the_whole_interval_is_below_zero_and_beyond_the_margin():
    assert decide(-0.077, -0.010, margin=0.02) == "block"
    assert decide(-0.077, 0.0, margin=0.02) == "review"  # zero inside: not a certain drop


def test_decide_with_zero_margin_passes_only_a_positive_low():
    assert decide(1e-9, 0.1, margin=0.0) == "pass"
    assert decide(0.0, 0.1, margin=0.0) == "review"


def test_decide_for_lower_is_better_blocks_a_certain_increase():
    assert decide(0.01, 0.05, margin=0.02, higher_is_better=False) == "block"
    assert decide(-0.05, 0.01, margin=0.02, higher_is_better=False) == "pass"


def test_decide_with_a_nan_interval_sends_to_review():
    assert decide(math.nan, math.nan, margin=0.02) == "review"


# --------------------------------------------------------------------------------------------
# overall_status
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        ([], "pass"),
        (["pass"], "pass"),
        (["pass", "review"], "review"),
        (["review", "pass", "block"], "block"),
        (("block",), "block"),
        (iter(["pass", "pass"]), "pass"),
    ],
)
def test_overall_status_is_the_worst_decision(statuses, expected):
    assert overall_status(statuses) == expected


# --------------------------------------------------------------------------------------------
# gate
# --------------------------------------------------------------------------------------------


def test_gate_decision_on_pass_fail_scores_carries_tangos_interval_the_exact_test_and_the_means():
    base, cand = spec.spec_bootstrap_data()
    decision = gate("faithfulness", base, cand, margin=0.02, seed=7)
    tango = tango_interval(20, 7, 300)  # 20 questions fell, 7 rose
    assert isinstance(decision, GateDecision)
    assert (decision.mean, decision.low, decision.high) == (tango.estimate, tango.low, tango.high)
    assert decision.interval_method == "tango" and decision.iterations == 0
    assert decision.test_method == "exact"
    assert decision.p_value == pytest.approx(binom.cdf(7, 27, 0.5), rel=1e-12)  # McNemar's exact test
    assert decision.p_adjusted == decision.p_value and decision.family_size == 1
    assert decision.n == 300 and decision.confidence == 0.95
    assert decision.slice == "all"
    assert decision.as_dict()["status"] == "block"


def test_gate_with_the_percentile_interval_carries_the_bootstrap_of_the_spec():
    base, cand = spec.spec_bootstrap_data()
    decision = gate("faithfulness", base, cand, margin=0.02, seed=7, interval="percentile")
    result = paired_bootstrap(base, cand, seed=7)
    assert (decision.mean, decision.low, decision.high) == (result.estimate, result.low, result.high)
    assert decision.interval_method == "percentile" and decision.iterations == 10_000


def test_gate_on_continuous_scores_reads_the_expanded_percentile_interval():
    rng = np.random.default_rng(4)
    base = rng.random(40)
    cand = np.clip(base + rng.normal(0.05, 0.1, 40), 0, 1)
    decision = gate("ndcg@5", base, cand, seed=3)
    expanded = paired_bootstrap(base, cand, seed=3, interval="expanded")
    assert decision.interval_method == "expanded"
    assert (decision.low, decision.high) == (expanded.low, expanded.high)
    plain = paired_bootstrap(base, cand, seed=3)
    assert expanded.low < plain.low and expanded.high > plain.high  # wider at n = 40


def test_gate_and_gate_frame_send_fewer_than_ten_pairs_to_review_by_the_same_rule():
    base, cand = [1.0] * 9, [0.0] * 9  # every question fell: no interval from 9 pairs
    alone = gate("m", base, cand)
    framed = gate_frame(pd.DataFrame({"m": base}), pd.DataFrame({"m": cand})).decisions[0]
    assert alone == framed
    assert alone.status == "review" and alone.message.startswith("m: too few paired questions (9 < 10)")
    assert gate("m", [1.0] * 10, [0.0] * 10).status == "block"


def test_gate_pass_message_has_no_verdict_word():
    decision = gate("recall@5", [0, 1, 1, 1] * 50, [1, 1, 1, 1] * 50)
    assert decision.status == "pass"
    assert decision.message == "recall@5: +0.250 [+0.195, +0.314]"


def test_gate_review_message_says_inconclusive():
    rng = np.random.default_rng(0)
    base = rng.random(60)
    cand = base + rng.normal(0, 0.3, 60)
    decision = gate("faithfulness", base, cand, margin=0.0)
    assert decision.status == "review"
    assert decision.message.startswith("faithfulness: inconclusive ")
    assert (
        decision.message
        == f"faithfulness: inconclusive {decision.mean:+.3f} [{decision.low:+.3f}, {decision.high:+.3f}]"
    )


def test_gate_for_a_metric_where_lower_is_better_blocks_a_real_increase():
    base, cand = spec.spec_bootstrap_data()
    # the candidate hallucinates more: swap the runs so the difference is +0.043
    decision = gate("hallucination rate", cand, base, higher_is_better=False)
    assert decision.status == "block"
    assert decision.message == "hallucination rate: real increase +0.043 [+0.010, +0.081]"
    assert decision.higher_is_better is False


def test_gate_for_a_metric_where_lower_is_better_passes_a_real_decrease():
    base, cand = spec.spec_bootstrap_data()
    assert gate("latency", base, cand, higher_is_better=False).status == "pass"


def test_gate_with_a_wide_margin_passes_the_spec_drop():
    base, cand = spec.spec_bootstrap_data()
    assert gate("faithfulness", base, cand, margin=0.081).status == "pass"  # Tango's lower bound is -0.0805
    assert gate("faithfulness", base, cand, margin=0.08).status == "block"


def test_gate_records_the_slice_name():
    assert gate("m", [0.0, 1.0] * 10, [0.0, 1.0] * 10, slice="tables").slice == "tables"


# --------------------------------------------------------------------------------------------
# gate_frame
# --------------------------------------------------------------------------------------------


def make_frames(n=120, seed=0):
    rng = np.random.default_rng(seed)
    ids = [f"q{i:03d}" for i in range(n)]
    kind = np.where(np.arange(n) % 3 == 0, "table", "prose")
    base = pd.DataFrame(
        {
            "kind": kind,
            "recall@5": (rng.random(n) < 0.8).astype(float),
            "faithfulness": (rng.random(n) < 0.9).astype(float),
        },
        index=pd.Index(ids, name="question"),
    )
    cand = base.copy()
    cand["recall@5"] = np.minimum(1.0, base["recall@5"] + (rng.random(n) < 0.15))
    # faithfulness collapses on tables only
    cand.loc[cand["kind"] == "table", "faithfulness"] = 0.0
    return base, cand


def test_gate_frame_decides_every_metric_overall_and_per_slice():
    base, cand = make_frames()
    report = gate_frame(base, cand, slice_by="kind")
    assert isinstance(report, GateReport)
    keys = [(d.metric, d.slice) for d in report.decisions]
    assert keys == [
        ("recall@5", "all"),
        ("recall@5", "prose"),
        ("recall@5", "table"),
        ("faithfulness", "all"),
        ("faithfulness", "prose"),
        ("faithfulness", "table"),
    ]
    status = {(d.metric, d.slice): d.status for d in report.decisions}
    assert status[("recall@5", "all")] == "pass"
    assert status[("faithfulness", "table")] == "block"
    # faithfulness did not change on prose, but 80 pass/fail questions cannot rule out a 2-point drop
    assert status[("faithfulness", "prose")] == "review"
    assert report.overall == "block"
    assert report.family_size == 6 and report.correction == "holm"
    assert {d.family_size for d in report.decisions} == {6}
    assert [(d.metric, d.slice) for d in report.blocking()] == [
        (d.metric, d.slice) for d in report.decisions if d.status == "block"
    ]
    assert report.n_paired == 120
    assert report.notes == ()


def test_gate_frame_decisions_equal_gate_on_the_same_pairs():
    base, cand = make_frames()
    report = gate_frame(base, cand, slice_by="kind", iterations=2000, seed=3)
    tables = base["kind"] == "table"
    direct = gate(
        "faithfulness",
        base.loc[tables, "faithfulness"],
        cand.loc[tables, "faithfulness"],
        iterations=2000,
        seed=3,
        slice="table",
    )
    framed = next(d for d in report.decisions if (d.metric, d.slice) == ("faithfulness", "table"))
    # the same evidence; only the family (6 decisions here, 1 alone) and so the adjusted p-value differ
    assert replace(framed, p_adjusted=direct.p_adjusted, family_size=1) == direct
    assert framed.p_adjusted == pytest.approx(min(1.0, 6 * framed.p_value))  # the smallest of 6 tied p-values


def test_gate_frame_to_frame_has_one_row_per_decision():
    base, cand = make_frames()
    frame = gate_frame(base, cand, slice_by="kind", iterations=500).to_frame()
    assert len(frame) == 6
    assert {"metric", "slice", "status", "low", "high", "message"} <= set(frame.columns)


def test_gate_frame_pairs_on_the_common_question_ids_and_notes_it():
    base, cand = make_frames()
    report = gate_frame(base.iloc[:100], cand.iloc[20:], iterations=500)
    assert report.n_paired == 80
    assert all(d.n == 80 for d in report.decisions)
    assert report.notes == ("paired on the 80 questions both runs answered (100 base, 100 candidate)",)


def test_gate_frame_pairs_by_id_not_by_position():
    base, cand = make_frames()
    shuffled = cand.sample(frac=1.0, random_state=1)
    a = gate_frame(base, cand, iterations=500)
    b = gate_frame(base, shuffled, iterations=500)
    assert [(d.mean, d.low, d.high) for d in a.decisions] == [(d.mean, d.low, d.high) for d in b.decisions]


def test_gate_frame_drops_nan_pairs_per_metric():
    base, cand = make_frames()
    base.loc[base.index[:10], "recall@5"] = np.nan
    cand.loc[cand.index[5:25], "recall@5"] = np.nan
    report = gate_frame(base, cand, iterations=500)
    n = {d.metric: d.n for d in report.decisions}
    assert n == {"recall@5": 95, "faithfulness": 120}
    kept = base["recall@5"].notna() & cand["recall@5"].notna()
    recall = next(d for d in report.decisions if d.metric == "recall@5")
    assert recall.mean == pytest.approx(float((cand.loc[kept, "recall@5"] - base.loc[kept, "recall@5"]).mean()))


def test_gate_frame_sends_a_slice_with_too_few_pairs_to_review_without_an_interval():
    base, cand = make_frames(n=30)
    report = gate_frame(base, cand, slice_by="kind", min_pairs=15, iterations=500)
    small = [d for d in report.decisions if d.slice == "table"]
    assert small and all(d.status == "review" for d in small)
    for d in small:
        assert d.n == 10 and d.iterations == 0
        assert math.isnan(d.low) and math.isnan(d.high)
        assert d.message.startswith(f"{d.metric}: too few paired questions (10 < 15) for an interval; mean ")
    assert report.overall in ("review", "block")


def test_gate_frame_skips_a_slice_with_no_scored_pairs():
    base, cand = make_frames()
    base.loc[base["kind"] == "table", "recall@5"] = np.nan
    report = gate_frame(base, cand, slice_by="kind", iterations=500)
    assert ("recall@5", "table") not in {(d.metric, d.slice) for d in report.decisions}
    assert ("faithfulness", "table") in {(d.metric, d.slice) for d in report.decisions}


def test_gate_frame_uses_per_metric_margins_and_the_default_for_the_rest():
    base, cand = make_frames()
    report = gate_frame(base, cand, margin={"faithfulness": 0.5}, iterations=500)
    margins = {d.metric: d.margin for d in report.decisions}
    assert margins == {"recall@5": DEFAULT_MARGIN, "faithfulness": 0.5}
    faith = next(d for d in report.decisions if d.metric == "faithfulness")
    assert faith.status == "pass"  # a 0.33 drop is inside a 0.5 margin
    strict = gate_frame(base, cand, margin=0.0, iterations=500)
    assert next(d for d in strict.decisions if d.metric == "faithfulness").status == "block"


def test_gate_frame_respects_higher_is_better_per_metric():
    base, cand = make_frames()
    report = gate_frame(base, cand, metrics=["faithfulness"], higher_is_better={"faithfulness": False}, iterations=500)
    assert report.decisions[0].higher_is_better is False
    assert report.decisions[0].status == "pass"  # for a lower-is-better metric a drop is good


def test_gate_frame_default_metrics_are_the_shared_numeric_columns_except_booleans_and_the_slice():
    base, cand = make_frames()
    base["declined"] = False
    cand["declined"] = False
    base["note"] = "x"
    cand["note"] = "y"
    base["only_in_base"] = 1.0
    report = gate_frame(base, cand, slice_by="kind", iterations=300)
    assert {d.metric for d in report.decisions} == {"recall@5", "faithfulness"}


def test_gate_frame_takes_the_slice_from_the_candidate_where_the_baseline_lacks_it():
    base, cand = make_frames()
    base.loc[base.index[:3], "kind"] = None
    report = gate_frame(base, cand, slice_by="kind", metrics=["recall@5"], iterations=300)
    n = {d.slice: d.n for d in report.decisions}
    assert n == {"all": 120, "prose": 80, "table": 40}


def test_gate_frame_puts_questions_without_a_slice_under_none():
    base, cand = make_frames()
    base.loc[base.index[:12], "kind"] = None
    cand.loc[cand.index[:12], "kind"] = None
    report = gate_frame(base, cand, slice_by="kind", metrics=["recall@5"], iterations=300)
    assert {d.slice: d.n for d in report.decisions}["(none)"] == 12


def test_gate_frame_uses_the_same_seed_for_every_decision():
    base, cand = make_frames()
    report = gate_frame(base, cand, slice_by="kind", seed=11, iterations=300)
    assert {d.seed for d in report.decisions} == {11}
    again = gate_frame(base, cand, slice_by="kind", seed=11, iterations=300)
    assert again == report


def test_gate_frame_rejects_inputs_that_are_not_data_frames():
    base, _ = make_frames()
    with pytest.raises(TypeError, match="base and cand must be pandas DataFrames"):
        gate_frame(base, base.to_dict())


def test_gate_frame_rejects_a_question_listed_twice():
    base, cand = make_frames()
    twice = pd.concat([cand, cand.iloc[:1]])
    with pytest.raises(ValueError, match=r"cand has question 'q000' more than once"):
        gate_frame(base, twice)


def test_gate_frame_rejects_frames_with_no_common_questions():
    base, cand = make_frames()
    cand.index = [f"x{i}" for i in range(len(cand))]
    with pytest.raises(ValueError, match="share no question ids"):
        gate_frame(base, cand)


def test_gate_frame_rejects_a_metric_missing_from_a_frame():
    base, cand = make_frames()
    with pytest.raises(ValueError, match=r"metric\(s\) \['ndcg@5'\] are not columns of both frames"):
        gate_frame(base, cand, metrics=["ndcg@5"])


def test_gate_frame_rejects_an_unknown_slice_column():
    base, cand = make_frames()
    with pytest.raises(ValueError, match="slice_by column 'topic' is in neither frame"):
        gate_frame(base, cand, slice_by="topic")


def test_gate_frame_rejects_frames_without_numeric_columns():
    base, cand = make_frames()
    with pytest.raises(ValueError, match="no metrics to gate"):
        gate_frame(base[["kind"]], cand[["kind"]])


def test_gate_frame_rejects_a_negative_margin_in_the_mapping():
    base, cand = make_frames()
    with pytest.raises(ValueError, match="margin for 'recall@5' must be a non-negative number"):
        gate_frame(base, cand, margin={"recall@5": -0.01})


def test_gate_frame_rejects_min_pairs_of_zero():
    base, cand = make_frames()
    with pytest.raises(ValueError, match="min_pairs must be a positive integer"):
        gate_frame(base, cand, min_pairs=0)


def test_gate_frame_leaves_a_scored_frames_bookkeeping_columns_out_by_default():
    from evalcore.engine import score_retrieval

    ranked = [["d1", "d2", "d3"], ["d4", "d1", "d2"]] * 10
    gold = [{"d1": 1}, {"d2": 2}] * 10
    base = score_retrieval(ranked, gold, 3, question_ids=[f"q{i}" for i in range(20)])
    cand = score_retrieval(list(reversed(ranked)), gold, 3, question_ids=[f"q{i}" for i in range(20)])
    report = gate_frame(base, cand, iterations=200)
    gated = {d.metric for d in report.decisions}
    assert gated == {"recall@3", "precision@3", "rr", "ndcg@3"}
