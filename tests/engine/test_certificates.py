"""Judge certificates: trusted / untrusted / inconclusive on interval bounds, and "label about N more"."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import binom
from sklearn.metrics import cohen_kappa_score

from evalcore.engine import (
    INCONCLUSIVE,
    TRUSTED,
    UNTRUSTED,
    CertificateBars,
    Interval,
    JudgeCertificate,
    certify_intervals,
    certify_judge,
    kappa_interval,
    proportion_interval,
    stratified_agreement,
    weighted_kappa_interval,
)

BARS = CertificateBars()


def flags(*, failures, missed, passes, false_fails):
    """People's and the judge's failure flags: ``failures`` items people fail (``missed`` passed by the judge)."""
    human = [True] * failures + [False] * passes
    judge = [False] * missed + [True] * (failures - missed) + [True] * false_fails + [False] * (passes - false_fails)
    return human, judge


def demo_tuned_judge():
    """The spec's demo tuned judge: 0 of 16 unsupported claims missed, 4 false fails among 184 supported."""
    return flags(failures=16, missed=0, passes=184, false_fails=4)


def test_the_demo_tuned_judge_is_inconclusive_and_says_how_many_more_labels_decide():
    human, judge = demo_tuned_judge()
    cert = certify_judge(human_failure=human, judge_failure=judge, failure_label="unsupported claims")
    assert cert.state == INCONCLUSIVE
    assert (cert.items, cert.failure_items, cert.missed) == (200, 16, 0)
    assert cert.miss_rate.high == pytest.approx(0.1936, abs=1e-4)  # the spec's "interval reaching 19 %"
    assert cert.kappa.low > BARS.min_kappa  # kappa is not what holds it back
    assert cert.more_failure_labels == 6
    # the smallest such number: 0 of 22 clears the 15 % bar, 0 of 21 does not
    assert proportion_interval(0, 16 + 6).high <= 0.15 < proportion_interval(0, 16 + 5).high
    assert cert.more_items == math.ceil(6 * 200 / 16)
    assert cert.reasons == (
        "misses up to 19 % of unsupported claims (upper end of its 95 % interval) against a 15 % bar",
        "kappa 0.88, at least 0.76 (lower end of its 95 % interval), clears the 0.6 bar",
        "label about 6 more unsupported claims (about 75 more items at the sample's share) to decide",
    )
    data = json.loads(json.dumps(cert.as_dict(), allow_nan=False))
    assert data["state"] == "inconclusive" and data["more_failure_labels"] == 6
    assert data["miss_rate"]["high"] == pytest.approx(0.1936, abs=1e-4) and data["miss_rate"]["missed"] == 0
    assert data["bars"] == {"max_miss_rate": 0.15, "min_kappa": 0.6, "confidence": 0.95}


def test_labelling_the_promised_items_at_the_same_rates_decides_the_demo_judge():
    human, judge = demo_tuned_judge()
    more = flags(failures=6, missed=0, passes=69, false_fails=2)
    cert = certify_judge(human_failure=human + more[0], judge_failure=judge + more[1])
    assert cert.state == TRUSTED and cert.more_failure_labels is None
    assert cert.reasons[0].startswith("misses at most 15 % of failure-class items")


def test_trusted_when_both_bounds_clear_the_bars():
    human, judge = flags(failures=120, missed=3, passes=380, false_fails=10)
    cert = certify_judge(human_failure=human, judge_failure=judge)
    assert cert.state == TRUSTED
    assert cert.miss_rate.high <= 0.15 and cert.kappa.low >= 0.6
    assert cert.kappa == kappa_interval(human, judge)
    assert cert.kappa.estimate == pytest.approx(cohen_kappa_score(human, judge), abs=1e-12)
    assert cert.more_failure_labels is None and cert.more_items is None


def test_untrusted_when_the_miss_rate_lower_bound_is_over_the_bar():
    human, judge = flags(failures=50, missed=22, passes=150, false_fails=8)  # the spec's first judge
    cert = certify_judge(human_failure=human, judge_failure=judge, failure_label="unsupported answers")
    assert cert.state == UNTRUSTED
    assert cert.miss_rate.low > 0.15
    assert cert.reasons[0] == (
        "misses at least 31 % of unsupported answers (lower end of its 95 % interval), over the 15 % bar"
    )
    assert cert.more_failure_labels is None


def test_untrusted_when_kappa_upper_bound_is_under_the_bar_even_with_few_misses():
    # misses few failures but fails half of what people pass: kappa is low
    human, judge = flags(failures=100, missed=2, passes=400, false_fails=200)
    cert = certify_judge(human_failure=human, judge_failure=judge)
    assert cert.miss_rate.high <= 0.15
    assert cert.kappa.high < 0.6
    assert cert.state == UNTRUSTED
    assert "under the 0.6 bar" in cert.reasons[1]


def test_inconclusive_heading_to_untrusted_also_counts_the_labels_that_would_decide():
    human, judge = flags(failures=20, missed=4, passes=80, false_fails=2)  # miss rate 20 %, interval 8-42 %
    cert = certify_judge(human_failure=human, judge_failure=judge)
    assert cert.state == INCONCLUSIVE
    n = cert.more_failure_labels
    assert n is not None
    assert proportion_interval(0.2, 20 + n).low > 0.15 >= proportion_interval(0.2, 20 + n - 1).low


def test_a_rate_on_the_bar_cannot_be_decided_by_more_labels():
    human, judge = flags(failures=40, missed=6, passes=160, false_fails=2)  # miss rate exactly 15 %
    cert = certify_judge(human_failure=human, judge_failure=judge)
    assert cert.state == INCONCLUSIVE and cert.more_failure_labels is None
    assert cert.reasons[-1] == "the observed rates sit on a bar: more labels alone will not decide"


def test_without_failure_class_items_the_certificate_says_the_least_it_would_take():
    cert = certify_judge(human_failure=[False] * 50, judge_failure=[False] * 48 + [True] * 2)
    assert cert.state == INCONCLUSIVE and cert.failure_items == 0
    assert math.isnan(cert.miss_rate.estimate) and (cert.miss_rate.low, cert.miss_rate.high) == (0.0, 1.0)
    assert cert.more_failure_labels == 22 and cert.more_items is None
    assert (
        cert.reasons[0]
        == "no failure-class items among the labelled items: the miss rate is unknown against a 15 % bar"
    )
    assert cert.reasons[1].startswith("kappa cannot show agreement: people put every labelled item in the same class")
    assert cert.reasons[-1] == "label at least 22 more failure-class items to decide"
    json.dumps(cert.as_dict(), allow_nan=False)


def test_kappa_on_people_s_single_class_decides_nothing_and_says_why():
    cert = certify_judge(human_failure=[True] * 30, judge_failure=[True] * 30)
    assert cert.state == INCONCLUSIVE and math.isnan(cert.kappa.estimate)
    assert cert.kappa.undefined_reason.startswith("kappa cannot show agreement")
    assert cert.more_failure_labels is None
    assert cert.reasons[-1] == "more labels of the same kind will not decide: label items of the other class too"
    assert cert.as_dict()["kappa"]["estimate"] is None
    # a miss rate that shows the judge fails the bar still decides
    bad = certify_judge(human_failure=[True] * 30, judge_failure=[False] * 20 + [True] * 10)
    assert bad.state == UNTRUSTED


def test_undefined_kappa_when_both_raters_used_one_score_is_never_trusted():
    cert = certify_judge(
        human_failure=[False] * 40 + [True] * 40,
        judge_failure=[False] * 40 + [True] * 40,
        human_scores=[4] * 80,
        judge_scores=[4] * 80,
        scale=[1, 2, 3, 4, 5],
        weights="linear",
    )
    assert cert.state == INCONCLUSIVE and cert.reasons[1].startswith("weighted kappa is undefined")


def test_ordinal_scores_use_weighted_kappa_on_the_declared_scale():
    rng = np.random.default_rng(5)
    people = rng.integers(1, 6, 300)
    judge = np.clip(people + rng.choice([-1, 0, 0, 0, 1], 300), 1, 5)
    cert = certify_judge(
        human_failure=people <= 2,
        judge_failure=judge <= 2,
        human_scores=people,
        judge_scores=judge,
        scale=[1, 2, 3, 4, 5],
        weights="quadratic",
    )
    assert cert.kappa == weighted_kappa_interval(people, judge, weights="quadratic", labels=[1, 2, 3, 4, 5])
    assert cert.kappa.estimate == pytest.approx(cohen_kappa_score(people, judge, weights="quadratic"), abs=1e-12)
    assert cert.weights == "quadratic" and cert.as_dict()["kappa"]["weights"] == "quadratic"
    assert cert.reasons[1].startswith("weighted kappa (quadratic) 0.9")
    assert cert.failure_items == int((people <= 2).sum())


def test_custom_bars_are_read_and_recorded():
    human, judge = flags(failures=120, missed=3, passes=380, false_fails=10)
    strict = CertificateBars(max_miss_rate=0.02, min_kappa=0.9, confidence=0.9)
    cert = certify_judge(human_failure=human, judge_failure=judge, bars=strict)
    assert cert.state != TRUSTED and cert.bars == strict
    assert cert.miss_rate.confidence == 0.9 and cert.kappa.confidence == 0.9
    assert "2 % bar" in cert.reasons[0] and "90 % interval" in cert.reasons[0]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(human_failure=[True, False], judge_failure=[True]), "same items in the same order: got 2 and 1"),
        (dict(human_failure=[], judge_failure=[]), "empty"),
        (dict(human_failure=[True, "maybe"], judge_failure=[True, False]), "human_failure must hold booleans"),
        (dict(human_failure=[True, None], judge_failure=[True, False]), "got None"),
        (dict(human_failure="TF", judge_failure=[True, False]), "not a string"),
        (dict(human_failure=[1, 0], judge_failure=[1, 0], human_scores=[1, 2]), "both human_scores and judge_scores"),
        (dict(human_failure=[1, 0], judge_failure=[1, 0], human_scores=[1, 2], judge_scores=[1, 2]), "weights"),
        (
            dict(
                human_failure=[1, 0], judge_failure=[1, 0], human_scores=[1, 2], judge_scores=[1, 2], weights="linear"
            ),
            "scale",
        ),
        (
            dict(
                human_failure=[1, 0],
                judge_failure=[1, 0],
                human_scores=[1],
                judge_scores=[1],
                weights="linear",
                scale=[1, 2],
            ),
            "the scores must cover the failure flags' 2 items",
        ),
        (dict(human_failure=[1, 0], judge_failure=[1, 0], weights="linear"), "apply to scores"),
    ],
)
def test_bad_input_is_refused_with_a_message_naming_it(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        certify_judge(**kwargs)


def test_bars_refuse_nonsense():
    with pytest.raises(ValueError, match="max_miss_rate"):
        CertificateBars(max_miss_rate=1.5)
    with pytest.raises(ValueError, match="min_kappa"):
        CertificateBars(min_kappa=1.0)
    with pytest.raises(ValueError, match="confidence"):
        CertificateBars(confidence=1)
    with pytest.raises(TypeError, match="CertificateBars"):
        certify_judge(human_failure=[True], judge_failure=[True], bars={"max_miss_rate": 0.1})


# --------------------------------------------------------------------------------------------
# Simulation against a known truth
# --------------------------------------------------------------------------------------------


def _simulate(rng, *, items, failure_share, miss_rate, false_fail_rate):
    human = rng.random(items) < failure_share
    judge = np.where(human, rng.random(items) >= miss_rate, rng.random(items) < false_fail_rate)
    return human, judge


def _states(*, sims, seed, **truth) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    counts = dict.fromkeys((TRUSTED, UNTRUSTED, INCONCLUSIVE), 0)
    for _ in range(sims):
        human, judge = _simulate(rng, **truth)
        counts[certify_judge(human_failure=human, judge_failure=judge).state] += 1
    return {state: count / sims for state, count in counts.items()}


def test_exactly_at_the_miss_rate_bar_the_chance_of_trusted_is_at_most_3_percent_at_any_size():
    # exact (binomial), not simulated: the Wilson upper bound's discreteness takes it to 2.80 % at 22 failure items,
    # above the 2.5 % a continuous one-sided 97.5 % bound would give; never above 3 % from 5 to 800 failure items
    worst = 0.0
    for n in range(5, 801):
        clearing = [k for k in range(n + 1) if proportion_interval(k, n).high <= 0.15]
        worst = max(worst, binom.cdf(max(clearing), n, 0.15) if clearing else 0.0)
    assert 0.025 < worst < 0.03


def test_exactly_at_the_miss_rate_bar_the_judge_is_rarely_trusted_by_simulation():
    shares = _states(sims=1500, seed=11, items=600, failure_share=0.25, miss_rate=0.15, false_fail_rate=0.02)
    assert shares[TRUSTED] <= 0.035, shares  # measured 0.019
    assert shares[UNTRUSTED] <= 0.045, shares  # measured 0.033: the Wilson lower bound's own discreteness


def test_a_truly_good_judge_is_trusted_with_enough_labels():
    shares = _states(sims=400, seed=12, items=800, failure_share=0.25, miss_rate=0.03, false_fail_rate=0.02)
    assert shares[TRUSTED] >= 0.97, shares  # measured 1.0 (600 of 800 items pass, 200 fail)
    few = _states(sims=400, seed=13, items=60, failure_share=0.25, miss_rate=0.03, false_fail_rate=0.02)
    assert few[INCONCLUSIVE] >= 0.9, few  # measured 0.99: about 15 failure items cannot clear a 15 % bar
    assert few[UNTRUSTED] <= 0.025, few


def test_a_truly_bad_judge_is_untrusted_with_enough_labels_and_never_trusted():
    shares = _states(sims=400, seed=14, items=800, failure_share=0.25, miss_rate=0.36, false_fail_rate=0.03)
    assert shares[UNTRUSTED] >= 0.97 and shares[TRUSTED] == 0, shares


def _promise_kept(*, sims, seed, start_items, truth) -> tuple[float, int]:
    """Share of inconclusive certificates that decide once the promised items are labelled from the truth."""
    rng = np.random.default_rng(seed)
    decided = asked = 0
    for _ in range(sims):
        human, judge = _simulate(rng, items=start_items, **truth)
        cert = certify_judge(human_failure=human, judge_failure=judge)
        if cert.state != INCONCLUSIVE or cert.more_failure_labels is None:
            continue
        asked += 1
        # label more items until the promised number of failure-class items is reached
        more_h, more_j = _simulate(rng, items=4 * cert.more_items + 100, **truth)
        stop = int(np.flatnonzero(more_h)[cert.more_failure_labels - 1]) + 1
        after = certify_judge(
            human_failure=np.concatenate([human, more_h[:stop]]), judge_failure=np.concatenate([judge, more_j[:stop]])
        )
        decided += after.state != INCONCLUSIVE
    return decided / asked, asked


def test_the_promise_is_not_pessimistic_when_the_observed_rates_scatter_around_the_truth():
    # the truth sits a little inside the bar; the observed rates scatter around it
    share, asked = _promise_kept(
        sims=300, seed=15, start_items=200, truth=dict(failure_share=0.25, miss_rate=0.07, false_fail_rate=0.02)
    )
    assert asked >= 100
    assert 0.5 <= share <= 0.9, (share, asked)  # measured 0.75 of 206


def _decided_after_promise(counts, *, sims, seed):
    """Share deciding once the promised failure-class items are labelled, the truth being the observed rates."""
    human, judge = flags(**counts)
    cert = certify_judge(human_failure=human, judge_failure=judge)
    assert cert.state == INCONCLUSIVE
    truth = dict(
        failure_share=counts["failures"] / len(human),
        miss_rate=counts["missed"] / counts["failures"],
        false_fail_rate=counts["false_fails"] / counts["passes"],
    )
    rng = np.random.default_rng(seed)
    decided = 0
    for _ in range(sims):
        more_h, more_j = _simulate(rng, items=4 * cert.more_items + 100, **truth)
        stop = int(np.flatnonzero(more_h)[cert.more_failure_labels - 1]) + 1
        after = certify_judge(
            human_failure=np.concatenate([human, more_h[:stop]]), judge_failure=np.concatenate([judge, more_j[:stop]])
        )
        decided += after.state != INCONCLUSIVE
    return decided / sims, cert.more_failure_labels


def test_labelling_the_promised_items_decides_about_half_the_time_when_the_truth_is_the_observed_rate():
    share, more = _decided_after_promise(dict(failures=40, missed=3, passes=160, false_fails=3), sims=400, seed=3)
    assert more == 48
    assert 0.38 <= share <= 0.62, share  # measured 0.47


@pytest.mark.slow
@pytest.mark.parametrize(
    ("counts", "more"),
    [
        (dict(failures=60, missed=6, passes=140, false_fails=3), 136),  # measured 0.45 at 400 runs
        (dict(failures=20, missed=4, passes=80, false_fails=2), 176),  # heading to untrusted; measured 0.48
    ],
)
def test_the_promise_over_judges_slow(counts, more):
    share, promised = _decided_after_promise(counts, sims=1500, seed=4)
    assert promised == more
    assert 0.4 <= share <= 0.6, share


def test_certificate_fields_are_the_brief_interface():
    names = list(JudgeCertificate.__dataclass_fields__)
    assert names[:7] == ["state", "kappa", "miss_rate", "items", "failure_items", "more_failure_labels", "reasons"]
    assert list(CertificateBars.__dataclass_fields__) == ["max_miss_rate", "min_kappa", "confidence"]


# --------------------------------------------------------------------------------------------
# Intervals computed elsewhere (a stratified sample weighted back to the run)
# --------------------------------------------------------------------------------------------


def test_certify_intervals_reads_the_same_bounds_as_certify_judge():
    for counts in (
        dict(failures=16, missed=0, passes=184, false_fails=4),
        dict(failures=120, missed=3, passes=380, false_fails=10),
        dict(failures=50, missed=22, passes=150, false_fails=8),
    ):
        human, judge = flags(**counts)
        own = certify_judge(human_failure=human, judge_failure=judge)
        given = certify_intervals(
            kappa=own.kappa,
            miss_rate=own.miss_rate,
            items=own.items,
            failure_items=own.failure_items,
            missed=own.missed,
        )
        assert (given.state, given.reasons[:2], given.missed) == (own.state, own.reasons[:2], counts["missed"])
        if own.more_failure_labels is not None:  # the scaled approximation asks for at least as many
            assert given.more_failure_labels >= own.more_failure_labels


def test_a_stratified_sample_is_certified_on_its_weighted_rates():
    # the judge's fails over-sampled: in the sample it misses 6 of 66 failures, weighted to the run far more
    tables = [[[150, 4], [6, 2]], [[10, 8], [2, 58]]]  # strata: judge passed, judge failed
    weights = [20.0, 1.0]
    run = stratified_agreement(tables, weights, iterations=2000)
    cert = certify_intervals(kappa=run.kappa, miss_rate=run.miss_rate, items=240, failure_items=68, missed=8)
    raw = certify_judge(
        human_failure=[False] * 154 + [True] * 8 + [False] * 18 + [True] * 60,
        judge_failure=[False] * 150 + [True] * 4 + [False] * 6 + [True] * 2 + [False] * 10 + [True] * 8 + [False] * 2
        + [True] * 58,
    )  # fmt: skip
    assert raw.miss_rate.estimate == pytest.approx(8 / 68)
    assert cert.miss_rate.estimate == pytest.approx(run.miss_rate.estimate) and cert.miss_rate.estimate > 0.5
    assert cert.state == UNTRUSTED and raw.state != UNTRUSTED
    json.dumps(cert.as_dict(), allow_nan=False)


def test_certify_intervals_refuses_inconsistent_counts_and_intervals():
    good = dict(
        kappa=Interval(0.8, 0.7, 0.9), miss_rate=Interval(0.1, 0.05, 0.2), items=100, failure_items=30, missed=3
    )
    with pytest.raises(ValueError, match="missed <= failure_items <= items"):
        certify_intervals(**{**good, "missed": 31})
    with pytest.raises(ValueError, match="must hold its estimate"):
        certify_intervals(**{**good, "kappa": Interval(0.8, 0.85, 0.9)})
    with pytest.raises(TypeError, match="miss_rate must be an Interval"):
        certify_intervals(**{**good, "miss_rate": (0.1, 0.05, 0.2)})
    assert certify_intervals(**good).state == INCONCLUSIVE
