"""Labels where they shrink the interval most, and the planner's promise for the corrected pass rate, by simulation.

A campaign corrects its own run: a run of 2,000 answers with a judge like the spec's, labelled as the
planner's design says; the truth is the run's own pass rate as people would label it. The report's
estimate is the stratified prediction-powered one (:func:`~evalcore.engine.ppi.prediction_powered_mean`,
design ``"run"``), which for a pass/fail judge stratified by its verdicts is Rogan-Gladen on the run.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalcore.engine.allocation import disagreement_spread, next_labels, neyman_allocation
from evalcore.engine.judge import Stratum, corrected_pass_rate
from evalcore.engine.planning import judge_assumptions, label_plan, labels_needed
from evalcore.engine.ppi import prediction_powered_mean

SPEC = judge_assumptions(failure_share=0.25, miss_rate=0.44, false_fail_rate=0.053)
RUN = 2000


def test_neyman_gives_each_stratum_labels_in_proportion_to_its_size_times_its_spread():
    alloc = neyman_allocation({"a": 1000, "b": 1000, "c": 500}, 100, spread={"a": 0.5, "b": 0.25, "c": 0.5})
    assert alloc == {"a": 50, "b": 25, "c": 25}
    assert sum(alloc.values()) == 100


def test_neyman_takes_a_small_stratum_whole_and_keeps_a_minimum_where_nothing_varies():
    alloc = neyman_allocation({"small": 10, "big": 1000, "calm": 500}, 200, spread={"small": 1.0, "big": 0.1,
                                                                                    "calm": 0.0})  # fmt: skip
    assert alloc["small"] == 10 and alloc["calm"] == 2 and sum(alloc.values()) == 200
    assert neyman_allocation({"a": 5, "b": 5}, 20, spread={"a": 0.1, "b": 0.1}) == {"a": 5, "b": 5}
    with pytest.raises(ValueError, match="no spread"):
        neyman_allocation({"a": 5}, 2, spread={})


def test_next_labels_go_where_the_judge_is_least_reliable_and_say_so():
    strata = {("numeric", True): 600, ("numeric", False): 100, ("prose", True): 1200, ("prose", False): 100}
    spread = {("numeric", True): disagreement_spread(0.3), ("numeric", False): disagreement_spread(0.3),
              ("prose", True): disagreement_spread(0.05), ("prose", False): disagreement_spread(0.3)}  # fmt: skip
    labelled = {k: 40 for k in strata}
    plan = next_labels(strata, labelled=labelled, spread=spread, extra=60)
    assert max(plan.extra, key=plan.extra.get) == ("numeric", True)
    assert plan.half_width_after < plan.half_width_before
    names = {("numeric", True): "the judge passed on numeric questions"}
    words = plan.in_words(unit="answers", names=names)
    assert words.startswith(f"label {plan.extra[('numeric', True)]} more answers the judge passed on numeric questions")
    # greedy is optimal: no other split of the 60 labels gives a narrower interval
    alternative = next_labels(strata, labelled={**labelled, ("prose", True): 100}, spread=spread, extra=1)
    assert plan.half_width_after <= alternative.half_width_before + 1e-12


def simulate_own_run(plan, replications: int, seed: int, *, old_interval: bool = False):
    """Campaigns on fresh runs of RUN answers, labelled as ``plan`` says: coverage and mean half-width."""
    rng = np.random.default_rng(seed)
    covered, widths = 0, []
    for _ in range(replications):
        people = rng.random(RUN) >= SPEC.failure_share
        judge = np.where(people, rng.random(RUN) >= SPEC.false_fail_rate, rng.random(RUN) < SPEC.miss_rate)
        truth = people.mean()
        sample = np.concatenate([
            rng.choice(np.flatnonzero(judge == verdict), count, replace=False)
            for verdict, count in ((True, plan.judge_pass_items), (False, plan.judge_fail_items))
        ])  # fmt: skip
        strata = np.where(judge, "passed", "failed")
        if old_interval:  # the interval before the fix: the run's pass count resampled as if it were a source of error
            r = corrected_pass_rate(run_passes=int(judge.sum()), run_total=RUN, labels_from_run=False, iterations=2000,
                                    seed=int(rng.integers(1 << 30)), strata=[
                Stratum.of(judge_pass=v, labelled=int((judge[sample] == v).sum()),
                           human_pass=int(people[sample][judge[sample] == v].sum()), population=int((judge == v).sum()))
                for v in (True, False)])  # fmt: skip
        else:
            r = prediction_powered_mean(labels=people[sample].astype(float), judge_labelled=judge[sample].astype(float),
                                        judge_rows=judge.astype(float), labelled_strata=strata[sample],
                                        row_strata=strata, design="run")  # fmt: skip
        covered += r.low <= truth <= r.high
        widths.append((r.high - r.low) / 2)
    return covered / replications, float(np.mean(widths))


@pytest.mark.parametrize("allocation", ["verdict floor", "neyman"])
def test_the_planned_corrected_rate_covers_the_runs_truth_at_the_predicted_half_width(allocation):
    needed = labels_needed(0.04, statistic="corrected_pass_rate", assumptions=SPEC, population=RUN,
                           allocation=allocation)  # fmt: skip
    assert 240 <= needed.items <= 300  # it was 975 when the run's pass count was counted as a second error
    plan = label_plan(needed.items, assumptions=SPEC, population=RUN, allocation=allocation)
    coverage, width = simulate_own_run(plan, 400, seed=41)
    assert coverage >= 0.92, f"covered {coverage:.3f}"
    assert width == pytest.approx(plan.report.corrected_pass_rate, rel=0.06)


def test_the_old_interval_was_too_wide_on_the_campaigns_own_run():
    plan = label_plan(264, assumptions=SPEC, population=RUN)
    coverage, width = simulate_own_run(plan, 150, seed=43, old_interval=True)
    new_coverage, new_width = simulate_own_run(plan, 150, seed=43)
    assert coverage >= 0.97 and width > 1.25 * new_width
    assert math.isclose(new_width, plan.report.corrected_pass_rate, rel_tol=0.06)


@pytest.mark.slow
@pytest.mark.parametrize("allocation", ["verdict floor", "neyman"])
def test_the_planned_corrected_rate_covers_at_least_94_percent_over_4000_campaigns(allocation):
    plan = label_plan(264, assumptions=SPEC, population=RUN, allocation=allocation)
    coverage, width = simulate_own_run(plan, 4000, seed=47)
    assert coverage >= 0.94, f"covered {coverage:.3f}"
    assert width == pytest.approx(plan.report.corrected_pass_rate, rel=0.04)
