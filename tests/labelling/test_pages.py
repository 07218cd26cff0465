"""One labelling page per person and campaign (services/pages.py), and how much a page may hold ahead."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from labelstudio_lite.labelling.models import CampaignAnnotator, Label, Lease
from labelstudio_lite.labelling.services.pages import AHEAD, MAX_AHEAD, items_ahead, page_claim, page_leave

from .pages import JSON, key_of

TAB_A, TAB_B = "tab-aaaaaaaaaaaa", "tab-bbbbbbbbbbbb"


def take(client, campaign, page: str, **fields):
    return client.post(reverse("labelling:next", args=[campaign.name]), {"page": page, **fields}, **JSON)


def test_a_page_claims_the_campaign_and_another_is_refused_until_it_takes_over(solo_campaign, annotator):
    assert page_claim(campaign=solo_campaign, user=annotator, page=TAB_A).ok
    assert page_claim(campaign=solo_campaign, user=annotator, page=TAB_A).ok  # renewing its own claim
    refused = page_claim(campaign=solo_campaign, user=annotator, page=TAB_B)
    assert not refused.ok and refused.as_json()["seen_seconds_ago"] < 5
    assert "(active just now)" in refused.as_json()["message"]

    assert page_claim(campaign=solo_campaign, user=annotator, page=TAB_B, take_over=True).ok
    assert not page_claim(campaign=solo_campaign, user=annotator, page=TAB_A).ok
    assert page_leave(campaign=solo_campaign, user=annotator, page=TAB_B)
    assert page_claim(campaign=solo_campaign, user=annotator, page=TAB_A).ok  # the other page closed


def test_a_page_not_heard_from_for_a_lease_length_loses_its_claim(solo_campaign, annotator):
    page_claim(campaign=solo_campaign, user=annotator, page=TAB_A)
    CampaignAnnotator.objects.filter(campaign=solo_campaign).update(
        page_seen_at=timezone.now() - timedelta(seconds=solo_campaign.lease_length + 1)
    )
    assert page_claim(campaign=solo_campaign, user=annotator, page=TAB_B).ok


def test_a_second_page_is_answered_409_and_handed_nothing_but_its_answers_are_taken(
    solo_campaign, annotator, annotator_client
):
    first = take(annotator_client, solo_campaign, TAB_A).json()
    leases = Lease.objects.active().count()
    item = first["items"][0]

    other = take(annotator_client, solo_campaign, TAB_B)
    assert other.status_code == 409 and "open in another tab, window or device" in other.json()["elsewhere"]["message"]
    assert "items" not in other.json() and Lease.objects.active().count() == leases

    # an answer the first page gives after the second took over is stored (never lost), and it is told
    assert take(annotator_client, solo_campaign, TAB_B, take_over="1").status_code == 200
    reply = annotator_client.post(
        reverse("labelling:answer", args=[solo_campaign.name]),
        {"item_id": item["id"], "value": "supported", "key": key_of(item["html"]), "page": TAB_A},
        **JSON,
    ).json()
    assert reply["result"]["outcome"] == "saved" and "elsewhere" in reply and "items" not in reply
    assert Label.objects.filter(annotator=annotator).count() == 1


def test_a_request_naming_no_page_needs_no_claim(solo_campaign, annotator, annotator_client):
    take(annotator_client, solo_campaign, TAB_A)
    plain = annotator_client.post(reverse("labelling:next", args=[solo_campaign.name]), {}, **JSON)
    assert plain.status_code == 200 and plain.json()["items"]  # scripts and pages without JavaScript
    bad = annotator_client.post(reverse("labelling:next", args=[solo_campaign.name]), {"page": "x;drop"}, **JSON)
    assert bad.status_code == 200  # a malformed page id is ignored, not an error


def test_a_page_holds_what_it_asks_for_within_the_bounds(solo_campaign, annotator, annotator_client):
    reply = take(annotator_client, solo_campaign, TAB_A, ahead="8").json()
    assert len(reply["items"]) == 9 == Lease.objects.active().filter(annotator=annotator).count()
    assert items_ahead(campaign=solo_campaign, wanted=None) == AHEAD
    assert items_ahead(campaign=solo_campaign, wanted=1) == AHEAD
    assert items_ahead(campaign=solo_campaign, wanted=999) <= MAX_AHEAD


@pytest.mark.parametrize("people,expected", [(1, 10), (3, 4), (6, AHEAD)])
def test_beyond_the_base_a_page_holds_at_most_its_fair_share_of_what_is_left(
    people, expected, small_run, make_campaign, django_user_model
):
    users = [django_user_model.objects.create_user(f"p{i}", password="pass-word-123") for i in range(people)]
    campaign = make_campaign(run=small_run, name=f"fair{people}", overlap=1, annotators=users)
    # 12 items, overlap 1: 12 open slots, shared by the people labelling the campaign
    assert items_ahead(campaign=campaign, wanted=10) == min(10, max(AHEAD, 12 // people)) == expected


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_pages_claiming_a_campaign_at_the_same_instant_leave_exactly_one_with_it(small_run, make_campaign, annotator):
    """Eight tabs (or devices) of one person open the campaign at once, on PostgreSQL: exactly one labels it."""
    campaign = make_campaign(run=small_run, name="race", overlap=1, annotators=[annotator])
    pages = [f"tab-{i:012d}" for i in range(8)]
    start = threading.Barrier(len(pages))
    won: list[str] = []
    errors: list[BaseException] = []

    def open_page(page: str) -> None:
        try:
            start.wait(timeout=60)
            if page_claim(campaign=campaign, user=annotator, page=page).ok:
                won.append(page)
        except BaseException as error:  # noqa: BLE001 - reported by the test
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=open_page, args=(page,)) for page in pages]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert not errors and len(won) == 1
    assert CampaignAnnotator.objects.get(campaign=campaign).page == won[0]
