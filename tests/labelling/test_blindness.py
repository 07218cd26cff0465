"""Blind labelling: nothing an annotator receives reveals the judge, the scores or other people's labels.

The small run's rows carry marker strings in the judge's rationales, the scores, the row and
question metadata, the retrieved ids beyond the context and the reference answer; another
annotator labels every item first with a marker rationale. Every annotator-facing page and API
response is collected and searched for every marker.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from labelstudio_lite.labelling.models import Item, Label, Lease
from labelstudio_lite.labelling.selectors import blind_item
from labelstudio_lite.labelling.services.adjudication import adjudicate
from tests.factories import (
    FAITHFULNESS_SCORE,
    JUDGE_RATIONALE_MARK,
    METADATA_MARK,
    QUESTION_METADATA_MARK,
    REFERENCE_MARK,
    RELEVANCE_SCORE,
    RETRIEVED_MARK,
    label_items,
)

from .pages import JSON, open_label_page

OTHER_NAME = "ottilie-otherlabeller"
OTHER_RATIONALE = "OTHERPERSONRATIONALEMARK"
ADJUDICATION_NOTE = "OWNERADJUDICATIONNOTEMARK"

FORBIDDEN = [
    JUDGE_RATIONALE_MARK,
    str(FAITHFULNESS_SCORE),
    str(RELEVANCE_SCORE),
    "faithfulness",
    "answer_relevance",
    METADATA_MARK,
    QUESTION_METADATA_MARK,
    RETRIEVED_MARK,
    REFERENCE_MARK,
    OTHER_NAME,
    OTHER_RATIONALE,
    ADJUDICATION_NOTE,
    "judge_supported",
    "judge supported",
    "judge unsupported",
    "sampling_weight",
    "stratum",
]


def assert_blind(body: str, where: str) -> None:
    leaked = [marker for marker in FORBIDDEN if marker.lower() in body.lower()]
    assert not leaked, f"{where} leaks {leaked}"


@pytest.fixture
def other(django_user_model):
    return django_user_model.objects.create_user(OTHER_NAME, password="other-pass-123", role="annotator")


@pytest.fixture(params=["answer", "claim"])
def blind_campaign(request, small_run, make_campaign, annotator, other, owner):
    """Overlap 2: the other annotator labels every item (with a rationale) before adam starts."""
    campaign = make_campaign(
        run=small_run,
        name=f"blind-{request.param}",
        unit=request.param,
        overlap=2,
        heldout_fraction=0.5,
        annotators=[annotator, other],
    )
    label_items(
        campaign=campaign,
        user=other,
        value=lambda item: "unsupported" if item.position % 2 else "supported",
        rationale=OTHER_RATIONALE,
    )
    return campaign


def annotator_responses(client, campaign, annotator) -> list[tuple[str, str]]:
    """Walk every annotator-facing page and endpoint the way an annotator would; return (where, body)."""
    name = campaign.name
    bodies: list[tuple[str, str]] = []

    def keep(where: str, response, status: int | tuple[int, ...] = 200) -> None:
        expected = status if isinstance(status, tuple) else (status,)
        assert response.status_code in expected, f"{where}: {response.status_code}"
        content = b"".join(response.streaming_content) if response.streaming else response.content
        bodies.append((where, content.decode()))

    keep("my campaigns page", client.get(reverse("labelling:mine")))
    keep("label page", open_label_page(client, name))
    keep("label page's items (as label.js asks)", client.post(reverse("labelling:next", args=[name]), **JSON))

    def held() -> int:
        return Lease.objects.filter(annotator=annotator, status="active").order_by("served_at", "pk")[0].item_id

    keep(
        "answer (as label.js sends it)",
        client.post(
            reverse("labelling:answer", args=[name]),
            {"item_id": held(), "value": "supported", "rationale": "mine", "key": "k1"},
            **JSON,
        ),
    )
    keep(
        "skip (as label.js sends it)",
        client.post(reverse("labelling:answer", args=[name]), {"item_id": held(), "value": "skip"}, **JSON),
    )
    keep(
        "answer (plain form, followed)",
        client.post(reverse("labelling:answer", args=[name]), {"item_id": held(), "value": "cant_tell"}, follow=True),
    )
    keep("recent labels", client.get(reverse("labelling:recent", args=[name])))
    keep("recent labels (htmx)", client.get(reverse("labelling:recent", args=[name]), HTTP_HX_REQUEST="true"))
    mine = Label.objects.filter(annotator=annotator).order_by("pk").first()
    edit = reverse("labelling:edit", args=[name, mine.pk])
    keep("edit label", client.get(edit))
    keep("edit label (as undo opens it)", client.get(edit, HTTP_HX_REQUEST="true"))
    keep(
        "edit label POST (as label.js sends it)",
        client.post(edit, {"value": "unsupported", "rationale": "changed"}, **JSON),
    )
    keep(
        "renew and refill (as label.js asks)",
        client.post(reverse("labelling:next", args=[name]), {"have": str(held())}, **JSON),
    )

    keep("API my campaigns", client.get("/api/label/campaigns/"))
    keep("API next", client.post(f"/api/label/{name}/next/"))
    item_id = held()
    keep(
        "API skip", client.post(f"/api/label/{name}/skip/", {"item_id": item_id}, content_type="application/json"), 204
    )
    keep("API next after skip", client.post(f"/api/label/{name}/next/"))
    item_id = held()
    keep(
        "API submit",
        client.post(
            f"/api/label/{name}/labels/",
            {"item_id": item_id, "value": "supported", "rationale": "api"},
            content_type="application/json",
        ),
        201,
    )
    keep("API my labels", client.get(f"/api/label/{name}/labels/"))

    # label the rest, then the finished states
    while True:
        response = client.post(f"/api/label/{name}/next/")
        if response.status_code == 204:
            keep("API next when done", response, 204)
            break
        client.post(
            f"/api/label/{name}/labels/",
            {"item_id": response.json()["item_id"], "value": "supported"},
            content_type="application/json",
        )
    keep("label page when done", open_label_page(client, name))
    keep("my campaigns when done", client.get(reverse("labelling:mine")))
    keep("API my labels when done", client.get(f"/api/label/{name}/labels/"))
    return bodies


def test_no_annotator_facing_page_or_endpoint_reveals_the_judge_scores_metadata_or_other_labels(
    blind_campaign, annotator, annotator_client, owner
):
    conflict = Item.objects.filter(campaign=blind_campaign).first()
    adjudicate(campaign=blind_campaign, item_id=conflict.pk, value="unsupported", note=ADJUDICATION_NOTE, user=owner)

    bodies = annotator_responses(annotator_client, blind_campaign, annotator)

    assert len(bodies) >= 20
    for where, body in bodies:
        assert_blind(body, where)
    # the walk really showed items: their questions and context reached the annotator
    label_page = dict(bodies)["label page"]
    assert "What is the refund window of plan" in label_page and "First chunk for" in label_page
    # every item was answered once: one can't tell (stored, not counted), the rest labels
    assert Label.objects.filter(annotator=annotator).count() == blind_campaign.items.count()
    assert Label.objects.filter(annotator=annotator, value="cant_tell").count() == 1


def test_the_next_item_api_sends_only_the_allowlisted_fields(solo_campaign, annotator_client):
    served = annotator_client.post(f"/api/label/{solo_campaign.name}/next/").json()

    assert set(served) == {
        "item_id",
        "question",
        "context",
        "answer",
        "claim",
        "claim_number",
        "lease_expires_at",
        "question_asked",
        "choices",
        "guideline_version",
    }
    assert served["choices"] == [
        {"value": "supported", "word": "Supported"},
        {"value": "unsupported", "word": "Unsupported"},
        {"value": "cant_tell", "word": "Can't tell"},
    ]
    assert all(set(chunk) == {"n", "id", "text"} for chunk in served["context"])
    qid = Item.objects.get(pk=served["item_id"]).row.question.qid
    assert [chunk["id"] for chunk in served["context"]] == [f"doc-{qid}-a", f"doc-{qid}-b"]


def test_the_own_labels_api_sends_only_the_annotators_own_labels(blind_campaign, annotator, annotator_client, other):
    label_items(campaign=blind_campaign, user=annotator, rationale="my own reason")

    mine = annotator_client.get(f"/api/label/{blind_campaign.name}/labels/").json()

    assert len(mine) == blind_campaign.items.count()
    assert {row["id"] for row in mine} == set(Label.objects.filter(annotator=annotator).values_list("pk", flat=True))
    assert {row["rationale"] for row in mine} == {"my own reason"}
    assert set(mine[0]) == {
        "id",
        "item_id",
        "question_id",
        "claim_index",
        "value",
        "rationale",
        "seconds",
        "created_at",
        "updated_at",
    }


def test_an_annotator_cannot_open_another_annotators_label(blind_campaign, annotator_client, other):
    theirs = Label.objects.filter(annotator=other).first()

    response = annotator_client.get(reverse("labelling:edit", args=[blind_campaign.name, theirs.pk]))

    assert response.status_code == 404
    assert OTHER_RATIONALE not in response.content.decode()


def _hold(user, item) -> None:
    """Give ``user`` a lease on ``item`` directly (so the page shows exactly that item)."""
    from django.db.models import F

    Lease.objects.create(item=item, annotator=user, expires_at=timezone.now() + timedelta(minutes=10))
    Item.objects.filter(pk=item.pk).update(slots_taken=F("slots_taken") + 1)


def _masked(body: str, item: Item, username: str) -> str:
    body = (
        body.replace(item.row.question.qid, "QID")
        .replace(f'value="{item.pk}"', 'value="ITEM"')
        .replace(f'data-item-id="{item.pk}"', 'data-item-id="ITEM"')
        .replace(username, "USER")
    )
    body = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', 'name="csrfmiddlewaretoken" value="CSRF"', body)
    body = re.sub(r'(name="key" value|data-key|data-user)="[^"]+"', r'\1="MASKED"', body)
    return re.sub(r'"X-CSRFToken": "[^"]+"', '"X-CSRFToken": "CSRF"', body)


def test_the_page_of_an_item_the_judge_rejected_is_the_page_of_one_it_accepted(
    small_run, make_campaign, annotator, other, client
):
    """Two billing answers, one the judge marked unsupported: masked of their ids, the pages are identical."""
    campaign = make_campaign(run=small_run, name="twins", overlap=1, annotators=[annotator, other])
    accepted = Item.objects.get(campaign=campaign, row__question__qid="q0001")
    rejected = Item.objects.get(campaign=campaign, row__question__qid="q0003")
    assert accepted.judge_supported and not rejected.judge_supported
    _hold(annotator, accepted)
    _hold(other, rejected)

    pages = []
    for user, item in ((annotator, accepted), (other, rejected)):
        client.force_login(user)
        pages.append(_masked(open_label_page(client, campaign.name).content.decode(), item, user.username))
        blind = blind_item(item)
        assert set(blind) == {
            "item_id",
            "question",
            "context",
            "answer",
            "answer_html",
            "claim",
            "claim_number",
            "claim_count",
            "shows",
            "reference",
        }
        assert blind["reference"] is None  # a faithfulness campaign never shows the reference answer

    assert pages[0] == pages[1]


def test_the_owners_adjudication_page_hides_the_judges_verdict_too(blind_campaign, annotator, owner_client):
    label_items(campaign=blind_campaign, user=annotator, value="supported")

    body = owner_client.get(reverse("labelling:adjudicate", args=[blind_campaign.name])).content.decode()

    assert OTHER_RATIONALE in body  # the owner does see the annotators' labels and rationales
    assert JUDGE_RATIONALE_MARK not in body and str(FAITHFULNESS_SCORE) not in body and "judge unsupported" not in body
