"""The planner, proven by simulation: campaigns and comparisons drawn from known truths.

For every scenario the planner chooses a sample size for a target (a half-width, a power); then
many campaigns or comparisons of that size are simulated and their intervals computed as the
product computes them. Checked: the intervals cover the truth 95 % of the time (within Monte Carlo
error), their mean half-width is the one predicted, and the gate settles as often as planned.
The replicas of the estimators are first checked against the real functions.

The default suite runs a thousand replications per scenario (a few seconds); the ``benchmark``
version (LSL_BENCHMARK=1) runs ten thousand with a tolerance three times tighter.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalcore.engine import gate, stratified_agreement
from evalcore.engine.judge import Stratum, corrected_pass_rate, kappa_bootstrap
from evalcore.engine.planning import judge_assumptions, label_plan, labels_needed, questions_needed

from .planning_simulation import (
    STATISTICS,
    difference_distribution,
    gate_counts,
    moments,
    paired_scores,
    pass_fail_distribution,
    simulate_campaigns,
    simulate_gates,
    stratum_tables,
)

RUN = 1_000_000  # a large run: the truth is the judge's, not one finite run's

#: (name, people's failure share, miss rate, false-fail rate, statistic planned for, target half-width)
CAMPAIGNS = [
    ("the spec's judge, a common failure class", 0.25, 0.44, 0.053, "miss_rate", 0.08),
    ("a good judge, a common class (the sample weighs itself)", 0.30, 0.12, 0.05, "miss_rate", 0.05),
    ("a rare failure class (5 %)", 0.05, 0.20, 0.02, "miss_rate", 0.10),
    ("a very rare failure class (2 %)", 0.02, 0.30, 0.01, "miss_rate", 0.12),
    ("planned for kappa", 0.15, 0.25, 0.05, "kappa", 0.08),
]

#: (name, kind, change or spread parameters): per-question differences of a pass/fail or a graded metric
COMPARISONS = [
    ("pass/fail, no change", "pass_fail", 0.0, 0.10),
    ("pass/fail, a 3-point drop", "pass_fail", -0.03, 0.15),
    ("pass/fail, a 1-point gain", "pass_fail", 0.01, 0.05),
    ("graded, no change", "graded", 0.0, 0.25),
    ("graded, a drop past the margin", "graded", -0.08, 0.30),
]
MARGIN = 0.02


def monte_carlo_tolerance(p: float, replications: int) -> float:
    """Three Monte Carlo standard errors, plus half a point for the simulation's own 1,000-resample percentiles."""
    return 3 * math.sqrt(p * (1 - p) / replications) + 0.005


def check_campaigns(scenario, *, replications: int, iterations: int, seed: int) -> None:
    name, failure_share, miss, false_fail, statistic, target = scenario
    assumptions = judge_assumptions(failure_share=failure_share, miss_rate=miss, false_fail_rate=false_fail)
    needed = labels_needed(target, statistic=statistic, assumptions=assumptions, population=RUN)
    plan = label_plan(needed.items, assumptions=assumptions, population=RUN)
    assert plan.report.half_width(statistic) <= target
    simulated = simulate_campaigns(plan, assumptions, replications=replications, iterations=iterations, seed=seed)
    tolerance = monte_carlo_tolerance(0.95, replications)
    for stat in STATISTICS:
        coverage = simulated.coverage(stat)
        predicted, realised = plan.report.half_width(stat), simulated.half_width(stat)
        where = (
            f"{name}, {needed.items} items: {stat} covered {coverage:.3f}, half-width {realised:.4f} vs {predicted:.4f}"
        )
        if not plan.weighted and stat in ("miss_rate", "false_fail_rate"):
            # the sample weighs itself: the report shows the sample's own Wilson interval, which ignores that the
            # sample is stratified by the judge's verdict, so it is a little conservative (documented)
            assert 0.95 - tolerance <= coverage <= 0.98, where
        else:
            assert abs(coverage - 0.95) <= tolerance, where
        assert realised == pytest.approx(predicted, rel=0.06), where


def check_comparison(scenario, *, replications: int, iterations: int, seed: int) -> None:
    name, kind, change, spread = scenario
    if kind == "pass_fail":
        values, probs = pass_fail_distribution(change, spread)
        plan = questions_needed(change, margin=MARGIN, discordance=spread)
    else:
        values, probs = difference_distribution(change, spread)
        mean, sd = moments(values, probs)
        plan = questions_needed(mean, margin=MARGIN, sd=sd)
    outcomes = simulate_gates(
        values,
        probs,
        plan.questions,
        margin=MARGIN,
        replications=replications,
        iterations=iterations,
        seed=seed,
        pass_fail=kind == "pass_fail",
    )
    power = outcomes[plan.outcome]
    assert abs(power - plan.power) <= 3 * math.sqrt(0.8 * 0.2 / replications) + 0.01, (
        f"{name}: {plan.questions} questions {plan.outcome} {power:.3f} of the time, planned {plan.power}"
    )


@pytest.mark.parametrize("scenario", CAMPAIGNS, ids=[s[0] for s in CAMPAIGNS])
def test_planned_campaigns_cover_the_truth_95_percent_of_the_time_at_the_predicted_half_width(scenario):
    check_campaigns(scenario, replications=1000, iterations=500, seed=CAMPAIGNS.index(scenario) + 1)


@pytest.mark.slow  # seconds of subprocesses or simulation: CI runs it (./dev test -m "")
@pytest.mark.parametrize("scenario", COMPARISONS, ids=[s[0] for s in COMPARISONS])
def test_a_planned_comparison_settles_as_often_as_the_power_planned(scenario):
    check_comparison(scenario, replications=2000, iterations=1000, seed=COMPARISONS.index(scenario) + 11)


@pytest.mark.benchmark
@pytest.mark.parametrize("scenario", CAMPAIGNS, ids=[s[0] for s in CAMPAIGNS])
def test_planned_campaigns_at_ten_thousand_replications(scenario):
    """Run with LSL_BENCHMARK=1: Monte Carlo error about 0.2 points (about 15 s a scenario)."""
    check_campaigns(scenario, replications=10_000, iterations=1000, seed=CAMPAIGNS.index(scenario) + 101)


@pytest.mark.benchmark
@pytest.mark.parametrize("scenario", COMPARISONS, ids=[s[0] for s in COMPARISONS])
def test_planned_comparisons_at_twenty_thousand_replications(scenario):
    """Run with LSL_BENCHMARK=1."""
    check_comparison(scenario, replications=20_000, iterations=1000, seed=COMPARISONS.index(scenario) + 111)


# The replicas agree with the real estimators, one replication at a time.


def one_campaign(seed: int):
    assumptions = judge_assumptions(failure_share=0.05, miss_rate=0.2, false_fail_rate=0.02)
    plan = label_plan(800, assumptions=assumptions, population=RUN)
    simulated = simulate_campaigns(plan, assumptions, replications=1, iterations=10_000, seed=seed)
    miss_items = simulated.estimate["miss_rate"][0]
    return plan, assumptions, simulated, miss_items


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_simulated_report_matches_stratified_agreement_and_the_corrected_rate(seed):
    plan, assumptions, simulated, _ = one_campaign(seed)
    q = assumptions.judge_fail_share
    size = np.array([RUN - round(RUN * q), round(RUN * q)])
    weights = size / np.array([plan.judge_pass_items, plan.judge_fail_items])
    # rebuild the replication's tables from its estimates: the miss rate's numerator and the stratum counts
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
    fail_rates = (
        assumptions.failure_share * assumptions.miss_rate / (1 - q),
        assumptions.failure_share * (1 - assumptions.miss_rate) / q,
    )
    fail_pass = rng.binomial(plan.judge_pass_items, fail_rates[0], 1)
    fail_fail = rng.binomial(plan.judge_fail_items, fail_rates[1], 1)
    tables = stratum_tables(fail_pass, fail_fail, plan.judge_pass_items, plan.judge_fail_items)[0].astype(int)

    real = stratified_agreement(tables, weights, iterations=10_000, seed=seed)

    assert real.miss_rate.estimate == pytest.approx(simulated.estimate["miss_rate"][0])
    assert (real.miss_rate.low, real.miss_rate.high) == pytest.approx(
        (simulated.low["miss_rate"][0], simulated.high["miss_rate"][0])
    )
    assert (real.false_fail_rate.low, real.false_fail_rate.high) == pytest.approx(
        (simulated.low["false_fail_rate"][0], simulated.high["false_fail_rate"][0])
    )
    assert real.kappa.estimate == pytest.approx(simulated.estimate["kappa"][0])
    assert (real.kappa.low, real.kappa.high) == pytest.approx(
        (simulated.low["kappa"][0], simulated.high["kappa"][0]), abs=0.01
    )  # two bootstraps of 10,000 resamples
    strata = [
        Stratum(True, plan.judge_pass_items, int(plan.judge_pass_items - fail_pass[0]), weights[0]),
        Stratum(False, plan.judge_fail_items, int(plan.judge_fail_items - fail_fail[0]), weights[1]),
    ]
    rate = corrected_pass_rate(
        run_passes=int(size[0]), run_total=int(size.sum()), strata=strata, labels_from_run=True, seed=seed
    )
    assert rate.estimate == pytest.approx(simulated.estimate["corrected_pass_rate"][0])
    assert (rate.low, rate.high) == pytest.approx(
        (simulated.low["corrected_pass_rate"][0], simulated.high["corrected_pass_rate"][0]), abs=0.002
    )


def test_the_simulated_pooled_kappa_matches_kappa_bootstrap():
    assumptions = judge_assumptions(failure_share=0.3, miss_rate=0.12, false_fail_rate=0.05)
    plan = label_plan(400, assumptions=assumptions, population=RUN)
    assert not plan.weighted
    simulated = simulate_campaigns(plan, assumptions, replications=1, iterations=10_000, seed=4)
    rng = np.random.default_rng(np.random.SeedSequence(4).spawn(1)[0])
    q = assumptions.judge_fail_share
    fail_pass = rng.binomial(plan.judge_pass_items, assumptions.failure_share * assumptions.miss_rate / (1 - q), 1)
    fail_fail = rng.binomial(plan.judge_fail_items, assumptions.failure_share * (1 - assumptions.miss_rate) / q, 1)
    pooled = stratum_tables(fail_pass, fail_fail, plan.judge_pass_items, plan.judge_fail_items)[0].sum(axis=0)
    real = kappa_bootstrap(pooled.astype(int), iterations=10_000)
    assert real.estimate == pytest.approx(simulated.estimate["kappa"][0])
    assert (real.low, real.high) == pytest.approx((simulated.low["kappa"][0], simulated.high["kappa"][0]), abs=0.01)


@pytest.mark.parametrize(("kind", "change", "spread"), [("pass_fail", -0.03, 0.15), ("graded", 0.0, 0.25)])
def test_the_simulated_comparisons_are_the_pairs_the_gate_sees(kind, change, spread):
    values, probs = (
        pass_fail_distribution(change, spread) if kind == "pass_fail" else difference_distribution(change, spread)
    )
    counts = np.random.default_rng(3).multinomial(600, probs)
    base, cand = paired_scores(values, counts, pass_fail=kind == "pass_fail")
    assert np.allclose(np.sort(cand - base), np.sort(np.repeat(values, counts)))
    decision = gate("m", base, cand, margin=MARGIN, iterations=1000)
    assert decision.interval_method == ("tango" if kind == "pass_fail" else "expanded")
    replica = gate_counts(
        values, counts[None, :], margin=MARGIN, iterations=1000, seed=7, pass_fail=kind == "pass_fail"
    )
    assert replica.tolist() == [decision.status]
