"""Every worked number of the spec, reproduced by the engine's public API."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalcore import engine

from . import spec_reference as spec
from .spec_reference import SPEC_GRADES, SPEC_HUMAN, SPEC_JUDGE, SPEC_RANKED

GRID = 1 / 300  # the spec's bootstrap means all lie on a 1/300 grid


# --------------------------------------------------------------------------------------------
# Retrieval
# --------------------------------------------------------------------------------------------


def test_spec_example_recall_at_5_is_0_667():
    assert round(engine.recall_at_k(SPEC_RANKED, set(SPEC_GRADES), 5), 3) == 0.667
    assert engine.recall_at_k(SPEC_RANKED, SPEC_GRADES, 5) == pytest.approx(2 / 3)


def test_spec_example_precision_at_5_is_0_400():
    assert engine.precision_at_k(SPEC_RANKED, set(SPEC_GRADES), 5) == pytest.approx(0.4)
    assert engine.precision_at_k(SPEC_RANKED, SPEC_GRADES, 5) == pytest.approx(0.4)


def test_spec_example_reciprocal_rank_is_0_500():
    assert engine.reciprocal_rank(SPEC_RANKED, set(SPEC_GRADES)) == 0.5


def test_spec_example_ndcg_at_5_is_0_516_with_the_spec_exponential_gain():
    value = engine.ndcg_at_k(SPEC_RANKED, SPEC_GRADES, 5)
    assert round(value, 3) == 0.516
    # the spec's arithmetic: (7/log2(3) + 1/log2(5)) / (7 + 3/log2(3) + 1/2)
    expected = (7 / math.log2(3) + 1 / math.log2(5)) / (7 + 3 / math.log2(3) + 1 / 2)
    assert value == pytest.approx(expected, rel=1e-12)


def test_spec_example_dcg_parts_are_4_85_over_9_39():
    dcg = 7 / math.log2(3) + 1 / math.log2(5)
    idcg = 7 + 3 / math.log2(3) + 1 / 2
    assert round(dcg, 2) == 4.85 and round(idcg, 2) == 9.39
    assert engine.ndcg_at_k(SPEC_RANKED, SPEC_GRADES, 5) == pytest.approx(dcg / idcg)


def test_spec_what_if_moving_d2_to_rank_1_raises_ndcg_to_0_791():
    ranked = ["d2", "d7", "d9", "d4", "d1"]
    assert round(engine.ndcg_at_k(ranked, SPEC_GRADES, 5), 3) == 0.791


def test_spec_what_if_fetching_d5_at_rank_3_gives_ndcg_0_676():
    ranked = ["d7", "d2", "d5", "d4", "d1"]
    assert round(engine.ndcg_at_k(ranked, SPEC_GRADES, 5), 3) == 0.676


def test_spec_example_batch_scorer_gives_the_same_four_numbers():
    frame = engine.score_retrieval([SPEC_RANKED], [SPEC_GRADES], 5)
    row = frame.iloc[0]
    assert [round(float(row[c]), 3) for c in ("recall@5", "precision@5", "rr", "ndcg@5")] == [0.667, 0.4, 0.5, 0.516]


def test_spec_example_batch_scorer_reproduces_both_what_ifs():
    frame = engine.score_retrieval(
        [["d2", "d7", "d9", "d4", "d1"], ["d7", "d2", "d5", "d4", "d1"]],
        [SPEC_GRADES, SPEC_GRADES],
        5,
        metrics=["ndcg"],
    )
    assert [round(float(x), 3) for x in frame["ndcg@5"]] == [0.791, 0.676]


def test_spec_example_matches_the_spec_code_itself():
    gold = set(SPEC_GRADES)
    assert engine.recall_at_k(SPEC_RANKED, gold, 5) == spec.recall_at_k(SPEC_RANKED, gold, 5)
    assert engine.precision_at_k(SPEC_RANKED, gold, 5) == spec.precision_at_k(SPEC_RANKED, gold, 5)
    assert engine.reciprocal_rank(SPEC_RANKED, gold) == spec.reciprocal_rank(SPEC_RANKED, gold)
    assert engine.ndcg_at_k(SPEC_RANKED, SPEC_GRADES, 5) == pytest.approx(spec.ndcg_at_k(SPEC_RANKED, SPEC_GRADES, 5))


# --------------------------------------------------------------------------------------------
# The judge example
# --------------------------------------------------------------------------------------------


def test_spec_judge_example_raw_agreement_is_0_850_and_kappa_0_559():
    report = engine.binary_agreement(SPEC_HUMAN, SPEC_JUDGE)
    assert report.agreement == pytest.approx(0.85)
    assert round(report.kappa, 3) == 0.559
    assert round(engine.cohen_kappa(SPEC_HUMAN, SPEC_JUDGE), 3) == 0.559
    assert engine.cohen_kappa(SPEC_HUMAN, SPEC_JUDGE) == pytest.approx(spec.cohen_kappa(SPEC_HUMAN, SPEC_JUDGE))


def test_spec_judge_flags_18_percent_unsupported_against_a_true_25_percent():
    report = engine.binary_agreement(SPEC_HUMAN, SPEC_JUDGE)
    assert report.predicted_rate[engine.UNSUPPORTED] == pytest.approx(0.18)
    assert report.reference_rate[engine.UNSUPPORTED] == pytest.approx(0.25)


def test_spec_judge_catches_28_of_50_hallucinations_and_misses_22():
    report = engine.binary_agreement(SPEC_HUMAN, SPEC_JUDGE)
    assert report.failures == 50
    assert report.caught == 28
    assert report.missed == 22
    assert report.miss_rate == pytest.approx(0.44)
    assert report.miss_sentence() == "the judge passed 22 of the 50 answers people found unsupported"


def test_spec_judge_kappa_interval_matches_statsmodels_se_0_0705_and_interval_0_421_to_0_697():
    est = engine.kappa_interval(SPEC_HUMAN, SPEC_JUDGE)
    assert round(est.se, 4) == 0.0705
    assert (round(est.low, 3), round(est.high, 3)) == (0.421, 0.697)


# --------------------------------------------------------------------------------------------
# How many questions
# --------------------------------------------------------------------------------------------


def test_spec_proportion_standard_error_at_p_0_7_and_n_300_is_0_026():
    assert round(engine.proportion_se(0.7, 300), 3) == 0.026
    assert engine.proportion_se(0.7, 300) == pytest.approx(math.sqrt(0.7 * 0.3 / 300))


def test_spec_single_run_interval_is_roughly_plus_or_minus_5_points():
    est = engine.proportion_interval(0.7, 300, method="wald")
    assert round(est.high - est.estimate, 2) == 0.05
    assert round(est.estimate - est.low, 2) == 0.05


# --------------------------------------------------------------------------------------------
# The paired bootstrap and the gate
# --------------------------------------------------------------------------------------------


def test_spec_bootstrap_data_has_baseline_0_717_and_candidate_0_673():
    base, cand = spec.spec_bootstrap_data()
    assert round(sum(base) / 300, 3) == 0.717
    assert round(sum(cand) / 300, 3) == 0.673


@pytest.mark.parametrize("method", ["multinomial", "resample", "auto"])
def test_spec_bootstrap_example_gives_mean_minus_0_043_and_interval_minus_0_077_to_minus_0_010(method):
    base, cand = spec.spec_bootstrap_data()
    result = engine.paired_bootstrap(base, cand, method=method)
    assert round(result.estimate, 3) == -0.043
    assert result.estimate == pytest.approx(-13 / 300)
    # within one grid step of the spec's printed interval
    assert abs(result.low - (-0.077)) <= GRID + 1e-9
    assert abs(result.high - (-0.010)) <= GRID + 1e-9
    assert result.low < result.estimate < result.high
    # with the default seed 7 the engine lands exactly on the spec's printed values
    assert f"{result.low:+.3f}" == "-0.077" and f"{result.high:+.3f}" == "-0.010"


def test_spec_bootstrap_interval_is_entirely_below_zero_for_every_seed_and_resampler():
    base, cand = spec.spec_bootstrap_data()
    for seed in range(12):
        for method in ("multinomial", "resample"):
            result = engine.paired_bootstrap(base, cand, seed=seed, method=method)
            assert -24 / 300 - 1e-9 <= result.low <= -22 / 300 + 1e-9, (seed, method, result)
            assert -4 / 300 - 1e-9 <= result.high <= -2 / 300 + 1e-9, (seed, method, result)


def test_spec_gate_blocks_the_example_with_a_margin_of_0_02():
    base, cand = spec.spec_bootstrap_data()
    decision = engine.gate("faithfulness", base, cand, margin=0.02, interval="percentile")  # the spec's own interval
    assert decision.status == "block"
    assert decision.message == "faithfulness: real drop -0.043 [-0.077, -0.010]"
    assert decision.seed == 7 and decision.iterations == 10_000
    assert round(decision.base_mean, 3) == 0.717 and round(decision.cand_mean, 3) == 0.673


def test_spec_gate_blocks_the_example_with_tangos_interval_too():
    # pass/fail scores get Tango's score interval by default: a little wider, the same decision
    base, cand = spec.spec_bootstrap_data()
    decision = engine.gate("faithfulness", base, cand, margin=0.02)
    assert decision.status == "block"
    assert decision.message == "faithfulness: real drop -0.043 [-0.081, -0.010]"
    assert decision.p_value < 0.01


def test_spec_gate_default_margin_is_0_02():
    assert engine.DEFAULT_MARGIN == 0.02
    base, cand = spec.spec_bootstrap_data()
    assert engine.gate("faithfulness", base, cand).margin == 0.02


def test_spec_bootstrap_engine_agrees_with_the_spec_loop_within_one_grid_step():
    base, cand = spec.spec_bootstrap_data()
    mean, lo, hi = spec.paired_bootstrap(base, cand, iters=4000, seed=3)
    result = engine.paired_bootstrap(base, cand, iterations=4000, seed=3)
    assert result.estimate == pytest.approx(mean)
    assert abs(result.low - lo) <= GRID + 1e-9
    assert abs(result.high - hi) <= GRID + 1e-9
    assert np.isclose(lo * 300, round(lo * 300))  # the spec's loop is on the grid too
