"""Roles and access: every labelling view and endpoint, for every kind of visitor.

Visitors: anonymous; an annotator of another campaign (an outsider); an annotator assigned to the
campaign; an eval owner who is not assigned to label it. Pages send anonymous visitors to the login
page; the API answers 401/403. Label pages are 404 for anyone not assigned (eval owners too);
campaign (owner) pages are 403 for annotators; owner endpoints are 403 for annotators.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from labelstudio_lite.labelling.models import Adjudication, Campaign, Item, Label
from labelstudio_lite.labelling.services.assignment import next_item, submit_label
from tests.factories import label_items

LOGIN = "login"
ANON_API = (401, 403)


@dataclass
class World:
    campaign: Campaign
    elsewhere: Campaign
    label: Label  # one of adam's labels in the campaign
    held_item: Item  # the item adam holds now
    outsider: Any


@pytest.fixture
def world(small_run, make_campaign, annotator, other_annotator, django_user_model) -> World:
    outsider = django_user_model.objects.create_user("carl", password="annot-pass-789", role="annotator")
    campaign = make_campaign(run=small_run, name="faith", overlap=2, annotators=[annotator, other_annotator])
    elsewhere = make_campaign(run=small_run, name="elsewhere", overlap=1, annotators=[outsider])
    served = next_item(campaign=campaign, user=annotator)
    label = submit_label(campaign=campaign, user=annotator, item_id=served.item.pk, value="supported")
    held = next_item(campaign=campaign, user=annotator).item
    return World(campaign, elsewhere, label, held, outsider)


def held_now(w: World) -> int:
    """The item the campaign's annotator holds at this moment (earlier requests move on to the next)."""
    from labelstudio_lite.labelling.models import Lease

    active = Lease.objects.filter(item__campaign=w.campaign, annotator__username="adam", status="active").first()
    return active.item_id if active else w.held_item.pk


def endpoints(w: World) -> list[dict[str, Any]]:
    """Every route of the labelling app, with what each visitor must get.

    ``anon`` is 'login' for pages (a redirect to the login page) or a status tuple for the API.
    """
    name = w.campaign.name
    csv = "question_id,label,annotator\nq0000,supported,external-ann\n"
    routes = [
        # annotator pages
        dict(m="get", url=reverse("labelling:mine"), anon=LOGIN, outsider=200, annotator=200, owner=200),
        dict(m="get", url=reverse("labelling:label", args=[name]), anon=LOGIN, outsider=404, annotator=200, owner=404),
        dict(
            m="post",
            url=reverse("labelling:next", args=[name]),
            htmx=True,
            anon=LOGIN,
            outsider=404,
            annotator=200,
            owner=404,
        ),
        dict(
            m="post",
            url=reverse("labelling:answer", args=[name]),
            data={"item_id": w.held_item.pk, "value": "skip"},
            htmx=True,
            anon=LOGIN,
            outsider=404,
            annotator=200,
            owner=404,
        ),
        dict(m="get", url=reverse("labelling:recent", args=[name]), anon=LOGIN, outsider=404, annotator=200, owner=404),
        dict(
            m="get",
            url=reverse("labelling:edit", args=[name, w.label.pk]),
            anon=LOGIN,
            outsider=404,
            annotator=200,
            owner=404,
        ),
        dict(
            m="post",
            url=reverse("labelling:edit", args=[name, w.label.pk]),
            data={"value": "unsupported"},
            anon=LOGIN,
            outsider=404,
            annotator=302,
            owner=404,
        ),
        # campaign pages (eval owners)
        dict(m="get", url=reverse("labelling:campaigns"), anon=LOGIN, outsider=403, annotator=403, owner=200),
        dict(
            m="post",
            url=reverse("labelling:campaigns"),
            data={"name": "new-one"},
            anon=LOGIN,
            outsider=403,
            annotator=403,
            owner=400,
        ),
        dict(
            m="post",
            url=reverse("labelling:preview"),
            data={"unit": "answer"},
            anon=LOGIN,
            outsider=403,
            annotator=403,
            owner=200,
        ),
        dict(
            m="get", url=reverse("labelling:campaign", args=[name]), anon=LOGIN, outsider=403, annotator=403, owner=200
        ),
        dict(
            m="post",
            url=reverse("labelling:annotators", args=[name]),
            data={"annotators": [w.outsider.pk]},
            anon=LOGIN,
            outsider=403,
            annotator=403,
            owner=302,
        ),
        dict(
            m="post",
            url=reverse("labelling:guideline", args=[name]),
            data={"text": "access page v2"},
            anon=LOGIN,
            outsider=403,
            annotator=403,
            owner=302,
        ),
        dict(
            m="get",
            url=reverse("labelling:adjudicate", args=[name]),
            anon=LOGIN,
            outsider=403,
            annotator=403,
            owner=200,
        ),
        dict(
            m="post",
            url=reverse("labelling:adjudicate", args=[name]),
            data={"item_id": w.label.item_id, "value": "supported"},
            anon=LOGIN,
            outsider=403,
            annotator=403,
            owner=302,
        ),
        dict(
            m="post",
            url=reverse("labelling:export", args=[name, "csv"]),
            anon=LOGIN,
            outsider=403,
            annotator=403,
            owner=302,
        ),
        dict(
            m="post",
            url=reverse("labelling:export", args=[name, "jsonl"]),
            anon=LOGIN,
            outsider=403,
            annotator=403,
            owner=302,
        ),
        dict(
            m="post",
            url=reverse("labelling:import", args=[name]),
            files=lambda: {"file": SimpleUploadedFile("l.csv", csv.encode())},
            anon=LOGIN,
            outsider=403,
            annotator=403,
            owner=302,
        ),
        # annotator API
        dict(m="get", url="/api/label/campaigns/", anon=ANON_API, outsider=200, annotator=200, owner=200),
        dict(m="post", url=f"/api/label/{name}/next/", anon=ANON_API, outsider=404, annotator=200, owner=404),
        dict(m="get", url=f"/api/label/{name}/labels/", anon=ANON_API, outsider=404, annotator=200, owner=404),
        dict(
            m="post",
            url=f"/api/label/{name}/labels/",
            json=lambda: {"item_id": held_now(w), "value": "unsupported"},
            anon=ANON_API,
            outsider=404,
            annotator=201,
            owner=404,
        ),
        dict(
            m="post",
            url=f"/api/label/{name}/skip/",
            json=lambda: {"item_id": held_now(w)},
            anon=ANON_API,
            outsider=404,
            annotator=204,
            owner=404,
        ),
        # owner API
        dict(m="get", url="/api/campaigns/", anon=ANON_API, outsider=403, annotator=403, owner=200),
        dict(m="get", url=f"/api/campaigns/{name}/", anon=ANON_API, outsider=403, annotator=403, owner=200),
        dict(m="post", url="/api/campaigns/", data={}, anon=ANON_API, outsider=403, annotator=403, owner=400),
        dict(m="get", url=f"/api/campaigns/{name}/guideline/", anon=ANON_API, outsider=403, annotator=403, owner=200),
        dict(
            m="post",
            url=f"/api/campaigns/{name}/guideline/",
            data={"text": "access v2"},
            anon=ANON_API,
            outsider=403,
            annotator=403,
            owner=201,
        ),
        dict(m="post", url=f"/api/campaigns/{name}/labels/", anon=ANON_API, outsider=403, annotator=403, owner=201),
    ]
    return routes


def request(client, route: dict[str, Any]):
    kwargs: dict[str, Any] = {}
    if route.get("htmx"):
        kwargs["HTTP_HX_REQUEST"] = "true"
    if "json" in route:
        return getattr(client, route["m"])(route["url"], route["json"](), content_type="application/json")
    data = dict(route.get("data", {}))
    if "files" in route:
        data.update(route["files"]())
    return getattr(client, route["m"])(route["url"], data, **kwargs)


def check_all(client, w: World, persona: str) -> list[str]:
    wrong = []
    for route in endpoints(w):
        response = request(client, route)
        expected = route[persona]
        if expected == LOGIN:
            ok = response.status_code == 302 and response["Location"].startswith(reverse("login"))
        else:
            ok = response.status_code in (expected if isinstance(expected, tuple) else (expected,))
        if not ok:
            wrong.append(f"{route['m'].upper()} {route['url']}: got {response.status_code}, expected {expected}")
    return wrong


def test_anonymous_visitors_are_sent_to_log_in_and_refused_by_the_api(world, client):
    assert check_all(client, world, "anon") == []
    assert not Adjudication.objects.exists()
    assert Label.objects.count() == 1


def test_an_annotator_of_another_campaign_gets_404_on_its_label_pages_and_403_on_owner_pages(world, client):
    client.force_login(world.outsider)
    assert check_all(client, world, "outsider") == []
    assert Label.objects.count() == 1 and not Adjudication.objects.exists()


def test_an_assigned_annotator_labels_their_campaign_and_is_refused_the_owner_pages_and_apis(
    world, annotator, annotator_client
):
    assert check_all(annotator_client, world, "annotator") == []
    assert not Adjudication.objects.exists()
    assert not Campaign.objects.filter(name="new-one").exists()
    assert Label.objects.exclude(annotator=annotator).count() == 0
    assert (
        Label.objects.filter(annotator=annotator, value="unsupported").count() == 2
    )  # the changed label and the API one


def test_an_eval_owner_uses_every_owner_page_and_api_but_not_label_pages_they_are_not_assigned_to(
    world, owner_client, owner
):
    assert check_all(owner_client, world, "owner") == []
    assert Adjudication.objects.filter(item_id=world.label.item_id, value="supported").exists()
    assert not Label.objects.filter(annotator=owner).exists()


def test_an_eval_owner_assigned_to_a_campaign_can_label_it(world, owner, owner_client):
    from labelstudio_lite.labelling.services.campaigns import campaign_set_annotators

    campaign_set_annotators(campaign=world.campaign, users=[owner])

    assert owner_client.get(reverse("labelling:label", args=[world.campaign.name])).status_code == 200
    assert owner_client.post(f"/api/label/{world.campaign.name}/next/").status_code == 200


def test_annotators_see_only_the_campaigns_they_are_assigned_to(world, client, annotator):
    client.force_login(world.outsider)
    assert [c["name"] for c in client.get("/api/label/campaigns/").json()] == ["elsewhere"]
    page = client.get(reverse("labelling:mine")).content.decode()
    assert "elsewhere" in page and "faith" not in page

    client.force_login(annotator)
    assert [c["name"] for c in client.get("/api/label/campaigns/").json()] == ["faith"]


def test_a_campaign_that_does_not_exist_is_404_for_annotators_and_owners(world, annotator_client, client, owner):
    assert annotator_client.get(reverse("labelling:label", args=["nope"])).status_code == 404
    assert annotator_client.post("/api/label/nope/next/").status_code == 404
    client.force_login(owner)
    assert client.get(reverse("labelling:campaign", args=["nope"])).status_code == 404
    assert client.get("/api/campaigns/nope/").status_code == 404


def test_the_annotator_api_works_with_a_token_and_says_401_without_one(world, annotator, client):
    from labelstudio_lite.accounts.tokens import token_create

    token = token_create(user=annotator, name="tests")

    anonymous = client.get("/api/label/campaigns/")
    with_token = client.get("/api/label/campaigns/", HTTP_AUTHORIZATION=f"Token {token.key}")

    assert anonymous.status_code == 401
    assert with_token.status_code == 200 and with_token.json()[0]["name"] == "faith"


def test_annotators_see_only_their_own_labels_in_recent_and_the_labels_api(
    world, annotator, other_annotator, annotator_client
):
    label_items(campaign=world.campaign, user=other_annotator, rationale="bea-only-rationale")

    recent = annotator_client.get(reverse("labelling:recent", args=[world.campaign.name])).content.decode()
    api = annotator_client.get(f"/api/label/{world.campaign.name}/labels/").json()

    assert "bea-only-rationale" not in recent
    assert [row["id"] for row in api] == [world.label.pk]
