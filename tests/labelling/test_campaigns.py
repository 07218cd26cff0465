"""Campaign creation: a seeded, stratified, reproducible sample with splits fixed at creation."""

from __future__ import annotations

import math
from collections import Counter
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from labelstudio_lite.labelling.models import Campaign, CampaignAnnotator, Item
from labelstudio_lite.labelling.services.campaigns import (
    CampaignError,
    campaign_create,
    campaign_set_thresholds,
    plan_campaign,
    population,
)
from tests.factories import make_marked_run

from .pages import open_label_page


def sample_of(campaign: Campaign) -> list[tuple[str, int | None, str, int]]:
    return sorted(
        Item.objects.filter(campaign=campaign).values_list("row__question__qid", "claim_index", "split", "position")
    )


def strata_of(campaign: Campaign) -> dict[str, dict]:
    return {s["stratum"]: s for s in campaign.strata}


# ----------------------------------------------------------------------------------------------
# Stratification
# ----------------------------------------------------------------------------------------------


def test_a_claim_sample_gives_the_judges_rare_unsupported_verdict_at_least_a_quarter(demo_run, make_campaign):
    candidates = population(demo_run, "claim")
    rare_share = sum(not c.judge_supported for c in candidates) / len(candidates)
    assert rare_share < 0.15, (
        "the demo's claims must make 'unsupported' the rare verdict for this test to mean anything"
    )

    campaign = make_campaign(run=demo_run, name="claims-200", unit="claim", size=200, heldout_fraction=0.3)

    items = Item.objects.filter(campaign=campaign)
    assert items.count() == 200
    unsupported = items.filter(judge_supported=False).count()
    assert unsupported >= 50, f"only {unsupported} of 200 sampled claims are ones the judge marked unsupported"
    # a proportional sample would have given about rare_share * 200 of them
    assert unsupported > 2 * rare_share * 200


def test_the_rare_verdict_keeps_its_natural_share_when_it_is_already_above_a_quarter(demo_run):
    candidates = population(demo_run, "answer")
    share = sum(not c.judge_supported for c in candidates) / len(candidates)
    assert share > 0.25

    plan = plan_campaign(run=demo_run, unit="answer", size=200, seed=7)

    sampled_unsupported = sum(s["sampled"] for s in plan.strata if not s["judge_supported"])
    assert abs(sampled_unsupported - share * 200) <= 1


def test_each_verdict_is_spread_over_the_slices_in_proportion_to_their_size(demo_run):
    plan = plan_campaign(run=demo_run, unit="claim", size=200, seed=7)

    slices = {s["slice"] for s in plan.strata}
    assert slices == {"account", "billing", "policy", "technical"}
    for verdict in (True, False):
        strata = [s for s in plan.strata if s["judge_supported"] is verdict]
        available = sum(s["available"] for s in strata)
        sampled = sum(s["sampled"] for s in strata)
        for s in strata:
            assert s["sampled"] >= 1, f"stratum {s['stratum']} is starved"
            assert abs(s["sampled"] - sampled * s["available"] / available) < 1, s


def test_the_items_created_match_the_strata_the_owner_was_shown(demo_run, make_campaign):
    plan = plan_campaign(run=demo_run, unit="claim", size=200, seed=11, heldout_fraction=0.3)
    campaign = make_campaign(run=demo_run, name="claims", unit="claim", size=200, seed=11, heldout_fraction=0.3)

    assert campaign.strata == plan.strata
    by_stratum = Counter(Item.objects.filter(campaign=campaign).values_list("stratum", flat=True))
    assert by_stratum == {s["stratum"]: s["sampled"] for s in plan.strata if s["sampled"]}
    for item in Item.objects.filter(campaign=campaign).select_related("row"):
        claim = item.row.claims[item.claim_index]
        assert item.judge_supported is claim["supported"]
        assert item.stratum.endswith("judge supported" if claim["supported"] else "judge unsupported")
        stratum = strata_of(campaign)[item.stratum]
        assert item.sampling_weight == pytest.approx(stratum["available"] / stratum["sampled"])


# ----------------------------------------------------------------------------------------------
# Seeds and splits
# ----------------------------------------------------------------------------------------------


def test_the_same_seed_gives_the_same_items_and_the_same_splits(demo_run, make_campaign):
    first = make_campaign(run=demo_run, name="first", unit="claim", size=150, seed=42, heldout_fraction=0.3)
    second = make_campaign(run=demo_run, name="second", unit="claim", size=150, seed=42, heldout_fraction=0.3)

    assert sample_of(first) == sample_of(second)
    assert len(sample_of(first)) == 150


def test_a_different_seed_gives_a_different_sample(demo_run, make_campaign):
    first = make_campaign(run=demo_run, name="first", unit="claim", size=150, seed=42)
    other = make_campaign(run=demo_run, name="other", unit="claim", size=150, seed=43)

    items_first = {(qid, claim) for qid, claim, _, _ in sample_of(first)}
    items_other = {(qid, claim) for qid, claim, _, _ in sample_of(other)}
    assert items_first != items_other
    # ... but stratified the same way
    assert [s["sampled"] for s in first.strata] == [s["sampled"] for s in other.strata]


def test_an_items_split_cannot_change_after_creation(solo_campaign):
    item = Item.objects.filter(campaign=solo_campaign).first()
    original = item.split
    item.split = Item.Split.HELDOUT if original == Item.Split.TUNING else Item.Split.TUNING

    with pytest.raises(ValueError, match="fixed"):
        item.save()
    with pytest.raises(ValueError, match="fixed"):
        item.save(update_fields=["split"])

    assert Item.objects.get(pk=item.pk).split == original


def test_the_judge_verdict_and_stratum_of_an_item_cannot_change_either(solo_campaign):
    item = Item.objects.filter(campaign=solo_campaign).first()
    item.judge_supported = not item.judge_supported
    with pytest.raises(ValueError):
        item.save(update_fields=["judge_supported"])
    item.stratum = "moved"
    with pytest.raises(ValueError):
        item.save()
    fresh = Item.objects.get(pk=item.pk)
    assert fresh.judge_supported is not item.judge_supported and fresh.stratum != "moved"


@pytest.mark.parametrize("fraction", [0.3, 0.5, 0.25])
def test_the_heldout_fraction_is_respected_in_every_stratum(demo_run, make_campaign, fraction):
    campaign = make_campaign(run=demo_run, name="split", unit="claim", size=200, heldout_fraction=fraction)

    splits = Counter(Item.objects.filter(campaign=campaign).values_list("stratum", "split"))
    for s in campaign.strata:
        assert s["heldout"] == round(s["sampled"] * fraction)
        assert abs(s["heldout"] - s["sampled"] * fraction) <= 0.5
        assert splits[(s["stratum"], "heldout")] == s["heldout"]
        assert splits[(s["stratum"], "tuning")] == s["tuning"] == s["sampled"] - s["heldout"]
    total_heldout = sum(s["heldout"] for s in campaign.strata)
    assert abs(total_heldout - 200 * fraction) <= len(campaign.strata) / 2


def test_a_heldout_fraction_of_zero_or_one_puts_every_item_in_one_split(small_run, make_campaign):
    none_held = make_campaign(run=small_run, name="none-held", heldout_fraction=0.0)
    all_held = make_campaign(run=small_run, name="all-held", heldout_fraction=1.0)

    assert set(Item.objects.filter(campaign=none_held).values_list("split", flat=True)) == {"tuning"}
    assert set(Item.objects.filter(campaign=all_held).values_list("split", flat=True)) == {"heldout"}


@pytest.mark.parametrize("unit", ["answer", "claim"])
def test_a_size_at_or_above_the_population_takes_every_item(demo_run, make_campaign, unit):
    available = len(population(demo_run, unit))

    exact = make_campaign(run=demo_run, name=f"exact-{unit}", unit=unit, size=available)
    larger = make_campaign(run=demo_run, name=f"larger-{unit}", unit=unit, size=available * 10)

    for campaign in (exact, larger):
        items = Item.objects.filter(campaign=campaign)
        assert items.count() == available
        assert set(items.values_list("sampling_weight", flat=True)) == {1.0}
        assert sum(s["sampled"] for s in campaign.strata) == sum(s["available"] for s in campaign.strata) == available


def test_positions_hand_items_out_in_a_seeded_shuffled_order(solo_campaign):
    positions = list(Item.objects.filter(campaign=solo_campaign).order_by("pk").values_list("position", flat=True))
    assert sorted(positions) == list(range(12))


# ----------------------------------------------------------------------------------------------
# Warnings, units, the judge's question
# ----------------------------------------------------------------------------------------------


def test_a_sample_below_200_items_comes_with_a_clear_warning(demo_run):
    small = plan_campaign(run=demo_run, unit="claim", size=120)
    enough = plan_campaign(run=demo_run, unit="claim", size=200)

    assert any("below the 200" in w and "120 items" in w for w in small.warnings)
    assert not any("below the 200" in w for w in enough.warnings)


def test_a_run_with_fewer_than_200_items_warns_that_it_has_no_more(small_run):
    plan = plan_campaign(run=small_run, unit="answer", size=500)

    assert plan.total_sampled == 12
    assert any("below the 200" in w and "the run has no more" in w for w in plan.warnings)


def test_the_owner_sees_the_strata_and_the_warning_before_creating(owner_client, small_run):
    response = owner_client.post(
        reverse("labelling:preview"),
        {
            "name": "x",
            "run": small_run.pk,
            "unit": "answer",
            "size": 500,
            "heldout_fraction": 0.5,
            "overlap": 1,
            "seed": 7,
        },
        HTTP_HX_REQUEST="true",
    )

    body = response.content.decode()
    assert response.status_code == 200
    assert "policy · judge supported" in body and "billing · judge unsupported" in body
    assert "below the 200" in body
    assert not Campaign.objects.exists()


def test_a_claim_campaign_labels_single_claims_and_an_answer_campaign_whole_answers(tmp_path, db, make_campaign):
    run = make_marked_run(folder=tmp_path, n=10, claims=3, declined=lambda i: i == 0)

    answers = make_campaign(run=run, name="answers", unit="answer")
    claims = make_campaign(run=run, name="claims", unit="claim")

    answer_items = Item.objects.filter(campaign=answers)
    assert answer_items.count() == 9  # the declined answer has nothing to label
    assert set(answer_items.values_list("claim_index", flat=True)) == {None}
    claim_items = Item.objects.filter(campaign=claims)
    assert claim_items.count() == 27
    assert sorted(claim_items.values_list("row__question__qid", "claim_index")) == [
        (f"q{i:04d}", c) for i in range(1, 10) for c in range(3)
    ]
    # the answer's verdict is 'supported' only when every claim is
    for item in answer_items.select_related("row"):
        assert item.judge_supported is all(c["supported"] for c in item.row.claims)


def test_the_default_judge_question_depends_on_the_unit(small_run, make_campaign):
    assert (
        make_campaign(run=small_run, name="a", unit="answer").judge_question
        == "Is the answer supported by the context?"
    )
    assert (
        make_campaign(run=small_run, name="c", unit="claim").judge_question == "Is this claim supported by the context?"
    )


def test_annotators_are_shown_the_judges_question_verbatim_with_the_owners_guidance(
    small_run, make_campaign, annotator, client
):
    question = 'Does the context state this claim? Answer "yes" only if every number & date is there.'
    campaign = make_campaign(
        run=small_run,
        name="verbatim",
        unit="claim",
        judge_question=question,
        guidance="Ignore formatting differences.",
        annotators=[annotator],
    )
    client.force_login(annotator)

    page = open_label_page(client, campaign.name).content.decode()
    api = client.get("/api/label/campaigns/").json()
    served = client.post(f"/api/label/{campaign.name}/next/").json()

    from django.utils.html import escape

    assert escape(question) in page
    assert "Ignore formatting differences." in page
    assert api[0]["question"] == question and api[0]["guidance"] == "Ignore formatting differences."
    assert served["question_asked"] == question


# ----------------------------------------------------------------------------------------------
# Refusals, the command and the form
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"unit": "sentence"}, "unit must be"),
        ({"size": 0}, "size must be a positive"),
        ({"heldout_fraction": 1.5}, "held-out fraction"),
        ({"overlap": 0}, "overlap is how many"),
        ({"name": "has spaces"}, "may use only"),
    ],
)
def test_bad_campaign_settings_are_refused_with_a_message_and_nothing_is_created(small_run, options, message):
    settings = {"run": small_run, "name": "ok", "unit": "answer", "size": 5, **options}
    with pytest.raises(CampaignError, match=message):
        campaign_create(**settings)
    assert not Campaign.objects.exists() and not Item.objects.exists()


def test_a_campaign_name_is_used_once(small_run, make_campaign):
    make_campaign(run=small_run, name="taken")
    with pytest.raises(CampaignError, match="already exists"):
        make_campaign(run=small_run, name="taken")
    assert Campaign.objects.count() == 1


def test_a_run_without_judge_verdicts_cannot_be_sampled(tmp_path, db):
    run = make_marked_run(folder=tmp_path, n=3, declined=lambda i: True)
    with pytest.raises(CampaignError, match="no answers with judge verdicts"):
        plan_campaign(run=run, unit="answer", size=10)


def test_the_create_campaign_command_prints_the_strata_and_creates_the_campaign(demo_run, annotator, other_annotator):
    out = StringIO()
    call_command(
        "create_campaign",
        "--run",
        "chunks-512",
        "--name",
        "faith-q3",
        "--unit",
        "claim",
        "--size",
        "200",
        "--heldout",
        "0.4",
        "--overlap",
        "2",
        "--seed",
        "5",
        "--annotator",
        "adam",
        "--annotator",
        "bea",
        stdout=out,
    )

    text = out.getvalue()
    campaign = Campaign.objects.get(name="faith-q3")
    assert (campaign.unit, campaign.size, campaign.overlap, campaign.seed, campaign.heldout_fraction) == (
        "claim",
        200,
        2,
        5,
        0.4,
    )
    assert set(CampaignAnnotator.objects.filter(campaign=campaign).values_list("user__username", flat=True)) == {
        "adam",
        "bea",
    }
    assert "Created campaign faith-q3: 200 items from chunks-512" in text
    assert "available" in text and "sampled" in text and "held out" in text
    for s in campaign.strata:
        line = next(line for line in text.splitlines() if line.startswith(s["stratum"]))
        assert line.split()[-4:] == [str(s["available"]), str(s["sampled"]), str(s["tuning"]), str(s["heldout"])]
    assert Item.objects.filter(campaign=campaign).count() == 200


def test_the_create_campaign_command_takes_every_item_when_the_size_exceeds_the_run(small_run):
    out = StringIO()
    call_command("create_campaign", "--run", "base", "--name", "all", "--unit", "answer", "--size", "1000", stdout=out)

    assert Item.objects.filter(campaign__name="all").count() == 12
    assert "12 items" in out.getvalue()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--run", "nope", "--name", "x", "--unit", "answer", "--size", "5"], "no run named 'nope'"),
        (["--run", "base", "--name", "x", "--unit", "answer", "--size", "5", "--annotator", "ghost"], "ghost"),
        (["--run", "base", "--name", "x", "--unit", "answer", "--size", "5", "--heldout", "2"], "held-out fraction"),
    ],
)
def test_the_create_campaign_command_explains_what_is_wrong(small_run, argv, message):
    with pytest.raises(CommandError, match=message):
        call_command("create_campaign", *argv, stdout=StringIO())
    assert not Campaign.objects.exists()


def test_an_eval_owner_creates_a_campaign_from_the_form(owner_client, small_run, annotator):
    response = owner_client.post(
        reverse("labelling:campaigns"),
        {
            "name": "from-form",
            "run": small_run.pk,
            "unit": "claim",
            "size": 10,
            "heldout_fraction": 0.3,
            "overlap": 2,
            "seed": 3,
            "annotators": [annotator.pk],
            "judge_question": "",
            "guidance": "Be strict.",
        },
    )

    assert response.status_code == 302
    assert response["Location"] == reverse("labelling:campaign", args=["from-form"])
    campaign = Campaign.objects.get(name="from-form")
    assert campaign.created_by.username == "olivia"
    assert campaign.items.count() == 10 and campaign.overlap == 2 and campaign.guidance == "Be strict."
    assert list(campaign.annotators.all()) == [annotator]
    assert math.isclose(campaign.heldout_fraction, 0.3)


def test_the_fit_thresholds_are_set_by_the_service_which_refuses_numbers_out_of_range(campaign):
    for kappa, miss, message in (
        (1.5, 0.1, "kappa threshold"),
        (0.5, -0.1, "miss-rate threshold"),
        (float("nan"), 0.1, "kappa threshold"),
    ):
        with pytest.raises(CampaignError, match=message):
            campaign_set_thresholds(campaign=campaign, fit_kappa=kappa, fit_miss_rate=miss)

    campaign_set_thresholds(campaign=campaign, fit_kappa=0.6, fit_miss_rate=0.2)

    campaign.refresh_from_db()
    assert (campaign.fit_kappa, campaign.fit_miss_rate) == (0.6, 0.2)


def test_annotators_are_removed_by_username_and_an_unknown_name_is_refused(campaign, annotator, owner_client):
    url = reverse("labelling:annotators", args=[campaign.name])

    unknown = owner_client.post(url, {"remove": "nobody"}, follow=True).content.decode()
    removed = owner_client.post(url, {"remove": annotator.username}, follow=True).content.decode()

    assert "no such user(s): nobody" in unknown
    assert "Removed adam; their labels stay." in removed
    assert not CampaignAnnotator.objects.filter(campaign=campaign, user=annotator).exists()
