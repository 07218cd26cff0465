"""No answer is lost on the server side: idempotency keys, a second tab, the page's held queue, lease
renewal, and a database that is busy with another writer (503 with Retry-After, never 500)."""

from __future__ import annotations

import sqlite3
import threading
from datetime import timedelta

import pytest
from django.db import OperationalError, connection
from django.test import override_settings
from django.urls import path, reverse
from django.utils import timezone

from labelstudio_lite.labelling.models import Item, Label, Lease
from labelstudio_lite.labelling.services.assignment import (
    AlreadyAnswered,
    Holding,
    held_items,
    next_item,
    renew_leases,
    skip_item,
    submit_label,
)
from labelstudio_lite.labelling.services.pages import AHEAD
from labelstudio_lite.middleware import is_database_busy
from labelstudio_lite.urls import urlpatterns as site_urls

from .pages import JSON, key_of, send_answer, take_items


def expire(lease_id: int) -> None:
    Lease.objects.filter(pk=lease_id).update(expires_at=timezone.now() - timedelta(seconds=1))


# ----------------------------------------------------------------------------------------------
# Idempotency keys and second tabs
# ----------------------------------------------------------------------------------------------


def test_an_answer_sent_again_with_its_key_is_stored_once(solo_campaign, annotator):
    served = next_item(campaign=solo_campaign, user=annotator)

    first = submit_label(campaign=solo_campaign, user=annotator, item_id=served.item.pk, value="supported", key="k-1")
    again = submit_label(campaign=solo_campaign, user=annotator, item_id=served.item.pk, value="supported", key="k-1")

    assert again.pk == first.pk
    assert list(Label.objects.values_list("value", "idempotency_key")) == [("supported", "k-1")]
    assert Item.objects.get(pk=served.item.pk).label_count == 1


def test_an_answer_revised_under_the_same_key_changes_what_an_earlier_try_stored(solo_campaign, annotator):
    """The page took an answer back (Z) before hearing whether its first try arrived, and it was given again."""
    served = next_item(campaign=solo_campaign, user=annotator)
    first = submit_label(campaign=solo_campaign, user=annotator, item_id=served.item.pk, value="supported", key="k-1")

    revised = submit_label(
        campaign=solo_campaign, user=annotator, item_id=served.item.pk, value="cant_tell", rationale="cut", key="k-1"
    )

    assert revised.pk == first.pk
    assert list(Label.objects.values_list("value", "rationale")) == [("cant_tell", "cut")]
    assert (Item.objects.get(pk=served.item.pk).slots_taken, Item.objects.get(pk=served.item.pk).label_count) == (0, 0)


def test_a_second_tabs_answer_to_an_answered_item_is_refused_and_the_first_stands(solo_campaign, annotator):
    served = next_item(campaign=solo_campaign, user=annotator)
    submit_label(campaign=solo_campaign, user=annotator, item_id=served.item.pk, value="supported", key="tab-1")

    with pytest.raises(AlreadyAnswered, match="already answered this item") as refused:
        submit_label(campaign=solo_campaign, user=annotator, item_id=served.item.pk, value="unsupported", key="tab-2")

    assert refused.value.label.value == "supported"
    assert list(Label.objects.values_list("value", flat=True)) == ["supported"]


def test_the_page_says_a_second_tab_already_answered_and_hands_out_the_next_item(solo_campaign, annotator_client):
    items = take_items(annotator_client, solo_campaign.name)["items"]
    first = items[0]
    saved = send_answer(
        annotator_client, solo_campaign.name, item_id=first["id"], value="supported", key=key_of(first["html"])
    )
    stale = send_answer(annotator_client, solo_campaign.name, item_id=first["id"], value="unsupported", key="other")

    assert saved["result"]["outcome"] == "saved" and saved["result"]["message"] == "Saved: supported."
    assert stale["result"]["outcome"] == "other_tab" and stale["result"]["value"] == "supported"
    assert "another tab" in stale["result"]["message"]
    assert first["id"] not in [item["id"] for item in stale["items"]]
    assert list(Label.objects.values_list("value", flat=True)) == ["supported"]


def test_a_retried_page_answer_with_its_key_reports_saved_again(solo_campaign, annotator_client):
    first = take_items(annotator_client, solo_campaign.name)["items"][0]
    fields = {"item_id": first["id"], "value": "unsupported", "key": key_of(first["html"]), "seconds": "4.5"}

    replies = [send_answer(annotator_client, solo_campaign.name, **fields) for _ in range(3)]

    assert [reply["result"]["outcome"] for reply in replies] == ["saved"] * 3
    label = Label.objects.get()
    assert (label.value, label.seconds) == ("unsupported", 4.5)  # the time the page measured


def test_the_api_takes_an_idempotency_key_header(solo_campaign, annotator, annotator_client):
    item_id = annotator_client.post(f"/api/label/{solo_campaign.name}/next/").json()["item_id"]
    url = f"/api/label/{solo_campaign.name}/labels/"

    def post(key: str, value: str):
        return annotator_client.post(
            url, {"item_id": item_id, "value": value}, content_type="application/json", HTTP_IDEMPOTENCY_KEY=key
        )

    first, retry, other = post("a1", "supported"), post("a1", "supported"), post("b2", "unsupported")

    assert first.status_code == retry.status_code == 201 and first.json()["id"] == retry.json()["id"]
    assert other.status_code == 409 and "already answered" in other.json()["detail"]
    assert list(Label.objects.values_list("value", "idempotency_key")) == [("supported", "a1")]


# ----------------------------------------------------------------------------------------------
# The page's queue: the item on screen plus AHEAD held, renewed while the annotator is active
# ----------------------------------------------------------------------------------------------


def test_the_page_holds_the_item_on_screen_and_the_next_ones_and_a_reload_gets_the_same(
    solo_campaign, annotator, annotator_client
):
    first = take_items(annotator_client, solo_campaign.name)
    again = take_items(annotator_client, solo_campaign.name, have=[first["items"][0]["id"]])

    ids = [item["id"] for item in first["items"]]
    assert len(ids) == AHEAD + 1 == Lease.objects.filter(annotator=annotator, status="active").count()
    assert [item["id"] for item in again["items"]] == ids
    assert "html" not in again["items"][0] and all("html" in item for item in again["items"][1:])
    assert all(0 < item["expires_in"] <= solo_campaign.lease_length for item in first["items"])
    assert first["share"] == {"done": 0, "target": 12, "cant_tell": 0, "percent": 0}
    # the API still hands out one item: the oldest held
    assert annotator_client.post(f"/api/label/{solo_campaign.name}/next/").json()["item_id"] == ids[0]


def test_a_share_coming_to_its_end_hands_out_fewer_items_then_the_done_panel(
    solo_campaign, annotator, annotator_client
):
    from tests.factories import label_items

    label_items(campaign=solo_campaign, user=annotator, limit=11)
    last = take_items(annotator_client, solo_campaign.name)
    assert len(last["items"]) == 1 and "done_html" not in last

    reply = send_answer(annotator_client, solo_campaign.name, item_id=last["items"][0]["id"], value="supported")

    assert reply["items"] == [] and "You're done." in reply["done_html"]
    assert reply["share"]["percent"] == 100


def test_renewing_extends_the_leases_and_says_where_each_item_stands(
    small_run, make_campaign, annotator, other_annotator
):
    campaign = make_campaign(
        run=small_run, name="renew", overlap=1, lease_seconds=60, annotators=[annotator, other_annotator]
    )
    held, answered, lost, free = held_items(campaign=campaign, user=annotator, count=4)
    submit_label(campaign=campaign, user=annotator, item_id=answered.item.pk, value="supported")
    skip_item(campaign=campaign, user=annotator, item_id=free.item.pk)  # its slot went back
    # adam's hold on "lost" ran out and bea took it (the slot passes to her lease)
    Lease.objects.filter(pk=lost.lease.pk).update(status="expired")
    Lease.objects.create(item=lost.item, annotator=other_annotator, expires_at=timezone.now() + timedelta(minutes=5))
    expire(held.lease.pk)  # past its time, not released yet: still adam's

    statuses = renew_leases(
        campaign=campaign, user=annotator, item_ids=[held.item.pk, answered.item.pk, lost.item.pk, free.item.pk]
    )

    assert statuses == {
        held.item.pk: Holding.HELD,
        answered.item.pk: Holding.ANSWERED,
        lost.item.pk: Holding.LOST,
        free.item.pk: Holding.HELD,  # taken again: nobody else had it
    }
    leases = Lease.objects.filter(annotator=annotator, status="active")
    assert sorted(leases.values_list("item_id", flat=True)) == sorted([held.item.pk, free.item.pk])
    assert all(lease.expires_at > timezone.now() + timedelta(seconds=55) for lease in leases)


def test_an_item_never_handed_out_cannot_be_taken_by_renewing(solo_campaign, annotator):
    item = Item.objects.filter(campaign=solo_campaign).last()
    assert renew_leases(campaign=solo_campaign, user=annotator, item_ids=[item.pk]) == {item.pk: Holding.LOST}
    assert not Lease.objects.exists()


# ----------------------------------------------------------------------------------------------
# A database busy with another writer
# ----------------------------------------------------------------------------------------------


def _hold_the_write_lock(seconds: float, ready: threading.Event) -> None:
    """Another process's writer (an import): BEGIN IMMEDIATE on the same SQLite file, held for ``seconds``."""
    other = sqlite3.connect(connection.settings_dict["NAME"], timeout=5)
    try:
        other.execute("BEGIN IMMEDIATE")
        ready.set()
        threading.Event().wait(seconds)
        other.rollback()
    finally:
        other.close()


@pytest.mark.sqlite
@pytest.mark.django_db(transaction=True)
def test_an_answer_while_another_writer_holds_sqlite_gets_503_with_retry_after_then_is_stored(
    small_run, make_campaign, annotator, client, settings
):
    settings.DB_BUSY_RETRY_SECONDS = 0.3
    campaign = make_campaign(run=small_run, name="busy", overlap=1, annotators=[annotator])
    client.force_login(annotator)
    first = take_items(client, campaign.name)["items"][0]
    fields = {"item_id": first["id"], "value": "supported", "key": key_of(first["html"])}
    ready = threading.Event()
    holder = threading.Thread(target=_hold_the_write_lock, args=(1.5, ready))
    holder.start()
    ready.wait(5)

    busy = client.post(reverse("labelling:answer", args=[campaign.name]), fields, **JSON)
    holder.join()
    retried = client.post(reverse("labelling:answer", args=[campaign.name]), fields, **JSON)

    assert busy.status_code == 503 and busy["Retry-After"] == "2"
    assert busy.json()["busy"] is True and "Nothing was lost" in busy.json()["detail"]
    assert retried.status_code == 200 and retried.json()["result"]["outcome"] == "saved"
    assert Label.objects.filter(annotator=annotator).count() == 1


@pytest.mark.sqlite
@pytest.mark.django_db(transaction=True)
def test_a_short_lock_is_waited_out_on_the_server(small_run, make_campaign, annotator, client, settings):
    settings.DB_BUSY_RETRY_SECONDS = 5
    campaign = make_campaign(run=small_run, name="blip", overlap=1, annotators=[annotator])
    client.force_login(annotator)
    ready = threading.Event()
    holder = threading.Thread(target=_hold_the_write_lock, args=(1.2, ready))
    holder.start()
    ready.wait(5)

    response = client.post(reverse("labelling:next", args=[campaign.name]), **JSON)
    holder.join()

    assert response.status_code == 200 and len(response.json()["items"]) == AHEAD + 1


def _locked_view(request):
    raise OperationalError("database is locked")


urlpatterns = [path("locked/", _locked_view), path("api/locked/", _locked_view), *site_urls]


@override_settings(ROOT_URLCONF=__name__)
def test_any_page_that_finds_the_database_locked_answers_503_never_500(owner_client):
    page = owner_client.get("/locked/")
    api = owner_client.get("/api/locked/")

    assert page.status_code == api.status_code == 503
    assert page["Retry-After"] == api["Retry-After"] == "2"
    assert "Busy for a moment" in page.content.decode() and api.json()["busy"] is True


def test_only_a_locked_database_counts_as_busy():
    assert is_database_busy(OperationalError("database is locked"))
    assert not is_database_busy(OperationalError("no such table: labelling_label"))
    assert not is_database_busy(ValueError("database is locked"))


def test_a_change_of_label_lease_seconds_reaches_open_campaigns_at_the_next_hand_out(
    solo_campaign, annotator, settings
):
    """The setting is read at each hand-out and renewal, not frozen into the campaign when it was made."""
    first = held_items(campaign=solo_campaign, user=annotator, count=1)[0]
    assert solo_campaign.lease_seconds is None
    assert abs((first.lease.expires_at - timezone.now()).total_seconds() - 600) < 5

    settings.LABEL_LEASE_SECONDS = 45
    again = held_items(campaign=solo_campaign, user=annotator, count=2)

    assert [s.item.pk for s in again][:1] == [first.item.pk]
    assert all(abs((s.lease.expires_at - timezone.now()).total_seconds() - 45) < 5 for s in again)
    assert renew_leases(campaign=solo_campaign, user=annotator, item_ids=[first.item.pk]) == {
        first.item.pk: Holding.HELD
    }
    assert Lease.objects.get(pk=first.lease.pk).expires_at < timezone.now() + timedelta(seconds=50)
