"""Edges of the release gate that mutation testing found unguarded (issue 22).

Each test pins behaviour a reviewer relies on: a slice with too few pairs must not hide the slices
after it, ``min_pairs`` is inclusive, a too-few-pairs decision carries every field a report shows,
a slice column may come from the candidate alone, and a lazy judge that says "supported" every time
is measured as such.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from evalcore.engine import binary_agreement, gate, gate_frame, paired_bootstrap
from evalcore.engine.paired_proportions import tango_interval
from evalcore.engine.proportions import proportion_interval


def _frames_with_a_small_first_slice():
    """Slice "a" (sorted first) has 5 questions, slice "b" after it 40 whose pass rate collapses."""
    kind = ["a"] * 5 + ["b"] * 40
    base = pd.DataFrame({"kind": kind, "m": [1.0] * 45}, index=[f"q{i}" for i in range(45)])
    cand = base.assign(m=[1.0] * 5 + [0.0] * 40)
    return base, cand


def test_a_slice_with_too_few_pairs_does_not_hide_the_slices_after_it_nor_their_block():
    base, cand = _frames_with_a_small_first_slice()
    report = gate_frame(base, cand, slice_by="kind", iterations=300)
    assert [(d.slice, d.status) for d in report.decisions] == [("all", "block"), ("a", "review"), ("b", "block")]
    assert [d.slice for d in report.blocking()] == ["all", "b"]
    assert report.overall == "block"
    # the small slice is not in the family; the two tested cells are
    assert report.family_size == 2
    assert [d.family_size for d in report.decisions] == [2, 0, 2]


def test_a_metric_with_too_few_pairs_does_not_hide_the_metrics_after_it():
    n = 30
    base = pd.DataFrame({"sparse": [1.0] * 4 + [np.nan] * (n - 4), "dense": [1.0] * n})
    cand = pd.DataFrame({"sparse": [0.0] * 4 + [np.nan] * (n - 4), "dense": [0.0] * n})
    report = gate_frame(base, cand, iterations=300)
    assert [(d.metric, d.status, d.n) for d in report.decisions] == [("sparse", "review", 4), ("dense", "block", 30)]
    assert report.overall == "block" and report.family_size == 1


def test_min_pairs_is_inclusive_a_cell_with_exactly_min_pairs_is_tested():
    base, cand = _frames_with_a_small_first_slice()
    exact = gate_frame(base, cand, slice_by="kind", min_pairs=5, iterations=300)
    small = next(d for d in exact.decisions if d.slice == "a")
    assert small.n == 5
    assert small.family_size == 3 and exact.family_size == 3
    assert not math.isnan(small.low) and not math.isnan(small.p_value)
    assert small.interval_method == "tango" and small.test_method == "exact"
    one_more = gate_frame(base, cand, slice_by="kind", min_pairs=6, iterations=300)
    assert next(d for d in one_more.decisions if d.slice == "a").family_size == 0
    assert one_more.family_size == 2
    # gate() applies the same rule
    # gate() applies the same rule: six falls out of six block (exact p = 1/64), unless six is too few
    assert gate("m", [1.0] * 6, [0.0] * 6, min_pairs=6).status == "block"
    assert gate("m", [1.0] * 6, [0.0] * 6, min_pairs=7).status == "review"


def test_a_too_few_pairs_decision_carries_every_field_of_the_report():
    base = pd.DataFrame({"m": [0.2, 0.4, 0.6, 0.8]})
    cand = pd.DataFrame({"m": [0.3, 0.2, 0.6, 1.0]})
    (decision,) = gate_frame(base, cand, iterations=300, seed=5, confidence=0.9, margin=0.05).decisions
    assert decision.as_dict() == pytest.approx(
        {
            "metric": "m",
            "status": "review",
            "mean": 0.025,
            "low": math.nan,
            "high": math.nan,
            "margin": 0.05,
            "n": 4,
            "iterations": 0,
            "seed": 5,
            "confidence": 0.9,
            "message": "m: too few paired questions (4 < 10) for an interval; mean +0.025",
            "slice": "all",
            "higher_is_better": True,
            "base_mean": 0.5,
            "cand_mean": 0.525,
            "p_value": math.nan,
            "p_adjusted": math.nan,
            "family_size": 0,
            "correction": "holm",
            "interval_method": "",
            "test_method": "",
        },
        nan_ok=True,
    )
    lower = gate_frame(base, cand, higher_is_better={"m": False}, iterations=300).decisions[0]
    assert lower.higher_is_better is False and lower.status == "review"


def test_the_slice_column_may_come_from_the_candidate_alone():
    base = pd.DataFrame({"m": [1.0] * 40}, index=[f"q{i}" for i in range(40)])
    cand = pd.DataFrame({"kind": ["x"] * 25 + ["y"] * 15, "m": [1.0] * 25 + [0.0] * 15}, index=base.index)
    report = gate_frame(base, cand, slice_by="kind", iterations=300)
    assert [(d.slice, d.n, d.status) for d in report.decisions] == [
        ("all", 40, "block"),
        ("x", 25, "review"),  # unchanged, but 25 pass/fail questions cannot rule out a 2-point drop
        ("y", 15, "block"),
    ]
    assert {d.metric for d in report.decisions} == {"m"}  # the slice column is not gated as a metric


def test_the_slice_column_may_come_from_the_baseline_alone():
    base = pd.DataFrame({"kind": ["x"] * 25 + ["y"] * 15, "m": [1.0] * 40})
    cand = pd.DataFrame({"m": [1.0] * 25 + [0.0] * 15})
    report = gate_frame(base, cand, slice_by="kind", iterations=300)
    assert [(d.slice, d.n) for d in report.decisions] == [("all", 40), ("x", 25), ("y", 15)]


# --------------------------------------------------------------------------------------------
# a lazy judge: one class every time
# --------------------------------------------------------------------------------------------

PEOPLE = ["supported"] * 30 + ["unsupported"] * 10


def test_a_judge_that_says_supported_every_time_misses_every_failure_and_has_kappa_zero():
    judge = ["supported"] * 40
    report = binary_agreement(PEOPLE, judge, failure_class="unsupported")
    assert report.labels == ("supported", "unsupported")
    assert report.pass_class == "supported"
    assert report.n == 40
    assert report.counts == {
        ("supported", "supported"): 30,
        ("supported", "unsupported"): 0,
        ("unsupported", "supported"): 10,
        ("unsupported", "unsupported"): 0,
    }
    assert report.agreement == 0.75  # high agreement, all of it chance
    assert report.kappa == pytest.approx(cohen_kappa_score(PEOPLE, judge)) and report.kappa == 0.0
    assert report.kappa_undefined_reason is None
    assert (report.failures, report.caught, report.missed, report.false_alarms) == (10, 0, 10, 0)
    assert report.miss_rate == 1.0 and report.sensitivity == 0.0 and report.specificity == 1.0
    expected = proportion_interval(10, 10)
    assert (report.miss_rate_interval.low, report.miss_rate_interval.high) == (expected.low, expected.high)
    assert report.miss_rate_interval.low < 1.0  # 10 items leave doubt even about a judge that missed all
    assert report.reference_rate == {"supported": 0.75, "unsupported": 0.25}
    assert report.predicted_rate == {"supported": 1.0, "unsupported": 0.0}
    assert report.miss_sentence() == "the judge passed 10 of the 10 answers people found unsupported"


def test_a_judge_that_says_unsupported_every_time_catches_every_failure_and_alarms_on_every_pass():
    judge = ["unsupported"] * 40
    report = binary_agreement(PEOPLE, judge, failure_class="unsupported")
    assert (report.failures, report.caught, report.missed, report.false_alarms) == (10, 10, 0, 30)
    assert report.agreement == 0.25 and report.kappa == 0.0
    assert report.sensitivity == 1.0 and report.specificity == 0.0 and report.miss_rate == 0.0
    assert report.predicted_rate == {"supported": 0.0, "unsupported": 1.0}


def test_people_using_one_class_and_a_judge_using_both_give_kappa_zero_and_no_failures():
    people = ["supported"] * 20
    judge = ["supported"] * 15 + ["unsupported"] * 5
    report = binary_agreement(people, judge, failure_class="unsupported")
    assert report.kappa == 0.0 == pytest.approx(cohen_kappa_score(people, judge))
    assert report.failures == 0 and report.false_alarms == 5
    assert math.isnan(report.miss_rate) and report.miss_rate_interval is None
    assert report.specificity == 0.75


def test_one_class_throughout_needs_the_labels_named():
    with pytest.raises(ValueError, match="exactly two classes"):
        binary_agreement(["supported"] * 5, ["supported"] * 5, failure_class="supported")
    report = binary_agreement(
        ["supported"] * 5, ["supported"] * 5, labels=("supported", "unsupported"), failure_class="unsupported"
    )
    assert math.isnan(report.kappa) and report.kappa_undefined_reason is not None
    assert report.agreement == 1.0 and report.failures == 0


# --------------------------------------------------------------------------------------------
# which interval a cell gets, and which scores count
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("continuous", ["base", "cand"])
def test_a_metric_is_pass_fail_only_when_both_runs_score_zero_or_one(continuous):
    rng = np.random.default_rng(1)
    zero_one = (rng.random(40) < 0.7).astype(float)
    graded = np.round(rng.random(40), 2)
    base = pd.DataFrame({"m": graded if continuous == "base" else zero_one})
    cand = pd.DataFrame({"m": graded if continuous == "cand" else zero_one})
    (decision,) = gate_frame(base, cand, iterations=300).decisions
    assert decision.interval_method == "expanded" and decision.iterations == 300
    both = gate_frame(pd.DataFrame({"m": zero_one}), pd.DataFrame({"m": zero_one[::-1]}), iterations=300)
    assert both.decisions[0].interval_method == "tango"


def test_a_score_that_is_not_a_number_counts_as_not_scored():
    base = pd.DataFrame({"m": [1.0] * 30 + ["n/a"] * 5 + [1.0] * 5}, dtype=object)
    cand = pd.DataFrame({"m": [0.0] * 30 + [1.0] * 5 + ["-"] * 5}, dtype=object)
    (decision,) = gate_frame(base, cand, metrics=["m"], iterations=300).decisions
    assert decision.n == 30 and decision.mean == -1.0 and decision.status == "block"


def test_nullable_scores_with_missing_values_are_paired_on_the_scored_questions():
    base = pd.DataFrame({"m": pd.array([1.0] * 30 + [None] * 5 + [1.0] * 5, dtype="Float64")})
    cand = pd.DataFrame({"m": pd.array([0.0] * 30 + [1.0] * 5 + [None] * 5, dtype="Float64")})
    (decision,) = gate_frame(base, cand, iterations=300).decisions
    assert decision.n == 30 and decision.status == "block"


def test_an_unknown_status_is_refused_with_every_unknown_named_once():
    from evalcore.engine import overall_status

    with pytest.raises(ValueError) as caught:
        overall_status(["pass", "ok", "fine", "ok"])
    assert str(caught.value) == "unknown gate status(es) 'fine', 'ok'; a status is one of ('pass', 'review', 'block')"


def test_boolean_columns_are_not_gated_by_default():
    base = pd.DataFrame({"m": [1.0] * 20, "flagged": [True, False] * 10})
    cand = pd.DataFrame({"m": [1.0] * 20, "flagged": [False, True] * 10})
    assert [d.metric for d in gate_frame(base, cand, iterations=300).decisions] == ["m"]


def test_a_metric_asked_for_must_be_in_both_frames_and_the_error_lists_the_shared_ones():
    base = pd.DataFrame({"m": [1.0] * 20, "only_base": [1.0] * 20})
    cand = pd.DataFrame({"m": [1.0] * 20, "only_cand": [1.0] * 20})
    with pytest.raises(ValueError) as caught:
        gate_frame(base, cand, metrics=["only_base"])
    assert str(caught.value) == "metric(s) ['only_base'] are not columns of both frames; available: ['m']"


def test_frames_without_a_numeric_column_in_common_are_refused_in_words():
    base = pd.DataFrame({"note": ["a"] * 3})
    with pytest.raises(ValueError) as caught:
        gate_frame(base, base.copy())
    assert str(caught.value) == "no metrics to gate: the frames share no numeric columns"


# --------------------------------------------------------------------------------------------
# gate_frame's options reach every decision
# --------------------------------------------------------------------------------------------


def _continuous(n=60, seed=2, shift=-0.01):
    rng = np.random.default_rng(seed)
    base = np.round(rng.random(n), 3)
    return base, np.clip(base + rng.normal(shift, 0.05, n), 0, 1)


def test_gate_frame_bootstraps_ten_thousand_times_by_default():
    base, cand = _continuous()
    (decision,) = gate_frame(pd.DataFrame({"m": base}), pd.DataFrame({"m": cand})).decisions
    assert decision.interval_method == "expanded" and decision.iterations == 10_000


def test_gate_frame_gives_the_interval_of_the_pairs_in_the_baselines_order():
    base, cand = _continuous()
    ids = [f"q{i:02d}" for i in range(60)][::-1]  # not sorted: the baseline's own order counts
    extra = pd.DataFrame({"m": [0.5]}, index=["q99"])  # a question only the candidate answered
    framed = gate_frame(
        pd.DataFrame({"m": base}, index=ids),
        pd.concat([pd.DataFrame({"m": cand}, index=ids).iloc[::-1], extra]),
        iterations=500,
    )
    direct = gate("m", base, cand, iterations=500)
    assert (framed.decisions[0].low, framed.decisions[0].high) == (direct.low, direct.high)


def test_gate_frame_passes_its_sign_flip_budget_to_the_test():
    rng = np.random.default_rng(4)
    base = np.round(rng.random(100), 6) + 0.5
    cand = base - np.abs(rng.normal(0, 0.2, 100))  # every question fell, by amounts on no lattice
    (decision,) = gate_frame(pd.DataFrame({"m": base}), pd.DataFrame({"m": cand}), sign_flips=500).decisions
    assert decision.test_method == "monte-carlo"
    assert decision.p_value == pytest.approx(1 / 501)  # no random sign pattern is as extreme: 1 / (draws + 1)


def test_gate_frame_names_a_bad_iterations_and_frames_that_share_no_question():
    frame = pd.DataFrame({"m": [1.0] * 20})
    with pytest.raises(ValueError, match=r"^iterations must be a positive integer"):
        gate_frame(frame, frame, iterations=0)
    with pytest.raises(ValueError) as caught:
        gate_frame(frame, frame.set_axis(range(100, 120)))
    assert str(caught.value) == "base and cand share no question ids: a comparison must be paired"


def test_gate_frame_reports_the_correction_it_applied():
    frame = pd.DataFrame({"m": [1.0, 0.0] * 10})
    report = gate_frame(frame, frame.assign(m=1.0), correction="none", iterations=300)
    assert report.correction == "none" and report.decisions[0].correction == "none"


def test_gate_frame_names_what_is_wrong_with_its_frames():
    frame = pd.DataFrame({"m": [1.0, 0.0]}, index=["q1", "q2"])
    with pytest.raises(TypeError) as caught:
        gate_frame(frame, [1.0, 0.0])
    assert str(caught.value) == "base and cand must be pandas DataFrames with one row per question"
    twice = pd.DataFrame({"m": [1.0, 0.0]}, index=["q1", "q1"])
    for base, cand, name in ((twice, frame, "base"), (frame, twice, "cand")):
        with pytest.raises(ValueError) as caught:
            gate_frame(base, cand)
        assert str(caught.value) == f"{name} has question 'q1' more than once; one row per question"


def test_binary_agreement_orders_labels_of_mixed_types_by_their_text():
    # an object column (a DataFrame's .to_numpy()) keeps an int beside strings
    reference = np.array([2, 2, "skip", "skip"], dtype=object)
    predicted = np.array([2, "skip", "skip", "skip"], dtype=object)
    report = binary_agreement(reference, predicted, failure_class="skip")
    assert report.labels == (2, "skip") and report.failures == 2 and report.false_alarms == 1
    with pytest.raises(ValueError) as caught:
        three = np.array([1, "a", "b"], dtype=object)
        binary_agreement(three, three)
    assert str(caught.value) == "binary agreement needs exactly two classes, got [1, 'a', 'b']"


def test_a_numeric_slice_column_is_a_slice_not_a_metric():
    base = pd.DataFrame({"difficulty": [1, 2, 3] * 10, "m": [1.0] * 30})
    report = gate_frame(base, base.copy(), slice_by="difficulty", iterations=300)
    assert {d.metric for d in report.decisions} == {"m"}
    assert [d.slice for d in report.decisions] == ["all", "1", "2", "3"]


def _unconfirmed_drop():
    """24 questions whose drop the bootstrap interval shows but the sign-flip test (Monte Carlo: 24 distinct
    continuous differences) does not confirm at 2.5 %."""
    rng = np.random.default_rng(263)
    base = rng.random(24)
    return base, base - rng.normal(0.03, 0.08, 24)


def test_a_drop_the_sign_flip_test_does_not_confirm_is_reviewed_with_its_p_value_in_two_digits():
    base, cand = _unconfirmed_drop()
    decision = gate("m", base, cand, iterations=2000)
    shown = f"{decision.mean:+.3f} [{decision.low:+.3f}, {decision.high:+.3f}]"
    assert decision.status == "review" and decision.high < 0 and 0.025 < decision.p_value < 0.03
    assert decision.message == f"m: drop {shown}, not significant by the paired sign-flip test (p = 0.027)"


def test_p_values_are_written_in_two_digits_or_in_scientific_notation_below_one_in_ten_thousand():
    from evalcore.engine.release_gate import _p

    assert [_p(v) for v in (0.027, 1.0, 1e-4, 9.9e-5, 1.234e-7)] == ["0.027", "1", "0.0001", "9.9e-05", "1.2e-07"]


def test_gate_passes_its_options_on_to_the_sign_flip_test_and_the_bootstrap():
    base, cand = _unconfirmed_drop()
    capped = gate("m", base, cand, iterations=2000, sign_flips=60)
    assert capped.p_value >= 1 / 61 and capped.p_value != gate("m", base, cand, iterations=2000).p_value
    for method in ("multinomial", "resample"):
        decision = gate("m", base, cand, iterations=500, seed=3, confidence=0.9, interval="percentile", method=method)
        expected = paired_bootstrap(base, cand, iterations=500, seed=3, confidence=0.9, method=method)
        assert (decision.mean, decision.low, decision.high) == tuple(expected)


def test_a_cell_is_pass_fail_only_when_both_runs_are_and_tango_uses_the_gate_s_confidence():
    base = np.array([1.0] * 40 + [0.0] * 10 + [1.0] * 150)
    cand = np.array([0.0] * 40 + [1.0] * 10 + [1.0] * 150)
    decision = gate("m", base, cand, confidence=0.9)
    assert (decision.low, decision.high) == tuple(tango_interval(40, 10, 200, confidence=0.9))[1:]
    graded = gate("m", np.where(base == 1.0, 0.5, 0.0), cand, iterations=500)  # the base scores 0.5, not pass/fail
    assert (graded.low, graded.high) != tuple(tango_interval(40, 10, 200))[1:]
    assert graded.low == gate("m", np.where(base == 1.0, 0.5, 0.0), cand, iterations=500, interval="expanded").low
    graded_cand = gate("m", base, np.where(cand == 1.0, 0.5, 0.0), iterations=500)  # now the candidate's are
    assert graded_cand.interval_method == "expanded" and decision.interval_method == "tango"


@pytest.mark.parametrize(("option", "message"), [("min_pairs", "min_pairs"), ("iterations", "iterations")])
def test_gate_names_a_bad_count_in_its_message(option, message):
    with pytest.raises(ValueError) as caught:
        gate("m", [1.0, 0.0] * 10, [1.0, 1.0] * 10, **{option: 0})
    assert str(caught.value) == f"{message} must be a positive integer, got 0"


def test_a_drop_with_p_between_a_third_and_half_of_one_minus_the_confidence_blocks():
    # alpha is (1 - confidence) / 2 = 0.025: p = 0.018 blocks (a third, 0.017, would not)
    rng = np.random.default_rng(34)
    base = rng.random(24)
    decision = gate("m", base, base - rng.normal(0.03, 0.08, 24), iterations=2000)
    assert 0.017 < decision.p_value < 0.025 and decision.status == "block"


def test_holm_corrected_reviews_name_the_slice_the_direction_and_both_p_values():
    base, cand = _unconfirmed_drop()
    topic = ["x"] * 24
    b = pd.DataFrame({"m": base, "lat": 1 - base, "topic": topic})
    c = pd.DataFrame({"m": cand, "lat": 1 - cand, "topic": topic})
    report = gate_frame(b, c, metrics=["m", "lat"], slice_by="topic", higher_is_better={"lat": False}, iterations=2000)
    by = {(d.metric, d.slice): d for d in report.decisions}
    for (metric, where), d in by.items():
        assert d.status == "review" and d.family_size == 4 and d.p_adjusted > d.p_value
        word, shown = ("increase", d) if metric == "lat" else ("drop", d)
        interval = f"{shown.mean:+.3f} [{shown.low:+.3f}, {shown.high:+.3f}]"
        place = "" if where == "all" else f" on slice {where}"
        assert d.message == (
            f"{metric}: {word}{place} {interval}, not significant after correcting for 4 decisions "
            f"(p = {d.p_value:.2g}, Holm-adjusted {d.p_adjusted:.2g})"
        )
    uncorrected = gate_frame(b, c, metrics=["m"], correction="none", iterations=2000)
    (alone,) = uncorrected.decisions
    assert alone.p_adjusted == alone.p_value and alone.message.endswith(f"sign-flip test (p = {alone.p_value:.2g})")


def test_tango_is_for_pass_fail_cells_only_and_other_intervals_take_any_scores():
    base = np.array([1.0] * 40 + [0.0] * 10 + [1.0] * 150)
    cand = np.array([0.0] * 40 + [1.0] * 10 + [1.0] * 150)
    assert gate("m", base, cand, interval="tango").interval_method == "tango"
    assert gate("m", base, cand, interval="percentile", iterations=500).interval_method == "percentile"
    with pytest.raises(ValueError) as caught:
        gate("m", base * 0.5, cand, interval="tango")
    assert str(caught.value) == (
        "Tango's score interval is for pass/fail metrics (scores 0 or 1); 'm' has other scores: use interval='auto' "
        "or a bootstrap"
    )
    with pytest.raises(ValueError) as caught:
        gate("m", base, cand, interval="wald")
    assert str(caught.value) == "interval must be one of ('auto', 'tango', 'expanded', 'percentile'), got 'wald'"


def test_the_sign_flip_budget_puts_the_smallest_p_value_a_tenth_below_the_corrected_level():
    from evalcore.engine._gate_cells import sign_flips_for

    assert sign_flips_for(210, alpha=0.025, at_least=10_000) == 84_000  # 10 * 210 / 0.025
    assert sign_flips_for(1, alpha=0.025, at_least=10) == 400
    assert sign_flips_for(1, alpha=0.025, at_least=10_000) == 10_000


def test_the_gate_s_seed_reaches_the_monte_carlo_sign_flip_test():
    base, cand = _unconfirmed_drop()
    p_values = {gate("m", base, cand, iterations=200, seed=seed).p_value for seed in (4, 5, 6)}
    assert len(p_values) == 3


def test_a_p_value_exactly_at_the_level_is_a_significant_drop():
    # five questions fell, none rose: McNemar's exact p is 1/32, exactly alpha at confidence 1 - 2/32
    base, cand = [1.0] * 50, [0.0] * 5 + [1.0] * 45
    at_level = gate("m", base, cand, confidence=1 - 2 / 32)
    assert (at_level.p_value, at_level.status) == (1 / 32, "block")
    assert gate("m", base, cand, confidence=0.94).status == "review"  # alpha 0.03 < 1/32
