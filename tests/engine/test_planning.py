"""The planner's arithmetic: assumptions, the campaign design it predicts for, and the paired-question counts.

Whether its predictions hold is proven by simulation in ``test_planning_simulation.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalcore.engine import (
    judge_assumptions,
    label_plan,
    labels_needed,
    paired_sample_size,
    power_of,
    questions_needed,
    settle_review,
)
from evalcore.engine.sampling import stratified_allocation

SPEC = judge_assumptions(failure_share=0.25, miss_rate=0.44, false_fail_rate=0.053)


def test_the_failure_share_follows_from_the_judges_fail_share_and_back():
    typed = judge_assumptions(failure_share=0.12, miss_rate=0.3, false_fail_rate=0.04)
    from_run = judge_assumptions(judge_fail_share=typed.judge_fail_share, miss_rate=0.3, false_fail_rate=0.04)
    assert from_run.failure_share == pytest.approx(0.12)
    assert SPEC.judge_fail_share == pytest.approx(0.18, abs=0.001)  # the spec's judge flags 18 %
    assert SPEC.kappa == pytest.approx(0.559, abs=0.002)  # and agrees with people at kappa 0.559


def test_a_judge_fail_share_the_assumed_errors_cannot_produce_is_refused_with_what_to_change():
    with pytest.raises(ValueError, match="lower the assumed false-fail rate"):
        judge_assumptions(judge_fail_share=0.02, false_fail_rate=0.05)
    with pytest.raises(ValueError, match="exactly one"):
        judge_assumptions(failure_share=0.1, judge_fail_share=0.1)
    with pytest.raises(ValueError, match="no information"):
        judge_assumptions(failure_share=0.1, miss_rate=0.6, false_fail_rate=0.5)


def test_a_run_whose_judge_gives_one_verdict_only_cannot_be_planned_from():
    with pytest.raises(ValueError, match="fails none of the items"):
        judge_assumptions(judge_fail_share=0.0)
    with pytest.raises(ValueError, match="fails every one of the items"):
        judge_assumptions(judge_fail_share=1.0)


def test_a_sample_of_one_judge_verdict_has_no_kappa_or_corrected_rate_to_plan():
    plan = label_plan(1, assumptions=SPEC)
    assert math.isnan(plan.report.kappa) and math.isnan(plan.report.corrected_pass_rate)
    assert plan.report.miss_rate > 0.4


def test_the_plan_samples_as_campaigns_do():
    strata = {("howto", True): 700, ("howto", False): 60, ("policy", True): 200, ("policy", False): 40}
    plan = label_plan(240, assumptions=SPEC, strata=strata)
    allocation = stratified_allocation(strata, 240)
    assert plan.judge_fail_items == allocation[("howto", False)] + allocation[("policy", False)] == 60
    assert plan.items == 240 and plan.population == 1000 and plan.weighted


def test_half_widths_shrink_as_the_sample_grows_and_overlap_costs_labels_not_precision():
    small, large = label_plan(200, assumptions=SPEC), label_plan(800, assumptions=SPEC)
    for statistic in ("miss_rate", "false_fail_rate", "kappa", "corrected_pass_rate"):
        assert large.report.half_width(statistic) < small.report.half_width(statistic)
    # four times the items: about half the width
    assert large.report.miss_rate == pytest.approx(small.report.miss_rate / 2, rel=0.1)
    doubled = label_plan(200, assumptions=SPEC, overlap=3)
    assert doubled.labels == 600 and doubled.report == small.report


def test_the_heldout_split_is_planned_on_its_own_share_of_every_stratum():
    plan = label_plan(400, assumptions=SPEC, heldout_fraction=0.25)
    assert plan.heldout.items == 100
    assert plan.heldout.miss_rate == pytest.approx(label_plan(100, assumptions=SPEC).report.miss_rate, rel=0.05)
    assert label_plan(400, assumptions=SPEC, heldout_fraction=0.0).heldout is None


def test_a_sample_that_weighs_itself_is_planned_as_the_report_counts_it():
    # the judge fails 40 %: no verdict needs lifting, the sample is proportional, the report counts it as it is
    even = judge_assumptions(failure_share=0.4, miss_rate=0.1, false_fail_rate=0.05)
    plan = label_plan(300, assumptions=even)
    assert not plan.weighted
    failures = plan.report.expected_failures
    z = 1.959963984540054
    m = even.miss_rate
    wilson = z * math.sqrt(m * (1 - m) / failures + z * z / (4 * failures**2)) / (1 + z * z / failures)
    assert plan.report.miss_rate == pytest.approx(wilson, rel=0.01)


def test_the_corrected_rate_is_narrower_in_a_small_run_the_sample_covers_much_of():
    # the campaign corrects its own run: its pass count is known, and 200 of 400 items leave half the run unlabelled
    small_run = label_plan(200, assumptions=SPEC, population=400)
    large_run = label_plan(200, assumptions=SPEC)
    assert small_run.report.corrected_pass_rate < large_run.report.corrected_pass_rate


def test_the_planner_no_longer_counts_the_runs_sampling_error_twice():
    # a run of 2,000, plus or minus 4 points: 975 labels when the run's pass count was counted as uncertain
    needed = labels_needed(0.04, statistic="corrected_pass_rate", assumptions=SPEC, population=2000)
    assert 240 <= needed.items <= 300


def test_warnings_say_when_the_prediction_is_optimistic_or_the_run_too_small():
    rare = judge_assumptions(failure_share=0.01, miss_rate=0.2, false_fail_rate=0.01)
    notes = " ".join(label_plan(200, assumptions=rare).notes)
    assert "rests on few items" in notes and "optimistic" in notes
    assert "takes every one" in " ".join(label_plan(500, assumptions=SPEC, population=300).notes)


def test_labels_needed_is_the_fewest_items_that_meet_the_target():
    needed = labels_needed(0.05, assumptions=SPEC, overlap=2)
    assert label_plan(needed.items, assumptions=SPEC).report.miss_rate <= 0.05
    assert label_plan(needed.items - 1, assumptions=SPEC).report.miss_rate > 0.05
    assert needed.labels == 2 * needed.items
    kappa = labels_needed(0.1, statistic="kappa", assumptions=SPEC)
    assert label_plan(kappa.items, assumptions=SPEC).report.kappa <= 0.1


def test_a_target_the_run_cannot_reach_says_so_with_the_best_it_can_do():
    needed = labels_needed(0.02, assumptions=SPEC, population=2000)
    assert needed.items is None and needed.available == 2000
    assert needed.best == pytest.approx(label_plan(2000, assumptions=SPEC, population=2000).report.miss_rate)


def test_the_heldout_split_needs_more_items_than_the_report():
    report = labels_needed(0.1, assumptions=SPEC, heldout_fraction=0.3)
    heldout = labels_needed(0.1, split="heldout", assumptions=SPEC, heldout_fraction=0.3)
    assert heldout.items == pytest.approx(report.items / 0.3, rel=0.05)


def test_a_gain_or_a_small_drop_is_settled_by_passing_and_counts_its_distance_from_the_margin():
    plan = questions_needed(0.01, margin=0.02, sd=0.3)
    assert plan.outcome == "pass"
    assert plan.questions == paired_sample_size(0.03, sd=0.3)
    drop = questions_needed(-0.01, margin=0.02, sd=0.3)
    assert drop.outcome == "pass" and drop.questions == paired_sample_size(0.01, sd=0.3)


def test_a_drop_past_the_margin_can_only_block():
    plan = questions_needed(-0.05, margin=0.02, sd=0.3)
    assert plan.outcome == "block" and plan.questions == paired_sample_size(0.05, sd=0.3)


def test_a_change_of_exactly_minus_a_zero_margin_is_never_settled():
    plan = questions_needed(0.0, margin=0.0, sd=0.3)
    assert plan.questions is None
    assert "no number of paired questions would settle this" in plan.sentence()


def test_for_pass_fail_metrics_the_spread_comes_from_the_discordance():
    plan = questions_needed(0.02, margin=0.02, discordance=0.1)
    assert plan.sd == pytest.approx(math.sqrt(0.1 - 0.02**2))
    with pytest.raises(ValueError, match="flip"):
        questions_needed(0.2, margin=0.02, discordance=0.03)


def test_the_power_of_the_planned_number_is_the_power_asked_for():
    plan = questions_needed(0.0, margin=0.02, sd=0.25, power=0.9)
    assert power_of(plan.questions, change=0.0, margin=0.02, sd=0.25) == pytest.approx(0.9, abs=0.002)
    assert power_of(plan.questions - 50, change=0.0, margin=0.02, sd=0.25) < 0.9


def test_settle_review_reads_the_spread_off_the_scores_and_says_it_in_words():
    base = [1, 0, 1, 1, 0, 1, 1, 1, 0, 1] * 60
    cand = [1, 1, 0, 1, 0, 1, 1, 1, 0, 0] * 60
    plan = settle_review(base, cand, margin=0.02, available=600)
    assert plan.discordance == pytest.approx(0.3) and plan.change == pytest.approx(-0.1)
    assert plan.outcome == "block"
    sentence = plan.sentence(observed=True)
    assert sentence.startswith("at the observed spread (30 % of questions flipping and a change of -0.100)")
    assert f"about {plan.questions:,} paired questions would settle this (block, with 80 % power)" in sentence
    assert sentence.endswith("; the eval set has 600")


def test_settle_review_of_graded_scores_uses_their_standard_deviation_and_the_metrics_direction():
    base = [0.2, 0.5, 0.9, 0.4] * 50
    cand = [0.3, 0.5, 0.7, 0.4] * 50
    higher = settle_review(base, cand, margin=0.02)
    lower = settle_review(base, cand, margin=0.02, higher_is_better=False)
    assert higher.discordance is None and higher.change == pytest.approx(-0.025)
    assert lower.change == pytest.approx(0.025) and lower.outcome == "pass"
    assert higher.outcome == "block"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: label_plan(0, assumptions=SPEC), "size must be a positive integer"),
        (lambda: label_plan(10, assumptions=SPEC, heldout_fraction=1.5), "heldout_fraction"),
        (lambda: label_plan(10, assumptions=SPEC, strata={"a": 3}), "strata keys"),
        (lambda: labels_needed(0, assumptions=SPEC), "target"),
        (lambda: labels_needed(0.05, statistic="accuracy", assumptions=SPEC), "statistic"),
        (lambda: questions_needed(0.0, margin=-0.1, sd=0.3), "margin"),
        (lambda: questions_needed(0.0, margin=0.02), "exactly one"),
        (lambda: settle_review([1.0], [1.0], margin=0.02), "at least 2"),
        (lambda: settle_review([1.0, math.nan], [1.0, 0.0], margin=0.02), "NaN"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()


def _allocation_one_at_a_time(strata, size, min_class_share=0.25):
    """The allocation's rounding fix done literally one item at a time (what the stepped loop must equal)."""
    total = sum(strata.values())
    classes = {}
    for (_, verdict), count in strata.items():
        classes[verdict] = classes.get(verdict, 0) + count
    if size >= total:
        return classes
    present = {v: n for v, n in classes.items() if n > 0}
    floor = min(min_class_share, 1.0 / max(1, len(present)))
    share_of = {v: n / total for v, n in present.items()}
    lifted = {v for v, p in share_of.items() if p < floor}
    rest = sum(p for v, p in share_of.items() if v not in lifted)
    share = {v: floor if v in lifted else (1.0 - floor * len(lifted)) * share_of[v] / rest for v in present}
    wanted = {v: share[v] * size for v in present}
    alloc = {v: min(present[v], int(round(wanted[v]))) for v in present}
    while sum(alloc.values()) < size:
        room = [v for v in present if alloc[v] < present[v]]
        if not room:
            break
        alloc[max(room, key=lambda c: (wanted[c] - alloc[c], str(c)))] += 1
    while sum(alloc.values()) > size:
        alloc[max(present, key=lambda c: (alloc[c] - wanted[c], str(c)))] -= 1
    return alloc


@pytest.mark.parametrize("seed", range(40))
def test_the_allocation_hands_out_in_steps_exactly_what_one_at_a_time_would(seed):
    rng = np.random.default_rng(seed)
    verdicts = [True, False, "unsure"][: rng.integers(1, 4)]
    strata = {
        (f"s{i}", verdict): int(rng.choice([0, 1, 3, rng.integers(1, 50), rng.integers(1, 5000)]))
        for i in range(rng.integers(1, 4))
        for verdict in verdicts
    }
    total = sum(strata.values())
    if total == 0:
        return
    size = int(rng.integers(1, total + 2))
    share = float(rng.choice([0.0, 0.1, 0.25, 0.5]))
    alloc = stratified_allocation(strata, size, min_class_share=share)
    per_class = {}
    for (_, verdict), n in alloc.items():
        per_class[verdict] = per_class.get(verdict, 0) + n
    expected = _allocation_one_at_a_time(strata, size, share)
    assert {v: n for v, n in per_class.items() if n} == {v: n for v, n in expected.items() if n}


def test_a_plan_for_a_rare_failure_class_is_found_in_well_under_a_second():
    """A typed-in 0.1 % failure share once took 8 s (a rounding loop of 1.75 million steps): the API timed out.
    Counted in steps of the allocation, not in seconds."""
    a = judge_assumptions(failure_share=0.001, miss_rate=0.0, false_fail_rate=0.0)
    needed = labels_needed(0.05, assumptions=a, heldout_fraction=0.0)
    assert needed.items == 44708
