"""The corrected estimate: the run's pass rate corrected for the judge's measured sensitivity and
specificity (Rogan-Gladen), with a bootstrap interval carrying the uncertainty of both the labels
and the run, weighted by the campaign's strata."""

from __future__ import annotations

import html
import math

import numpy as np
import pytest
from django.urls import reverse

from evalcore.engine.judge import Stratum, corrected_pass_rate, rogan_gladen
from labelstudio_lite.labelling.models import Campaign, Item
from labelstudio_lite.labelling.services.judge_report import judge_report
from tests.factories import answer_claims, import_labels, make_campaign, make_judged_run, word

from .conftest import module_data

# ----------------------------------------------------------------------------------------------
# Rogan-Gladen
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("observed", "se", "sp"), [(0.82, 0.95, 0.56), (0.5, 0.9, 0.8), (0.3, 0.7, 0.9), (0.91, 0.99, 0.7)]
)
def test_rogan_gladen_is_the_formula_inside_the_unit_interval(observed, se, sp):
    expected = (observed + sp - 1) / (se + sp - 1)
    assert 0 <= expected <= 1
    assert rogan_gladen(observed, se, sp) == pytest.approx(expected)


def test_rogan_gladen_recovers_the_true_rate_from_the_rate_an_imperfect_judge_observes():
    true, se, sp = 0.74, 0.95, 0.56
    observed = true * se + (1 - true) * (1 - sp)
    assert rogan_gladen(observed, se, sp) == pytest.approx(true)


def test_rogan_gladen_clips_to_zero_and_one():
    assert (0.1 + 0.8 - 1) / (0.9 + 0.8 - 1) < 0
    assert rogan_gladen(0.1, 0.9, 0.8) == 0.0
    assert (0.99 + 0.8 - 1) / (0.9 + 0.8 - 1) > 1
    assert rogan_gladen(0.99, 0.9, 0.8) == 1.0
    assert rogan_gladen(0.0, 0.9, 0.8) == 0.0 and rogan_gladen(1.0, 0.9, 0.9) == 1.0


def test_rogan_gladen_is_undefined_for_a_judge_that_carries_no_information():
    assert math.isnan(rogan_gladen(0.5, 0.5, 0.5))
    assert math.isnan(rogan_gladen(0.5, 0.3, 0.6))


@pytest.mark.parametrize("bad", [-0.1, 1.2, float("nan"), True, "0.5"])
def test_rogan_gladen_refuses_values_that_are_not_probabilities(bad):
    with pytest.raises(ValueError):
        rogan_gladen(bad, 0.9, 0.8)
    with pytest.raises(ValueError):
        rogan_gladen(0.5, bad, 0.8)


# ----------------------------------------------------------------------------------------------
# A simulated population: stratified sample oversampling the judge's unsupported verdicts
# ----------------------------------------------------------------------------------------------

TRUE_RATE, SE, SP = 0.74, 0.95, 0.56
POPULATION, LABELLED = 20_000, 400


def simulate(seed: int, *, weighted: bool = True, iterations: int = 10_000):
    """Return (corrected rate, the population's true pass rate, stratified estimate) for one simulated run."""
    rng = np.random.default_rng(seed)
    truth = rng.random(POPULATION) < TRUE_RATE
    judge = np.where(truth, rng.random(POPULATION) < SE, rng.random(POPULATION) >= SP)
    strata, estimate = [], 0.0
    for verdict in (True, False):
        members = np.flatnonzero(judge == verdict)
        sample = rng.choice(
            members, size=LABELLED // 2, replace=False
        )  # half of the labels on the rare verdict: oversampled
        human_pass = int(truth[sample].sum())
        strata.append(
            Stratum(
                judge_pass=verdict,
                labelled=len(sample),
                human_pass=human_pass,
                weight=len(members) / len(sample) if weighted else 1.0,
            )
        )
        estimate += len(members) * human_pass / len(sample)
    result = corrected_pass_rate(
        run_passes=int(judge.sum()),
        run_total=POPULATION,
        strata=strata,
        labels_from_run=True,
        iterations=iterations,
        seed=seed,
    )
    return result, float(truth.mean()), estimate / POPULATION


def test_the_corrected_rate_of_a_simulated_run_covers_the_true_rate_and_is_close_to_it():
    result, truth, _ = simulate(2026)

    assert result.raw == pytest.approx(
        TRUE_RATE * SE + (1 - TRUE_RATE) * (1 - SP), abs=0.01
    )  # the judge says about 0.82
    assert result.low < truth < result.high
    assert result.estimate == pytest.approx(truth, abs=0.04)
    assert abs(result.estimate - truth) < abs(result.raw - truth) / 2
    assert result.sensitivity == pytest.approx(SE, abs=0.03)
    assert result.specificity == pytest.approx(SP, abs=0.08)
    assert result.note is None and result.iterations == 10_000


def test_with_the_sampling_weights_rogan_gladen_equals_the_stratified_estimate():
    result, _, stratified = simulate(7)

    assert result.estimate == pytest.approx(stratified, abs=1e-9)


def test_without_the_sampling_weights_the_oversampled_verdict_biases_the_estimate():
    weighted, truth, _ = simulate(11)
    unweighted, _, _ = simulate(11, weighted=False)

    assert unweighted.sensitivity < SE - 0.08  # the judge's fails are over-represented in the sample
    assert abs(unweighted.estimate - truth) > 2 * abs(weighted.estimate - truth)


def test_the_interval_covers_the_true_rate_in_most_simulated_runs():
    covered = 0
    runs = 60
    for seed in range(runs):
        result, truth, _ = simulate(seed, iterations=2_000)
        covered += result.low <= truth <= result.high
    assert covered >= 0.85 * runs, f"covered the truth in {covered} of {runs} runs"


def test_the_interval_is_reproducible_with_the_same_seed_and_wider_than_the_labels_alone_suggest():
    first, _, _ = simulate(5)
    again, _, _ = simulate(5)

    assert (first.low, first.high) == (again.low, again.high)
    assert first.high - first.low > 0.05


def test_labels_of_one_class_only_leave_the_corrected_rate_unknown():
    strata = [Stratum(True, 10, 10, 8.0), Stratum(False, 10, 10, 2.0)]
    result = corrected_pass_rate(run_passes=80, run_total=100, strata=strata, labels_from_run=True)

    assert math.isnan(result.estimate) and math.isnan(result.low)
    assert "only one class" in result.note


def test_corrected_pass_rate_refuses_impossible_inputs():
    with pytest.raises(ValueError, match="run_passes"):
        corrected_pass_rate(run_passes=120, run_total=100, strata=[Stratum(True, 10, 8, 10.0)], labels_from_run=True)
    with pytest.raises(ValueError, match="no labelled items"):
        corrected_pass_rate(run_passes=80, run_total=100, strata=[Stratum(True, 0, 0, 1.0)], labels_from_run=True)
    with pytest.raises(TypeError, match="labels_from_run"):
        corrected_pass_rate(run_passes=80, run_total=100, strata=[Stratum(True, 10, 8, 10.0)], labels_from_run=None)


def test_a_stratum_states_its_weight_and_of_computes_population_over_sample():
    with pytest.raises(TypeError):
        Stratum(True, 10, 8)  # no silent weight of 1
    assert Stratum.of(judge_pass=True, labelled=40, human_pass=36, population=1640).weight == 41.0
    with pytest.raises(ValueError, match="cannot have"):
        Stratum.of(judge_pass=True, labelled=40, human_pass=36, population=20)


# ----------------------------------------------------------------------------------------------
# The report's corrected block uses the campaign's strata
# ----------------------------------------------------------------------------------------------

RUN_SIZE = 600


def judge_of(i: int) -> bool:
    return i % 10 != 0  # 10 % of the run judged unsupported: the campaign oversamples them


def human_of(i: int) -> bool:
    if judge_of(i):
        return i % 7 != 0
    return i % 3 == 0


def labelled_campaign(folder, name: str, *, size: int, human) -> int:
    """A judged run of RUN_SIZE answers, a campaign of ``size`` over it, and one label per item by ``human(i)``."""
    built = make_judged_run(
        folder=folder,
        claim_verdicts=[answer_claims(judge_of(i)) for i in range(RUN_SIZE)],
        evalset=name,
        name=f"{name}-run",
    )
    campaign = make_campaign(run=built.run, name=name, size=size, seed=3)
    qids = Item.objects.filter(campaign=campaign).values_list("row__question__qid", flat=True)
    import_labels(folder=folder, campaign=campaign, rows=[(q, None, word(human(int(q[1:]))), "r1", "") for q in qids])
    return campaign.pk


@pytest.fixture(scope="module")
def oversampled(django_db_setup, django_db_blocker, tmp_path_factory):
    with module_data(django_db_blocker):
        yield labelled_campaign(tmp_path_factory.mktemp("corrected"), "corr", size=200, human=human_of)


def test_the_campaign_oversamples_the_judges_rare_unsupported_verdict(oversampled, db):
    campaign = Campaign.objects.get(pk=oversampled)

    unsupported = sum(s["sampled"] for s in campaign.strata if not s["judge_supported"])
    assert unsupported >= 50 > 0.1 * 200
    assert judge_report(campaign).as_dict()["oversampled"] is True


def test_the_reports_corrected_block_weights_each_stratum_by_its_population(oversampled, db):
    campaign = Campaign.objects.get(pk=oversampled)
    strata = []
    tp = fn = tn = fp = 0.0
    estimate = 0.0
    for s in campaign.strata:
        qids = Item.objects.filter(campaign=campaign, stratum=s["stratum"]).values_list("row__question__qid", flat=True)
        passed = sum(human_of(int(q[1:])) for q in qids)
        weight = s["available"] / len(qids)
        strata.append(Stratum(judge_pass=s["judge_supported"], labelled=len(qids), human_pass=passed, weight=weight))
        if s["judge_supported"]:
            tp, fp = tp + weight * passed, fp + weight * (len(qids) - passed)
        else:
            fn, tn = fn + weight * passed, tn + weight * (len(qids) - passed)
        estimate += s["available"] * passed / len(qids)
    run_passes = sum(judge_of(i) for i in range(RUN_SIZE))

    corrected = judge_report(campaign).as_dict()["corrected"]

    assert corrected["run_items"] == RUN_SIZE
    assert corrected["raw"] == pytest.approx(run_passes / RUN_SIZE) == pytest.approx(0.9)
    assert corrected["sensitivity"] == pytest.approx(tp / (tp + fn))
    assert corrected["specificity"] == pytest.approx(tn / (tn + fp))
    assert corrected["corrected"] == pytest.approx(rogan_gladen(run_passes / RUN_SIZE, tp / (tp + fn), tn / (tn + fp)))
    assert corrected["corrected"] == pytest.approx(estimate / RUN_SIZE)
    expected = corrected_pass_rate(
        run_passes=run_passes, run_total=RUN_SIZE, strata=strata, labels_from_run=True, seed=campaign.seed
    )
    # the same bootstrap up to the order in which the strata draw their resamples
    assert (corrected["low"], corrected["high"]) == pytest.approx((expected.low, expected.high), abs=0.01)
    truth = sum(human_of(i) for i in range(RUN_SIZE)) / RUN_SIZE
    assert corrected["low"] < truth < corrected["high"]


def test_the_unweighted_sample_would_have_given_another_answer(oversampled, db):
    campaign = Campaign.objects.get(pk=oversampled)
    items = Item.objects.filter(campaign=campaign).values_list("row__question__qid", "judge_supported")
    naive_se_num = sum(1 for q, j in items if j and human_of(int(q[1:])))
    naive_se = naive_se_num / sum(1 for q, _ in items if human_of(int(q[1:])))

    corrected = judge_report(campaign).as_dict()["corrected"]

    assert corrected["sensitivity"] > naive_se + 0.02


def test_the_report_page_shows_the_corrected_rate_beside_the_judges_raw_rate(oversampled, db, owner_client):
    campaign = Campaign.objects.get(pk=oversampled)
    corrected = judge_report(campaign).as_dict()["corrected"]

    page = owner_client.get(reverse("labelling:report", args=[campaign.name])).content.decode()

    ppi = corrected["ppi"]
    pct = lambda v: f"{100 * v:.1f} %"  # noqa: E731
    assert (
        f"Judge pass rate on the run {pct(corrected['raw'])} · prediction-powered estimate "
        f"<strong>{pct(ppi['estimate'])}</strong> ({pct(ppi['low'])}–{pct(ppi['high'])}) · labels alone "
        f"{pct(ppi['labels_estimate'])} ({pct(ppi['labels_low'])}–{pct(ppi['labels_high'])}) · Rogan–Gladen "
        f"{pct(corrected['corrected'])} ({pct(corrected['low'])}–{pct(corrected['high'])})"
    ) in page
    assert f"all {RUN_SIZE} answers" in page
    assert html.escape(ppi["words"]) in page and "the judge was worth" in ppi["words"]
    # stratified by the judge's verdicts, the prediction-powered estimate is Rogan-Gladen on the campaign's own run
    assert ppi["estimate"] == pytest.approx(corrected["corrected"])


def test_the_report_says_where_the_next_labels_narrow_the_corrected_rate_most(oversampled, db, owner_client):
    campaign = Campaign.objects.get(pk=oversampled)
    report = judge_report(campaign)

    advice = report.next_labels
    assert advice and advice.startswith("label ") and " more answers in " in advice
    assert "plus or minus" in advice
    page = owner_client.get(reverse("labelling:report", args=[campaign.name])).content.decode()
    assert html.escape(advice) in page


@pytest.fixture(scope="module")
def contrary(django_db_setup, django_db_blocker, tmp_path_factory):
    """People say the opposite of the judge on every labelled answer: sensitivity + specificity = 0."""
    with module_data(django_db_blocker):
        yield labelled_campaign(
            tmp_path_factory.mktemp("contrary"), "contrary", size=60, human=lambda i: not judge_of(i)
        )


def test_where_rogan_gladen_is_not_defined_the_reports_say_so_instead_of_printing_dashes(contrary, db, owner_client):
    campaign = Campaign.objects.get(pk=contrary)
    corrected = judge_report(campaign).as_dict()["corrected"]
    assert corrected["corrected"] is None and corrected["sensitivity"] == corrected["specificity"] == 0.0

    page = owner_client.get(reverse("labelling:report", args=[campaign.name])).content.decode()
    published = owner_client.post(reverse("labelling:report-publish", args=[campaign.name, "html"]), follow=True)
    published = b"".join(published.streaming_content) if published.streaming else published.content
    published = published.decode()

    assert "Rogan–Gladen not defined" in page
    assert "the pass rate is not defined." in published
    for text in (page, published):
        assert "(——)" not in text and "(—–—)" not in text
