"""The gate's promises, checked by seeded simulation against a known truth.

* A harmless change (two exchangeable runs, 10 metrics x 20 slices + "all") is blocked in at most
  5 % of reports: Holm's correction holds the family-wise rate of a false "block" at 2.5 %.
* A real 5-point drop on one pass/fail metric at 2,000 questions still blocks at least 80 % of reports.
* The expanded percentile bootstrap covers at least 93 % at n = 30 on continuous metrics.

(A pass/fail change of exactly minus the margin is checked exactly, table by table, in
``test_paired_proportions.py``.) The fast versions run in ``./dev test``; the long ones are ``slow``.
"""

from __future__ import annotations

import numpy as np
import pytest

from evalcore.engine import gate_frame, paired_bootstrap

from .gate_simulation import CONTINUOUS_SHAPES, METRICS, continuous_differences, exchangeable_runs, with_pass_fail_drop


def reports_blocked(reports: int, *, seed: int, correction: str = "holm") -> tuple[float, int]:
    rng = np.random.default_rng(seed)
    blocked, family = 0, 0
    for i in range(reports):
        base, cand = exchangeable_runs(rng)
        report = gate_frame(base, cand, slice_by="type", iterations=200, seed=i, correction=correction)
        blocked += report.overall == "block"
        family = report.family_size
    return blocked / reports, family


def test_a_harmless_change_is_blocked_in_at_most_5_percent_of_reports():
    rate, family = reports_blocked(30, seed=19)
    assert family == len(METRICS) * 21 == 210
    assert rate <= 0.05


def test_without_the_correction_most_reports_of_a_harmless_change_block():
    # the test above can fail: the same reports uncorrected block most of the time
    rate, _ = reports_blocked(30, seed=19, correction="none")
    assert rate >= 0.5


@pytest.mark.slow
def test_a_harmless_change_is_blocked_in_at_most_5_percent_of_400_reports():
    rate, _ = reports_blocked(400, seed=20)
    assert rate <= 0.05


def reports_blocking_a_real_drop(reports: int, *, seed: int) -> float:
    rng = np.random.default_rng(seed)
    blocked = 0
    for i in range(reports):
        base, cand = exchangeable_runs(rng, n=2000)
        cand = with_pass_fail_drop(rng, base, cand, metric="hit@1", drop=0.05)
        report = gate_frame(base, cand, slice_by="type", iterations=200, seed=i)
        overall = next(d for d in report.decisions if (d.metric, d.slice) == ("hit@1", "all"))
        blocked += report.overall == "block" and overall.status == "block"
    return blocked / reports


def test_a_real_five_point_drop_on_one_metric_at_2000_questions_still_blocks():
    assert reports_blocking_a_real_drop(10, seed=21) >= 0.8


@pytest.mark.slow
def test_a_real_five_point_drop_blocks_in_at_least_80_percent_of_200_reports():
    assert reports_blocking_a_real_drop(200, seed=22) >= 0.8


def coverage(shape: str, reps: int, *, n: int = 30, interval: str = "expanded", seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    covered = 0
    for i in range(reps):
        base, cand = continuous_differences(rng, shape, n)
        result = paired_bootstrap(base, cand, iterations=2000, seed=i, interval=interval)
        covered += result.low <= 0.0 <= result.high  # every shape's true mean difference is 0
    return covered / reps


def test_the_expanded_bootstrap_covers_at_least_93_percent_at_n_30_on_continuous_metrics():
    pooled = np.mean([coverage(shape, 500, seed=30 + i) for i, shape in enumerate(CONTINUOUS_SHAPES)])
    percentile = np.mean(
        [coverage(shape, 500, seed=30 + i, interval="percentile") for i, shape in enumerate(CONTINUOUS_SHAPES)]
    )
    assert pooled >= 0.93
    assert percentile < pooled  # the spec's percentile interval is too narrow at n = 30


@pytest.mark.slow
@pytest.mark.parametrize("shape", CONTINUOUS_SHAPES)
def test_the_expanded_bootstrap_covers_at_least_93_percent_at_n_30_for_each_shape(shape):
    assert coverage(shape, 4000, seed=40) >= 0.93
