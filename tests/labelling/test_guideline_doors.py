"""Every door to a new guideline version (the campaign page, the API, the command) and to creating a campaign
by API with a metric and a label set: all through the same service, for eval owners only; labels keep the
version they were given under and the certificate then reads stale in words."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from evalcore.services.judge_fitness import judge_validation
from labelstudio_lite.labelling.models import Campaign, Guideline, Label
from labelstudio_lite.labelling.services.judge_report import judge_report
from tests import factories

from .test_certificates import judged_run, label_all


@pytest.fixture
def annotator_client(annotator):
    """The annotator's own client (the shared ``client`` fixture is the owner's here)."""
    client = Client()
    client.force_login(annotator)
    return client


def versions(campaign) -> list[tuple[int, str]]:
    return list(Guideline.objects.filter(campaign=campaign).order_by("version").values_list("version", "text"))


@pytest.fixture
def campaign(small_run, owner, annotator):
    return factories.make_campaign(run=small_run, name="g", annotators=[annotator], user=owner, guidance="v1 text")


def test_the_owner_writes_a_new_version_on_the_campaign_page_and_an_annotator_is_refused(
    campaign, owner_client, annotator_client
):
    page = owner_client.get(reverse("labelling:campaign", args=[campaign.name])).content.decode()
    assert 'id="guideline"' in page and "Guideline v1" in page and "v1 text" in page

    url = reverse("labelling:guideline", args=[campaign.name])
    refused = annotator_client.post(url, {"text": "an annotator's guideline"})
    assert refused.status_code in (403, 404) and versions(campaign) == [(1, "v1 text")]

    response = owner_client.post(url, {"text": "v2: count partial answers as unsupported"}, follow=True)
    assert response.redirect_chain[-1][0].endswith(reverse("labelling:campaign", args=[campaign.name]) + "#guideline")
    assert "Guideline v2 saved" in response.content.decode()
    assert versions(campaign)[-1] == (2, "v2: count partial answers as unsupported")
    assert "Earlier versions" in response.content.decode()

    again = owner_client.post(url, {"text": "v2: count partial answers as unsupported"}, follow=True)
    assert "already this text (version 2)" in again.content.decode() and len(versions(campaign)) == 2


def test_the_api_lists_and_writes_versions_for_owners_only(campaign, owner_client, annotator_client):
    url = reverse("api-campaign-guideline", args=[campaign.name])
    assert annotator_client.get(url).status_code == 403
    assert annotator_client.post(url, {"text": "x"}, content_type="application/json").status_code == 403

    created = owner_client.post(url, {"text": "v2 by API"}, content_type="application/json")
    assert created.status_code == 201 and created.json()["version"] == 2 and created.json()["created_by"] == "olivia"
    listed = owner_client.get(url).json()
    assert [(g["version"], g["text"]) for g in listed] == [(2, "v2 by API"), (1, "v1 text")]

    same = owner_client.post(url, {"text": "v2 by API"}, content_type="application/json")
    assert same.status_code == 400 and "already this text" in same.json()["text"][0]


def test_the_command_writes_and_lists_versions(campaign, tmp_path):
    out = StringIO()
    call_command("new_guideline", campaign.name, "--text", "v2 from the CLI", stdout=out)
    assert "guideline v2 written" in out.getvalue()
    path = tmp_path / "v3.txt"
    path.write_text("v3 from a file", encoding="utf-8")
    call_command("new_guideline", campaign.name, "--file", str(path), stdout=StringIO())
    assert versions(campaign)[1:] == [(2, "v2 from the CLI"), (3, "v3 from a file")]
    listed = StringIO()
    call_command("new_guideline", campaign.name, "--list", stdout=listed)
    assert listed.getvalue().splitlines()[0].startswith("v3 (CLI, ")
    with pytest.raises(CommandError, match="already this text"):
        call_command("new_guideline", campaign.name, "--text", "v3 from a file", stdout=StringIO())
    with pytest.raises(CommandError, match="no campaign"):
        call_command("new_guideline", "nope", "--text", "x", stdout=StringIO())


def test_labels_keep_their_version_and_the_certificate_reads_stale_in_words(tmp_path, owner, annotator, owner_client):
    run = judged_run(tmp_path, 120)
    campaign = factories.make_campaign(run=run, name="c", annotators=[annotator], user=owner, guidance="v1")
    label_all(campaign, annotator)
    assert judge_validation(run.judge_config).fit and not judge_report(campaign).stale

    response = owner_client.post(
        reverse("api-campaign-guideline", args=[campaign.name]), {"text": "v2"}, content_type="application/json"
    )
    assert response.status_code == 201
    assert set(Label.objects.filter(item__campaign=campaign).values_list("guideline_version", flat=True)) == {1}
    validation = judge_validation(run.judge_config)
    assert not validation.fit and "the guideline of campaign c changed (v1 → v2)" in validation.stale
    report = judge_report(Campaign.objects.get(pk=campaign.pk))
    assert report.stale.startswith("the guideline of campaign c changed (v1 → v2) after these labels were given")
    assert "Stale:" in owner_client.get(reverse("labelling:report", args=[campaign.name])).content.decode()

    # a label given from now on records v2; the earlier ones keep v1
    other = factories.make_campaign(run=run, name="c2", annotators=[annotator], user=owner, guidance="v1", size=3)
    call_command("new_guideline", other.name, "--text", "v2 of c2", stdout=StringIO())
    factories.label_items(campaign=other, user=annotator, value="supported", limit=1)
    assert list(Label.objects.filter(item__campaign=other).values_list("guideline_version", flat=True)) == [2]
    assert set(Label.objects.filter(item__campaign=campaign).values_list("guideline_version", flat=True)) == {1}


def test_the_api_creates_a_1_to_5_relevance_campaign_and_names_the_field_it_refuses(
    small_run, owner_client, annotator_client
):
    url = reverse("api-campaigns")
    body = {
        "run": small_run.name,
        "name": "rel-api",
        "unit": "answer",
        "size": 10,
        "guidance": "5: answers exactly what was asked.",
        "metric": "answer_relevance",
        "scale": "ordinal",
        "scale_min": 1,
        "scale_max": 5,
        "fail_at": 2,
    }
    assert annotator_client.post(url, body, content_type="application/json").status_code == 403
    assert not Campaign.objects.filter(name="rel-api").exists()

    created = owner_client.post(url, body, content_type="application/json")
    assert created.status_code == 201, created.json()
    out = created.json()
    assert (out["metric"], out["label_set"]["words"], out["guideline_version"]) == (
        "answer_relevance",
        "scores 1–5; 1–2 is the failure class",
        1,
    )
    campaign = Campaign.objects.get(name="rel-api")
    assert campaign.guideline.text == "5: answers exactly what was asked." and campaign.shows == "question"
    assert any(c["name"] == "rel-api" and c["metric"] == "answer_relevance" for c in owner_client.get(url).json())

    def refused(**change):
        response = owner_client.post(url, {**body, "name": "rel-bad", **change}, content_type="application/json")
        assert response.status_code == 400
        return response.json()

    assert "scores at or below it fail" in refused(fail_at=7)["fail_at"][0]
    assert "already exists" in refused(name="rel-api")["name"][0]
    assert "no run named" in refused(run="nope")["run"][0]
    assert "no scale or threshold" in refused(scale="binary")["scale"][0]
    assert "no such user" in refused(annotators=["ghost"])["annotators"][0]
    assert "size" in refused(size=0)
    assert not Campaign.objects.filter(name="rel-bad").exists()
