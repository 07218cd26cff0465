"""Pinned SQL query counts on the hot requests: claiming the next item, answering (page and API),
the labelling page, and the judge report (page and API).

A count that grows means a new query per request (often an N+1 in disguise): find it before
raising the number here. Counts include the session and user lookups of the logged-in client.
"""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from labelstudio_lite.labelling.models import Item
from labelstudio_lite.labelling.services.assignment import next_item, submit_label
from labelstudio_lite.labelling.services.exports import labels_export
from tests.factories import label_items

from .pages import JSON, open_label_page, take_items

# Measured after the labelling restructure; the numbers before it are in the comments (none grew).
NEXT_ITEM_API = 11  # +1: the guideline version shown; before the restructure: 10
ANSWER_PAGE_JSON = 24  # +1: the guideline version the label records; as label.js sends it: save, renew the page's two held items, refill its queue to three
ANSWER_PAGE_PLAIN = (
    21  # +1: the guideline version the label records; before the restructure: 22 (a submit no longer opens a savepoint)
)
ANSWER_API = 12  # +1: the guideline version the label records; before the restructure: 13 (the same)
LABEL_PAGE = 7  # the page itself claims nothing; it reads the latest label (what Z opens first)
NEXT_ITEM_PAGE = 20  # +1: the guideline shown with the items; the three items the loaded page asks for with a POST (three claims; one claim was 13)
JUDGE_REPORT_PAGE = 20  # +2: the certificate's staleness (the guideline shown now, the newest campaign of the judge on the metric); +2: the labels' guideline versions and every annotator's labels (ceiling, alt test), +1 the latest bias battery; 13, and two for the try-a-tuned-prompt form (the runnable configs, the tuning exports)
JUDGE_REPORT_API = 15  # +2: the certificate's staleness; +2: the labels' guideline versions and every annotator's labels (ceiling, alt test); before the restructure: 12  (the same)


@pytest.fixture
def reported(small_run, make_campaign, annotator, owner):
    """A labelled answer campaign with a held-out part and one label export (so leakage has work to do)."""
    campaign = make_campaign(run=small_run, name="counted", heldout_fraction=0.3, annotators=[annotator])
    label_items(
        campaign=campaign, user=annotator, value=lambda item: "supported" if item.position % 3 else "unsupported"
    )
    labels_export(campaign=campaign, fmt="csv", user=owner)
    return campaign


def test_claiming_the_next_item_through_the_api(solo_campaign, annotator_client, django_assert_num_queries):
    url = f"/api/label/{solo_campaign.name}/next/"
    with django_assert_num_queries(NEXT_ITEM_API):
        response = annotator_client.post(url)
    assert response.status_code == 200


def test_answering_on_the_page_returns_the_pages_queue_refilled(
    solo_campaign, annotator_client, django_assert_num_queries
):
    items = take_items(annotator_client, solo_campaign.name)["items"]
    url = reverse("labelling:answer", args=[solo_campaign.name])
    fields = {"item_id": items[0]["id"], "value": "supported", "have": f"{items[1]['id']},{items[2]['id']}"}
    with django_assert_num_queries(ANSWER_PAGE_JSON):
        response = annotator_client.post(url, fields, **JSON)
    assert response.status_code == 200 and response.json()["result"]["message"] == "Saved: supported."
    assert len(response.json()["items"]) == 3


def test_answering_with_a_plain_form_post_returns_the_page_with_the_next_item(
    solo_campaign, annotator_client, django_assert_num_queries
):
    page = open_label_page(annotator_client, solo_campaign.name).content.decode()
    item_id = re.search(r'name="item_id" value="(\d+)"', page).group(1)
    url = reverse("labelling:answer", args=[solo_campaign.name])
    with django_assert_num_queries(ANSWER_PAGE_PLAIN):
        response = annotator_client.post(url, {"item_id": item_id, "value": "supported"})
    assert response.status_code == 200 and "Saved: supported." in response.content.decode()


def test_answering_through_the_api(solo_campaign, annotator, annotator_client, django_assert_num_queries):
    served = next_item(campaign=solo_campaign, user=annotator)
    url = f"/api/label/{solo_campaign.name}/labels/"
    with django_assert_num_queries(ANSWER_API):
        response = annotator_client.post(
            url, {"item_id": served.item.pk, "value": "unsupported"}, content_type="application/json"
        )
    assert response.status_code == 201


def test_the_labelling_page_claims_nothing_and_its_item_comes_with_one_post(
    solo_campaign, annotator, annotator_client, django_assert_num_queries
):
    served = next_item(campaign=solo_campaign, user=annotator)
    submit_label(campaign=solo_campaign, user=annotator, item_id=served.item.pk, value="supported")
    with django_assert_num_queries(LABEL_PAGE):
        page = annotator_client.get(reverse("labelling:label", args=[solo_campaign.name]))
    assert page.status_code == 200 and Item.objects.filter(campaign=solo_campaign, slots_taken=1).count() == 1
    with django_assert_num_queries(NEXT_ITEM_PAGE):
        response = annotator_client.post(reverse("labelling:next", args=[solo_campaign.name]), **JSON)
    assert response.status_code == 200 and Item.objects.filter(campaign=solo_campaign, slots_taken=1).count() == 4


def test_the_judge_report_page(reported, owner_client, django_assert_num_queries):
    with django_assert_num_queries(JUDGE_REPORT_PAGE):
        response = owner_client.get(reverse("labelling:report", args=[reported.name]))
    assert response.status_code == 200 and "Leakage" in response.content.decode()


def test_the_judge_report_api(reported, owner_client, django_assert_num_queries):
    with django_assert_num_queries(JUDGE_REPORT_API):
        response = owner_client.get(f"/api/campaigns/{reported.name}/judge-report/")
    assert response.status_code == 200 and response.json()["leakage"]["leaked_items"] > 0
