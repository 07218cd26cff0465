"""Assignment: leases, overlap, idempotent submits, expiry, skip, can't tell and Back."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from labelstudio_lite.labelling.models import Item, Label, Lease
from labelstudio_lite.labelling.selectors import annotator_share, recent_labels
from labelstudio_lite.labelling.services.assignment import (
    LabellingError,
    LeaseExpired,
    NotAssigned,
    change_label,
    next_item,
    release_expired,
    skip_item,
    submit_label,
)
from labelstudio_lite.labelling.services.campaigns import campaign_remove_annotator, campaign_set_annotators
from tests.factories import label_items

from .pages import open_label_page, send_answer


@pytest.fixture
def carl(django_user_model):
    return django_user_model.objects.create_user("carl", password="annot-pass-789", role="annotator")


def expire(lease: Lease) -> None:
    """Move the lease's expiry into the past (instead of sleeping)."""
    Lease.objects.filter(pk=lease.pk).update(expires_at=timezone.now() - timedelta(seconds=1))


def item_counts(item_id: int) -> tuple[int, int]:
    item = Item.objects.get(pk=item_id)
    return item.slots_taken, item.label_count


# ----------------------------------------------------------------------------------------------
# Overlap and no repeats
# ----------------------------------------------------------------------------------------------


def test_no_item_gets_more_labels_than_its_overlap_even_with_more_annotators(
    campaign, annotator, other_annotator, carl
):
    campaign_set_annotators(campaign=campaign, users=[carl])

    for user in (annotator, other_annotator, carl):
        label_items(campaign=campaign, user=user)

    assert Label.objects.filter(item__campaign=campaign).count() == 12 * 2
    for item in Item.objects.filter(campaign=campaign):
        assert item.labels.count() == 2
        assert item.slots_taken == item.label_count == 2
    assert not Lease.objects.filter(status=Lease.Status.ACTIVE).exists()


def test_no_annotator_is_handed_the_same_item_twice(campaign, annotator):
    labels = label_items(campaign=campaign, user=annotator)

    assert len(labels) == 12
    assert len({label.item_id for label in labels}) == 12
    assert next_item(campaign=campaign, user=annotator) is None
    assert Lease.objects.filter(annotator=annotator).count() == 12


def test_the_database_refuses_a_second_label_by_the_same_annotator(solo_campaign, annotator):
    item = Item.objects.filter(campaign=solo_campaign).first()
    Label.objects.create(item=item, annotator=annotator, value="supported")

    with pytest.raises(IntegrityError), transaction.atomic():
        Label.objects.create(item=item, annotator=annotator, value="unsupported")
    assert Label.objects.filter(item=item).count() == 1


def test_the_database_refuses_more_slots_than_the_overlap(campaign):
    item = Item.objects.filter(campaign=campaign).first()

    with pytest.raises(IntegrityError), transaction.atomic():
        Item.objects.filter(pk=item.pk).update(slots_taken=3)
    with pytest.raises(IntegrityError), transaction.atomic():
        Item.objects.filter(pk=item.pk).update(label_count=3)
    assert item_counts(item.pk) == (0, 0)


def test_the_database_refuses_two_active_leases_of_one_annotator_on_one_item(solo_campaign, annotator):
    item = Item.objects.filter(campaign=solo_campaign).first()
    later = timezone.now() + timedelta(minutes=5)
    Lease.objects.create(item=item, annotator=annotator, expires_at=later)

    with pytest.raises(IntegrityError), transaction.atomic():
        Lease.objects.create(item=item, annotator=annotator, expires_at=later)


def test_an_annotator_not_assigned_to_the_campaign_gets_nothing(campaign, owner):
    with pytest.raises(NotAssigned):
        next_item(campaign=campaign, user=owner)
    item = Item.objects.filter(campaign=campaign).first()
    with pytest.raises(NotAssigned):
        submit_label(campaign=campaign, user=owner, item_id=item.pk, value="supported")
    assert not Lease.objects.exists() and not Label.objects.exists()


# ----------------------------------------------------------------------------------------------
# Leases: reloads, double submits, expiry
# ----------------------------------------------------------------------------------------------


def test_a_reload_returns_the_same_held_item_without_taking_a_second_slot(campaign, annotator):
    first = next_item(campaign=campaign, user=annotator)
    again = next_item(campaign=campaign, user=annotator)

    assert again.item.pk == first.item.pk
    assert again.lease.pk == first.lease.pk
    assert Lease.objects.filter(annotator=annotator).count() == 1
    assert item_counts(first.item.pk) == (1, 0)


def test_reloading_the_labelling_page_and_the_api_show_the_same_held_item(campaign, annotator, annotator_client):
    def page_item() -> str:
        body = open_label_page(annotator_client, campaign.name).content.decode()
        return body.split('name="item_id" value="')[1].split('"')[0]

    first, second = page_item(), page_item()
    api_item = annotator_client.post(f"/api/label/{campaign.name}/next/").json()["item_id"]

    assert first == second == str(api_item)
    assert Lease.objects.filter(annotator=annotator, status="active").count() == 1


def test_a_reload_renews_the_lease(campaign, annotator):
    served = next_item(campaign=campaign, user=annotator)
    Lease.objects.filter(pk=served.lease.pk).update(expires_at=timezone.now() + timedelta(seconds=5))

    again = next_item(campaign=campaign, user=annotator)

    assert again.lease.expires_at > timezone.now() + timedelta(seconds=campaign.lease_length - 5)


def test_a_double_submit_keeps_one_label(campaign, annotator):
    served = next_item(campaign=campaign, user=annotator)

    first = submit_label(
        campaign=campaign, user=annotator, item_id=served.item.pk, value="supported", rationale="stated"
    )
    second = submit_label(campaign=campaign, user=annotator, item_id=served.item.pk, value="unsupported")

    assert second.pk == first.pk
    assert list(Label.objects.filter(item_id=served.item.pk).values_list("value", "rationale")) == [
        ("supported", "stated")
    ]
    assert item_counts(served.item.pk) == (1, 1)


def test_a_double_click_on_the_page_keeps_one_label(campaign, annotator, annotator_client):
    served = next_item(campaign=campaign, user=annotator)
    url = reverse("labelling:answer", args=[campaign.name])
    data = {"item_id": served.item.pk, "value": "unsupported", "rationale": ""}

    responses = [annotator_client.post(url, data, HTTP_HX_REQUEST="true") for _ in range(3)]

    assert all(r.status_code == 200 for r in responses)
    assert Label.objects.filter(annotator=annotator).count() == 1
    assert item_counts(served.item.pk) == (1, 1)


def test_a_retried_api_submit_keeps_one_label(campaign, annotator, annotator_client):
    item_id = annotator_client.post(f"/api/label/{campaign.name}/next/").json()["item_id"]
    url = f"/api/label/{campaign.name}/labels/"

    first = annotator_client.post(url, {"item_id": item_id, "value": "supported"}, content_type="application/json")
    retry = annotator_client.post(url, {"item_id": item_id, "value": "supported"}, content_type="application/json")

    assert first.status_code == retry.status_code == 201
    assert first.json()["id"] == retry.json()["id"]
    assert Label.objects.filter(annotator=annotator).count() == 1
    assert Label.objects.get(annotator=annotator).source == "api"


def test_an_answer_after_the_lease_ran_out_is_stored_when_nobody_took_the_item(solo_campaign, annotator):
    served = next_item(campaign=solo_campaign, user=annotator)
    expire(served.lease)

    label = submit_label(campaign=solo_campaign, user=annotator, item_id=served.item.pk, value="unsupported")

    assert Label.objects.get(pk=label.pk).value == "unsupported"
    assert Lease.objects.get(pk=served.lease.pk).status == Lease.Status.SUBMITTED
    assert item_counts(served.item.pk) == (1, 1)


def test_an_answer_after_the_lease_was_released_takes_the_free_slot_again(
    small_run, make_campaign, annotator, other_annotator
):
    campaign = make_campaign(
        run=small_run, name="short", overlap=2, lease_seconds=30, annotators=[annotator, other_annotator]
    )
    served = next_item(campaign=campaign, user=annotator)
    expire(served.lease)
    assert release_expired(campaign=campaign) == 1
    assert item_counts(served.item.pk) == (0, 0)

    submit_label(campaign=campaign, user=annotator, item_id=served.item.pk, value="supported", rationale="late")

    assert item_counts(served.item.pk) == (1, 1)
    assert Label.objects.get(annotator=annotator).rationale == "late"
    assert Lease.objects.get(pk=served.lease.pk).status == Lease.Status.EXPIRED


def test_expired_leases_are_released_when_anyone_asks_and_a_late_answer_is_refused_only_then(
    small_run, make_campaign, annotator, other_annotator
):
    campaign = make_campaign(
        run=small_run, name="short", overlap=1, lease_seconds=30, annotators=[annotator, other_annotator]
    )
    held = next_item(campaign=campaign, user=annotator)
    expire(held.lease)

    taken = next_item(campaign=campaign, user=other_annotator)

    assert taken.item.pk == held.item.pk
    assert Lease.objects.get(pk=held.lease.pk).status == Lease.Status.EXPIRED
    with pytest.raises(LeaseExpired, match="someone else took it") as refused:
        submit_label(campaign=campaign, user=annotator, item_id=held.item.pk, value="supported")
    assert "not saved" in str(refused.value) and "after 30 seconds" in str(refused.value)
    assert not Label.objects.exists()
    assert item_counts(held.item.pk) == (1, 0)
    # can't tell needs no slot: it is recorded even then
    submit_label(campaign=campaign, user=annotator, item_id=held.item.pk, value="cant_tell")
    assert item_counts(held.item.pk) == (1, 0)


def test_release_expired_gives_back_only_expired_leases_once(campaign, annotator, other_annotator):
    a = next_item(campaign=campaign, user=annotator)
    b = next_item(campaign=campaign, user=other_annotator)
    expire(a.lease)

    assert release_expired(campaign=campaign) == 1
    assert release_expired(campaign=campaign) == 0
    assert item_counts(a.item.pk)[0] == (1 if a.item.pk == b.item.pk else 0)
    assert Lease.objects.get(pk=b.lease.pk).status == Lease.Status.ACTIVE


def _taken_by_someone_else(campaign, annotator, other_annotator):
    served = next_item(campaign=campaign, user=annotator)
    expire(served.lease)
    assert next_item(campaign=campaign, user=other_annotator).item.pk == served.item.pk
    return served.item.pk


def test_a_refused_late_answer_on_the_page_says_why_and_the_page_moves_on(
    small_run, make_campaign, annotator, other_annotator, annotator_client
):
    campaign = make_campaign(
        run=small_run, name="short", overlap=1, lease_seconds=60, annotators=[annotator, other_annotator]
    )
    item_id = _taken_by_someone_else(campaign, annotator, other_annotator)

    reply = send_answer(annotator_client, campaign.name, item_id=item_id, value="supported", rationale="kept", key="a")

    assert reply["result"]["outcome"] == "refused"
    assert "someone else took it" in reply["result"]["message"]
    assert item_id not in [item["id"] for item in reply["items"]] and reply["items"]
    assert not Label.objects.filter(annotator=annotator).exists()


def test_a_refused_late_answer_through_the_api_is_a_409_with_the_message(
    small_run, make_campaign, annotator, other_annotator, annotator_client
):
    campaign = make_campaign(
        run=small_run, name="short", overlap=1, lease_seconds=60, annotators=[annotator, other_annotator]
    )
    item_id = _taken_by_someone_else(campaign, annotator, other_annotator)

    response = annotator_client.post(
        f"/api/label/{campaign.name}/labels/",
        {"item_id": item_id, "value": "supported"},
        content_type="application/json",
    )

    assert response.status_code == 409
    assert "ran out" in response.json()["detail"]
    assert not Label.objects.filter(annotator=annotator).exists()


def test_a_late_answer_through_the_api_is_stored_while_the_item_is_free(
    small_run, make_campaign, annotator, annotator_client
):
    campaign = make_campaign(run=small_run, name="short", overlap=1, lease_seconds=60, annotators=[annotator])
    item_id = annotator_client.post(f"/api/label/{campaign.name}/next/").json()["item_id"]
    expire(Lease.objects.get(item_id=item_id))

    response = annotator_client.post(
        f"/api/label/{campaign.name}/labels/",
        {"item_id": item_id, "value": "supported"},
        content_type="application/json",
    )

    assert response.status_code == 201 and Label.objects.get(annotator=annotator).item_id == item_id


def test_submitting_an_item_never_handed_out_is_refused(campaign, annotator):
    item = Item.objects.filter(campaign=campaign).last()
    with pytest.raises(LeaseExpired):
        submit_label(campaign=campaign, user=annotator, item_id=item.pk, value="supported")
    assert not Label.objects.exists() and item_counts(item.pk) == (0, 0)


def test_a_label_value_outside_the_three_answers_is_refused(campaign, annotator):
    served = next_item(campaign=campaign, user=annotator)
    with pytest.raises(LabellingError, match="a label is one of"):
        submit_label(campaign=campaign, user=annotator, item_id=served.item.pk, value="maybe")
    assert not Label.objects.exists()


def test_the_time_spent_on_each_item_is_recorded(campaign, annotator):
    served = next_item(campaign=campaign, user=annotator)
    Lease.objects.filter(pk=served.lease.pk).update(served_at=timezone.now() - timedelta(seconds=42))

    label = submit_label(campaign=campaign, user=annotator, item_id=served.item.pk, value="supported")

    assert 42 <= label.seconds < 45


# ----------------------------------------------------------------------------------------------
# Skip and can't tell
# ----------------------------------------------------------------------------------------------


def test_a_skipped_item_goes_back_to_the_pool_for_others_at_once(small_run, make_campaign, annotator, other_annotator):
    campaign = make_campaign(run=small_run, name="skips", overlap=1, annotators=[annotator, other_annotator])
    served = next_item(campaign=campaign, user=annotator)

    skip_item(campaign=campaign, user=annotator, item_id=served.item.pk)

    assert item_counts(served.item.pk) == (0, 0)
    assert Lease.objects.get(pk=served.lease.pk).status == Lease.Status.SKIPPED
    assert next_item(campaign=campaign, user=other_annotator).item.pk == served.item.pk


def test_a_skipped_item_comes_back_to_the_annotator_only_when_nothing_else_is_left(solo_campaign, annotator):
    skipped = next_item(campaign=solo_campaign, user=annotator).item
    skip_item(campaign=solo_campaign, user=annotator, item_id=skipped.pk)

    handed = []
    for _ in range(11):
        served = next_item(campaign=solo_campaign, user=annotator)
        handed.append(served.item.pk)
        submit_label(campaign=solo_campaign, user=annotator, item_id=served.item.pk, value="supported")

    assert skipped.pk not in handed
    assert next_item(campaign=solo_campaign, user=annotator).item.pk == skipped.pk


def test_skipping_through_the_page_returns_the_next_item(solo_campaign, annotator, annotator_client):
    served = next_item(campaign=solo_campaign, user=annotator)

    response = annotator_client.post(
        reverse("labelling:answer", args=[solo_campaign.name]),
        {"item_id": served.item.pk, "value": "skip"},
        HTTP_HX_REQUEST="true",
    )

    body = response.content.decode()
    assert "Skipped: the item went back to the pool." in body
    assert f'name="item_id" value="{served.item.pk}"' not in body
    assert not Label.objects.exists()


def test_skipping_through_the_api_gives_the_item_back(solo_campaign, annotator, annotator_client):
    item_id = annotator_client.post(f"/api/label/{solo_campaign.name}/next/").json()["item_id"]

    response = annotator_client.post(
        f"/api/label/{solo_campaign.name}/skip/", {"item_id": item_id}, content_type="application/json"
    )

    assert response.status_code == 204
    assert item_counts(item_id) == (0, 0)
    assert annotator_client.post(f"/api/label/{solo_campaign.name}/next/").json()["item_id"] != item_id


def test_cant_tell_is_recorded_but_does_not_count_and_the_slot_goes_to_someone_else(
    small_run, make_campaign, annotator, other_annotator
):
    campaign = make_campaign(run=small_run, name="unsure", overlap=1, annotators=[annotator, other_annotator])
    served = next_item(campaign=campaign, user=annotator)

    label = submit_label(
        campaign=campaign, user=annotator, item_id=served.item.pk, value="cant_tell", rationale="chunk cut off"
    )

    assert Label.objects.get(pk=label.pk).value == "cant_tell" and not label.counts
    assert item_counts(served.item.pk) == (0, 0)
    share = annotator_share(campaign=campaign, user=annotator)
    assert (share.done, share.cant_tell) == (0, 1)
    # someone else gets the slot; the annotator who could not tell never sees the item again
    assert next_item(campaign=campaign, user=other_annotator).item.pk == served.item.pk
    submit_label(campaign=campaign, user=other_annotator, item_id=served.item.pk, value="unsupported")
    assert item_counts(served.item.pk) == (1, 1)
    mine = label_items(campaign=campaign, user=annotator)
    assert served.item.pk not in {m.item_id for m in mine}
    assert Label.objects.filter(item_id=served.item.pk).count() == 2


# ----------------------------------------------------------------------------------------------
# Back: changing a recent label
# ----------------------------------------------------------------------------------------------


def test_back_lists_the_annotators_own_recent_labels_newest_first(campaign, annotator, other_annotator):
    label_items(campaign=campaign, user=other_annotator, rationale="not mine")
    mine = []
    for value in ("supported", "unsupported", "cant_tell"):
        served = next_item(campaign=campaign, user=annotator)
        mine.append(submit_label(campaign=campaign, user=annotator, item_id=served.item.pk, value=value))

    recent = recent_labels(campaign=campaign, user=annotator)

    assert [label.pk for label in recent] == [label.pk for label in reversed(mine)]


def test_changing_a_label_between_supported_and_unsupported_keeps_the_counts(campaign, annotator):
    served = next_item(campaign=campaign, user=annotator)
    label = submit_label(campaign=campaign, user=annotator, item_id=served.item.pk, value="supported")

    changed = change_label(
        campaign=campaign, user=annotator, label_id=label.pk, value="unsupported", rationale="missed a date"
    )

    assert (changed.pk, changed.value, changed.rationale) == (label.pk, "unsupported", "missed a date")
    assert Label.objects.filter(item_id=served.item.pk).count() == 1
    assert item_counts(served.item.pk) == (1, 1)


def test_changing_a_label_to_cant_tell_frees_the_slot_for_someone_else(
    small_run, make_campaign, annotator, other_annotator
):
    campaign = make_campaign(run=small_run, name="back", overlap=1, annotators=[annotator, other_annotator])
    served = next_item(campaign=campaign, user=annotator)
    label = submit_label(campaign=campaign, user=annotator, item_id=served.item.pk, value="supported")

    change_label(campaign=campaign, user=annotator, label_id=label.pk, value="cant_tell")

    assert item_counts(served.item.pk) == (0, 0)
    assert next_item(campaign=campaign, user=other_annotator).item.pk == served.item.pk


def test_changing_cant_tell_into_a_label_takes_a_free_slot(campaign, annotator):
    served = next_item(campaign=campaign, user=annotator)
    label = submit_label(campaign=campaign, user=annotator, item_id=served.item.pk, value="cant_tell")

    change_label(campaign=campaign, user=annotator, label_id=label.pk, value="supported")

    assert item_counts(served.item.pk) == (1, 1)


def test_changing_cant_tell_into_a_label_is_refused_when_the_item_filled_up_meanwhile(
    small_run, make_campaign, annotator, other_annotator
):
    campaign = make_campaign(run=small_run, name="full", overlap=1, annotators=[annotator, other_annotator])
    served = next_item(campaign=campaign, user=annotator)
    unsure = submit_label(campaign=campaign, user=annotator, item_id=served.item.pk, value="cant_tell")
    assert next_item(campaign=campaign, user=other_annotator).item.pk == served.item.pk
    submit_label(campaign=campaign, user=other_annotator, item_id=served.item.pk, value="supported")

    with pytest.raises(LabellingError, match="Enough people"):
        change_label(campaign=campaign, user=annotator, label_id=unsure.pk, value="unsupported")

    assert Label.objects.get(pk=unsure.pk).value == "cant_tell"
    assert item_counts(served.item.pk) == (1, 1)


def test_an_annotator_cannot_change_someone_elses_label(campaign, annotator, other_annotator):
    served = next_item(campaign=campaign, user=other_annotator)
    theirs = submit_label(campaign=campaign, user=other_annotator, item_id=served.item.pk, value="supported")

    with pytest.raises(LabellingError, match="not one of yours"):
        change_label(campaign=campaign, user=annotator, label_id=theirs.pk, value="unsupported")
    assert Label.objects.get(pk=theirs.pk).value == "supported"


def test_changing_a_label_on_the_edit_page_saves_it_and_returns_to_labelling(campaign, annotator, annotator_client):
    served = next_item(campaign=campaign, user=annotator)
    label = submit_label(campaign=campaign, user=annotator, item_id=served.item.pk, value="supported")
    url = reverse("labelling:edit", args=[campaign.name, label.pk])

    assert 'Your label now: <strong id="current-label">Supported</strong>' in annotator_client.get(url).content.decode()
    response = annotator_client.post(url, {"value": "unsupported", "rationale": "second look"})

    assert response.status_code == 302 and response["Location"] == reverse("labelling:label", args=[campaign.name])
    assert (Label.objects.get(pk=label.pk).value, Label.objects.get(pk=label.pk).rationale) == (
        "unsupported",
        "second look",
    )
    assert item_counts(served.item.pk) == (1, 1)


# ----------------------------------------------------------------------------------------------
# Shares and removal
# ----------------------------------------------------------------------------------------------


def test_the_annotators_share_is_their_part_of_the_label_slots(campaign, annotator, other_annotator):
    share = annotator_share(campaign=campaign, user=annotator)
    assert (share.done, share.target) == (0, 12)  # 12 items x overlap 2 / 2 annotators

    label_items(campaign=campaign, user=annotator)
    share = annotator_share(campaign=campaign, user=annotator)
    assert (share.done, share.target, share.remaining_in_campaign) == (12, 12, 12)

    label_items(campaign=campaign, user=other_annotator)
    assert annotator_share(campaign=campaign, user=other_annotator).remaining_in_campaign == 0


def test_removing_an_annotator_releases_their_lease_and_keeps_their_labels(campaign, annotator):
    done = next_item(campaign=campaign, user=annotator)
    submit_label(campaign=campaign, user=annotator, item_id=done.item.pk, value="supported")
    held = next_item(campaign=campaign, user=annotator)

    campaign_remove_annotator(campaign=campaign, user=annotator)

    assert item_counts(held.item.pk) == (0, 0)
    assert Label.objects.filter(annotator=annotator).count() == 1
    with pytest.raises(NotAssigned):
        next_item(campaign=campaign, user=annotator)


def test_a_refused_late_answer_on_a_plain_form_post_is_reported_on_the_page_it_returns(
    small_run, make_campaign, annotator, other_annotator, annotator_client
):
    """Without JavaScript the form posts natively and gets the whole page back, with the refusal on it."""
    campaign = make_campaign(
        run=small_run, name="short", overlap=1, lease_seconds=60, annotators=[annotator, other_annotator]
    )
    item_id = _taken_by_someone_else(campaign, annotator, other_annotator)

    response = annotator_client.post(
        reverse("labelling:answer", args=[campaign.name]), {"item_id": item_id, "value": "supported"}
    )

    assert response.status_code == 200 and "<html" in response.content.decode()
    assert "Your hold on this item ran out" in response.content.decode()
    assert not Label.objects.filter(annotator=annotator).exists()


def test_the_slot_counter_never_overfills_or_underflows_an_item(solo_campaign):
    item_id = Item.objects.filter(campaign=solo_campaign).values_list("pk", flat=True).first()
    item = Item.objects.filter(pk=item_id)  # overlap 1

    assert item.take_slot() is True and item.take_slot() is False
    assert item.give_back_slot() is True and item.give_back_slot() is False
    assert item.take_labelled_slot() is True and item.take_labelled_slot() is False
    assert item_counts(item_id) == (1, 1)
    assert item.give_back_labelled_slot() is True
    assert item_counts(item_id) == (0, 0)
