"""Only eval owners reach the judge report, re-measurement, exports, verdict uploads and fresh
held-out samples (pages and API); annotators are turned away and anonymous visitors sent to log in.
The report page draws the confusion heat map and the per-slice plot."""

from __future__ import annotations

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from labelstudio_lite.labelling.models import Campaign, ExportRecord, RemeasurementView, VerdictSet
from labelstudio_lite.labelling.services.exports import disagreements_export
from labelstudio_lite.labelling.services.judge_report import judge_report
from tests.factories import TUNED_JUDGE, import_verdicts, make_campaign

from .conftest import Shared, spec_campaign_once


@pytest.fixture(scope="module")
def shared(django_db_setup, django_db_blocker, tmp_path_factory):
    """A labelled spec campaign (30 % held out) with a tuned judge's verdicts and one export."""
    folder = tmp_path_factory.mktemp("perm")
    with spec_campaign_once(django_db_blocker, folder, name="spec-perm", heldout_fraction=0.3) as (case, campaign):
        result = import_verdicts(
            folder=folder,
            campaign=campaign,
            file="tuned.jsonl",
            judge_config=TUNED_JUDGE,
            records=[{"question_id": q, "supported": True} for q in sorted(case.human)],
        )
        disagreements_export(campaign=campaign, fmt="jsonl")
        yield Shared(case, campaign.pk, result.verdict_set.pk)


def page_requests(campaign, verdict_set):
    """Every judge-validation page as (method, url, data)."""
    name = campaign.name
    return [
        ("get", reverse("labelling:report", args=[name]), None),
        ("get", reverse("labelling:report", args=[name]) + f"?verdicts={verdict_set.pk}", None),
        ("post", reverse("labelling:report", args=[name]), {"fit_kappa": "0", "fit_miss_rate": "1"}),
        ("get", reverse("labelling:remeasure", args=[name]) + f"?verdicts={verdict_set.pk}", None),
        ("post", reverse("labelling:remeasure", args=[name]) + f"?verdicts={verdict_set.pk}", {}),
        ("post", reverse("labelling:export-create", args=[name]), {"format": "jsonl", "seed": "7"}),
        ("get", reverse("labelling:export-download", args=[name, 1]), None),
        ("post", reverse("labelling:export", args=[name, "csv"]), {}),
        ("post", reverse("labelling:export", args=[name, "label-studio"]), {}),
        ("post", reverse("labelling:report-publish", args=[name, "html"]), {}),
        ("post", reverse("labelling:report-publish", args=[name, "json"]), {}),
        ("post", reverse("labelling:verdicts", args=[name]), "upload"),
        ("post", reverse("labelling:fresh-heldout", args=[name]), {"name": "stolen", "size": "5"}),
    ]


def api_requests(campaign, verdict_set):
    name = campaign.name
    return [
        ("get", f"/api/campaigns/{name}/judge-report/", None),
        ("get", f"/api/campaigns/{name}/judge-report/?verdicts={verdict_set.pk}", None),
        ("get", f"/api/campaigns/{name}/remeasure/?verdicts={verdict_set.pk}", None),
        ("post", f"/api/campaigns/{name}/remeasure/?verdicts={verdict_set.pk}", {}),
        ("post", f"/api/campaigns/{name}/labels/", {}),
        ("post", f"/api/campaigns/{name}/labels/", {"format": "label-studio"}),
        ("post", f"/api/campaigns/{name}/judge-report/publish/", {"format": "html"}),
        ("post", f"/api/campaigns/{name}/judge-report/publish/", {"format": "json"}),
        ("get", f"/api/campaigns/{name}/exports/", None),
        ("post", f"/api/campaigns/{name}/exports/", {"format": "jsonl"}),
    ]


def responses(client, requests):
    """Send every (method, url, data) request as a browser would (``"upload"``: a verdict file); yield (method, url, response)."""
    for method, url, data in requests:
        if data == "upload":
            data = {
                "file": SimpleUploadedFile("v.jsonl", b'{"question_id": "q0000", "supported": false}\n'),
                "judge_config": json.dumps({**TUNED_JUDGE, "temperature": 0.9}),
            }
        yield method, url, client.get(url) if method == "get" else client.post(url, data)


def nothing_changed(campaign) -> bool:
    campaign.refresh_from_db()
    return (
        list(ExportRecord.objects.filter(campaign=campaign).values_list("version", flat=True)) == [1]
        and not RemeasurementView.objects.exists()
        and VerdictSet.objects.count() == 1
        and not Campaign.objects.filter(name="stolen").exists()
        and (campaign.fit_kappa, campaign.fit_miss_rate) == (0.7, 0.15)
    )


def test_annotators_are_turned_away_from_every_judge_validation_page(
    annotator_client, annotator, campaign, verdict_set
):
    from labelstudio_lite.labelling.models import CampaignAnnotator

    CampaignAnnotator.objects.create(campaign=campaign, user=annotator)  # even an annotator of this very campaign
    for method, url, response in responses(annotator_client, page_requests(campaign, verdict_set)):
        assert response.status_code in (403, 404), (method, url, response.status_code)
    assert nothing_changed(campaign)


def test_annotators_are_refused_by_every_judge_validation_endpoint(annotator_client, campaign, verdict_set):
    for method, url, response in responses(annotator_client, api_requests(campaign, verdict_set)):
        assert response.status_code in (403, 404), (method, url, response.status_code)
        assert "overall" not in response.content.decode()
    assert nothing_changed(campaign)


def test_anonymous_visitors_are_sent_to_log_in_from_every_page(client, campaign, verdict_set):
    for method, url, response in responses(client, page_requests(campaign, verdict_set)):
        assert response.status_code == 302, (method, url, response.status_code)
        assert response["Location"].startswith(reverse("login")), url
    assert nothing_changed(campaign)


def test_anonymous_callers_get_401_or_403_from_every_endpoint(client, campaign, verdict_set):
    for method, url, response in responses(client, api_requests(campaign, verdict_set)):
        assert response.status_code in (401, 403), (method, url, response.status_code)
    assert nothing_changed(campaign)


def test_an_eval_owner_reaches_every_page_and_endpoint(owner_client, campaign, verdict_set):
    for method, url, response in responses(owner_client, page_requests(campaign, verdict_set)):
        assert response.status_code in (200, 302), (method, url, response.status_code)
    for method, url, data in api_requests(campaign, verdict_set):
        response = owner_client.generic(
            method.upper(), url, json.dumps(data) if data else "", content_type="application/json"
        )
        assert response.status_code in (200, 201), (method, url, response.status_code)


def test_a_token_authenticated_owner_gets_the_report_as_json(owner, campaign, client):
    from labelstudio_lite.accounts.tokens import token_create

    token = token_create(user=owner, name="tests")

    response = client.get(f"/api/campaigns/{campaign.name}/judge-report/", HTTP_AUTHORIZATION=f"Token {token.key}")

    assert response.status_code == 200 and response.json()["overall"]["n"] == 200


# ----------------------------------------------------------------------------------------------
# Pictures
# ----------------------------------------------------------------------------------------------


def test_the_report_page_draws_the_confusion_matrix_as_a_heat_map(owner_client, campaign):
    page = owner_client.get(reverse("labelling:report", args=[campaign.name])).content.decode()

    heatmap = re.search(r'<svg[^>]*class="heatmap".*?</svg>', page, re.S)
    assert heatmap, "no heat map on the page"
    svg = heatmap.group(0)
    assert 'role="img"' in svg and "<title>Confusion table" in svg
    counts = re.findall(r'class="hm-count"[^>]*>(\d+)</text>', svg)
    assert counts == ["142", "8", "22", "28"]
    assert svg.count("<rect") == 4
    assert "missed" in svg and "false fail" in svg


def test_the_report_page_plots_kappa_and_the_miss_rate_per_slice_with_intervals(owner_client, campaign):
    report = judge_report(campaign).as_dict()

    page = owner_client.get(reverse("labelling:report", args=[campaign.name])).content.decode()

    plot = re.search(r'<svg[^>]*class="slice-plot".*?</svg>', page, re.S)
    assert plot, "no per-slice plot on the page"
    svg = plot.group(0)
    for s in report["slices"]:
        assert f"{s['slice']} (n={s['n']})" in svg
        assert f"<title>kappa {s['kappa']:.2f}</title>" in svg
        assert f">{s['missed']}/{s['failures']}</text>" in svg
    assert svg.count('class="si-bar"') == len(report["slices"])  # a kappa interval per slice
    assert svg.count('class="si-bar miss"') == len(report["slices"])  # a miss-rate interval per slice


def test_a_report_without_labels_draws_no_pictures(owner_client, campaign, db):
    empty = make_campaign(run=campaign.run, name="empty-perm", size=50)

    page = owner_client.get(reverse("labelling:report", args=[empty.name])).content.decode()

    assert 'class="heatmap"' not in page and 'class="slice-plot"' not in page
