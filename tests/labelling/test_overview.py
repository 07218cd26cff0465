"""The eval owner's overview: progress, agreement between annotators, adjudication and final labels."""

from __future__ import annotations

import math
import statistics
from datetime import timedelta

import krippendorff
import numpy as np
import pytest
from django.urls import reverse
from django.utils import timezone
from sklearn.metrics import cohen_kappa_score

from evalcore.services.problems import UserFacingError
from labelstudio_lite.labelling.models import Adjudication, Item, Label
from labelstudio_lite.labelling.selectors import (
    annotator_agreement,
    campaign_progress,
    disagreement_items,
    final_labels,
)
from labelstudio_lite.labelling.services.adjudication import adjudicate
from labelstudio_lite.labelling.services.assignment import next_item, submit_label
from tests.factories import label_items


@pytest.fixture
def carl(django_user_model):
    return django_user_model.objects.create_user("carl", password="annot-pass-789", role="annotator")


def by_qid(mapping: dict[str, str], default: str = "supported"):
    """A labelling rule: the value for each question id, ``default`` for the rest."""
    return lambda item: mapping.get(item.row.question.qid, default)


def finals_by_qid(campaign) -> dict[str, tuple[str | None, str]]:
    finals = final_labels(campaign)
    qids = dict(Item.objects.filter(campaign=campaign).values_list("pk", "row__question__qid"))
    return {qids[item_id]: (f.value, f.status) for item_id, f in finals.items()}


# ----------------------------------------------------------------------------------------------
# Progress
# ----------------------------------------------------------------------------------------------


def test_progress_counts_items_done_per_split_labels_per_annotator_and_median_seconds(
    small_run, make_campaign, annotator, other_annotator
):
    campaign = make_campaign(
        run=small_run, name="prog", overlap=2, heldout_fraction=0.5, annotators=[annotator, other_annotator]
    )
    label_items(campaign=campaign, user=annotator, value=by_qid({"q0002": "cant_tell"}))
    for i, label in enumerate(Label.objects.filter(annotator=annotator).order_by("pk")):
        Label.objects.filter(pk=label.pk).update(seconds=float(i + 1))  # 1 .. 12 s
    for _ in range(3):  # bea labels three items
        served = next_item(campaign=campaign, user=other_annotator)
        label = submit_label(campaign=campaign, user=other_annotator, item_id=served.item.pk, value="supported")
        Label.objects.filter(pk=label.pk).update(seconds=30.0)
    bea_items = set(Label.objects.filter(annotator=other_annotator).values_list("item_id", flat=True))

    progress = campaign_progress(campaign).as_dict()

    splits = {s["split"]: s for s in progress["splits"]}
    n_heldout = sum(s["heldout"] for s in campaign.strata)
    assert (splits["heldout"]["items"], splits["tuning"]["items"]) == (n_heldout, 12 - n_heldout)
    # complete: both people labelled it (adam could not tell on q0002, so it is never complete here)
    complete = Item.objects.filter(campaign=campaign, pk__in=bea_items).exclude(row__question__qid="q0002")
    for split in ("heldout", "tuning"):
        done = complete.filter(split=split).count()
        assert splits[split]["complete"] == done
        assert splits[split]["share"] == pytest.approx(done / splits[split]["items"])
    assert progress["items"] == 12 and progress["complete"] == complete.count()
    people = {p["name"]: p for p in progress["people"]}
    assert (people["adam"]["labels"], people["adam"]["cant_tell"]) == (11, 1)
    assert people["adam"]["median_seconds"] == statistics.median(range(1, 13))
    assert (people["bea"]["labels"], people["bea"]["median_seconds"]) == (3, 30.0)
    assert progress["labels"] == 14 and progress["cant_tell"] == 1
    assert progress["median_seconds"] == statistics.median([*range(1, 13), 30, 30, 30])


def test_throughput_counts_the_labels_of_the_last_hour(solo_campaign, annotator):
    labels = label_items(campaign=solo_campaign, user=annotator)
    old = [label.pk for label in labels[:5]]
    Label.objects.filter(pk__in=old).update(created_at=timezone.now() - timedelta(hours=2))

    assert campaign_progress(solo_campaign).last_hour == 7


def test_an_assigned_annotator_with_no_labels_is_listed_with_zero(campaign):
    people = {p["name"]: p for p in campaign_progress(campaign).as_dict()["people"]}
    assert people["adam"] == {"name": "adam", "labels": 0, "cant_tell": 0, "median_seconds": None}
    assert people["bea"]["labels"] == 0


def test_the_overview_page_shows_progress_agreement_and_final_labels(
    campaign, annotator, other_annotator, owner_client
):
    label_items(campaign=campaign, user=annotator)
    label_items(campaign=campaign, user=other_annotator, value=by_qid({"q0001": "unsupported", "q0005": "unsupported"}))

    body = owner_client.get(reverse("labelling:campaign", args=[campaign.name])).content.decode()
    api = owner_client.get(f"/api/campaigns/{campaign.name}/").json()

    assert "12 of 12 items fully labelled" in body and "24 labels" in body
    assert "2 items with conflicting labels" in body
    alpha = annotator_agreement(campaign).alpha
    assert f"{alpha:.3f}" in body
    assert "adam · bea" in body
    assert api["progress"]["complete"] == 12
    assert api["agreement"]["alpha"] == pytest.approx(alpha)
    assert api["final_labels"] == {"agreed": 10, "conflict": 2}


# ----------------------------------------------------------------------------------------------
# Agreement
# ----------------------------------------------------------------------------------------------


def test_pairwise_kappa_matches_scikit_learn_on_the_items_each_pair_shares(
    small_run, make_campaign, annotator, other_annotator, carl
):
    campaign = make_campaign(run=small_run, name="agree", overlap=2, annotators=[annotator, other_annotator, carl])
    label_items(
        campaign=campaign,
        user=annotator,
        value=by_qid({"q0001": "unsupported", "q0003": "unsupported", "q0007": "unsupported"}),
    )
    label_items(campaign=campaign, user=other_annotator, value=by_qid({"q0003": "unsupported", "q0004": "unsupported"}))
    # carl labels nothing: each item got adam and bea

    agreement = annotator_agreement(campaign)

    labels = {
        (lbl.annotator.username, lbl.item_id): lbl.value
        for lbl in Label.objects.filter(item__campaign=campaign).select_related("annotator")
    }
    items = sorted({item for _, item in labels})
    adam = [labels[("adam", i)] for i in items]
    bea = [labels[("bea", i)] for i in items]
    (pair,) = agreement.pairs
    assert (pair["a"], pair["b"], pair["n"]) == ("adam", "bea", 12)
    assert pair["kappa"] == pytest.approx(cohen_kappa_score(adam, bea))
    assert pair["agreement"] == pytest.approx(9 / 12)
    assert agreement.overlapping_items == 12 and agreement.disagreeing_items == 3


def test_krippendorffs_alpha_matches_the_krippendorff_package_with_missing_labels(
    small_run, make_campaign, annotator, other_annotator, carl
):
    campaign = make_campaign(run=small_run, name="alpha", overlap=3, annotators=[annotator, other_annotator, carl])
    label_items(
        campaign=campaign,
        user=annotator,
        value=by_qid({"q0001": "unsupported", "q0003": "unsupported", "q0008": "cant_tell"}),
    )
    label_items(
        campaign=campaign,
        user=other_annotator,
        value=by_qid({"q0003": "unsupported", "q0004": "unsupported", "q0010": "unsupported"}),
    )
    label_items(
        campaign=campaign,
        user=carl,
        value=by_qid({"q0003": "unsupported", "q0004": "unsupported", "q0006": "cant_tell"}),
    )

    agreement = annotator_agreement(campaign)

    people = ["adam", "bea", "carl"]
    items = list(Item.objects.filter(campaign=campaign).order_by("pk").values_list("pk", flat=True))
    matrix = np.full((3, len(items)), np.nan)
    for label in Label.objects.filter(item__campaign=campaign).exclude(value="cant_tell").select_related("annotator"):
        matrix[people.index(label.annotator.username), items.index(label.item_id)] = (
            1.0 if label.value == "supported" else 0.0
        )
    assert np.isnan(matrix).sum() == 2  # the two can't-tell answers are missing, not labels
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    assert agreement.alpha == pytest.approx(expected, abs=1e-9)
    assert len(agreement.pairs) == 3
    for pair in agreement.pairs:
        a, b = people.index(pair["a"]), people.index(pair["b"])
        both = ~np.isnan(matrix[a]) & ~np.isnan(matrix[b])
        assert pair["n"] == both.sum()
        assert pair["kappa"] == pytest.approx(cohen_kappa_score(matrix[a][both], matrix[b][both]))


def test_alpha_is_undefined_without_overlapping_items(solo_campaign, annotator):
    label_items(campaign=solo_campaign, user=annotator)
    agreement = annotator_agreement(solo_campaign)
    assert math.isnan(agreement.alpha) and agreement.pairs == () and agreement.overlapping_items == 0


# ----------------------------------------------------------------------------------------------
# Disagreements, adjudication, final labels
# ----------------------------------------------------------------------------------------------


def test_final_labels_are_the_majority_where_there_is_one(small_run, make_campaign, annotator, other_annotator, carl):
    campaign = make_campaign(run=small_run, name="three", overlap=3, annotators=[annotator, other_annotator, carl])
    label_items(campaign=campaign, user=annotator, value=by_qid({"q0001": "unsupported", "q0002": "unsupported"}))
    label_items(campaign=campaign, user=other_annotator, value=by_qid({"q0001": "unsupported"}))
    label_items(campaign=campaign, user=carl)

    finals = finals_by_qid(campaign)

    assert finals["q0001"] == ("unsupported", "majority")
    assert finals["q0002"] == ("supported", "majority")
    assert finals["q0000"] == ("supported", "agreed")


def test_conflicts_are_listed_as_conflict_and_short_items_as_in_progress(campaign, annotator, other_annotator):
    label_items(campaign=campaign, user=annotator, value=by_qid({"q0004": "unsupported", "q0005": "cant_tell"}))
    label_items(campaign=campaign, user=other_annotator, value=by_qid({"q0006": "unsupported"}))
    untouched = Item.objects.get(campaign=campaign, row__question__qid="q0007")
    Label.objects.filter(item=untouched).delete()
    Item.objects.filter(pk=untouched.pk).update(slots_taken=0, label_count=0)

    finals = finals_by_qid(campaign)

    assert finals["q0004"] == (None, "conflict")
    assert finals["q0006"] == (None, "conflict")
    assert finals["q0005"] == (None, "in_progress")  # adam could not tell: one label of two
    assert finals["q0007"] == (None, "unlabelled")
    assert finals["q0000"] == ("supported", "agreed")
    assert len(finals) == 12, "no item is silently dropped"


def test_the_disagreement_list_holds_the_items_people_disagree_on(campaign, annotator, other_annotator, owner_client):
    label_items(campaign=campaign, user=annotator, value=by_qid({"q0004": "unsupported"}))
    label_items(campaign=campaign, user=other_annotator, value=by_qid({"q0006": "unsupported"}))

    listed = sorted(item.row.question.qid for item in disagreement_items(campaign))
    page = owner_client.get(reverse("labelling:adjudicate", args=[campaign.name])).content.decode()

    assert listed == ["q0004", "q0006"]
    assert "q0004" in page and "q0006" in page and "q0005" not in page
    assert page.count("needs a decision") == 2
    assert "2 items still need a decision" in page


def test_adjudication_sets_the_final_label_of_a_conflict(campaign, annotator, other_annotator, owner, owner_client):
    label_items(campaign=campaign, user=annotator, value=by_qid({"q0004": "unsupported"}))
    label_items(campaign=campaign, user=other_annotator)
    item = Item.objects.get(campaign=campaign, row__question__qid="q0004")

    response = owner_client.post(
        reverse("labelling:adjudicate", args=[campaign.name]),
        {"item_id": item.pk, "value": "unsupported", "note": "chunk 2 lacks the date"},
    )

    assert response.status_code == 302
    adjudication = Adjudication.objects.get(item=item)
    assert (adjudication.value, adjudication.note, adjudication.decided_by) == (
        "unsupported",
        "chunk 2 lacks the date",
        owner,
    )
    assert finals_by_qid(campaign)["q0004"] == ("unsupported", "adjudicated")
    page = owner_client.get(reverse("labelling:adjudicate", args=[campaign.name])).content.decode()
    assert "needs a decision" not in page and "decided by an eval owner: unsupported" in page
    assert "0 items still need a decision" in page


def test_adjudicating_again_changes_the_final_label_and_overrides_a_majority(
    small_run, make_campaign, annotator, other_annotator, carl, owner
):
    campaign = make_campaign(run=small_run, name="three", overlap=3, annotators=[annotator, other_annotator, carl])
    label_items(campaign=campaign, user=annotator, value=by_qid({"q0001": "unsupported"}))
    label_items(campaign=campaign, user=other_annotator)
    label_items(campaign=campaign, user=carl)
    item = Item.objects.get(campaign=campaign, row__question__qid="q0001")

    adjudicate(campaign=campaign, item_id=item.pk, value="unsupported", user=owner)
    adjudicate(campaign=campaign, item_id=item.pk, value="supported", note="second look", user=owner)

    assert Adjudication.objects.filter(item=item).count() == 1
    assert finals_by_qid(campaign)["q0001"] == ("supported", "adjudicated")


@pytest.mark.parametrize(
    ("value", "message"), [("cant_tell", "supported or unsupported"), ("maybe", "supported or unsupported")]
)
def test_a_final_label_is_supported_or_unsupported(campaign, owner, value, message):
    item = Item.objects.filter(campaign=campaign).first()
    with pytest.raises(UserFacingError, match=message):
        adjudicate(campaign=campaign, item_id=item.pk, value=value, user=owner)
    assert not Adjudication.objects.exists()


def test_an_item_of_another_campaign_cannot_be_adjudicated_here(campaign, solo_campaign, owner):
    foreign = Item.objects.filter(campaign=solo_campaign).first()
    with pytest.raises(UserFacingError, match="not in this campaign"):
        adjudicate(campaign=campaign, item_id=foreign.pk, value="supported", user=owner)
    assert not Adjudication.objects.exists()
