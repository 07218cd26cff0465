"""Labels exported in Label Studio's import format (the task list its import takes, each label an annotation):
a Label Studio export (tests/fixtures/label_studio) imported, exported and re-imported gives the same labels,
through the page, the API and ``export_labels --format label-studio``; the tasks fit the labelling config
exported beside them as Label Studio checks them (every ``$field`` of the config in the task's data, every
result naming a control and its object, every choice one the config offers, annotators by email), and
carry nothing of the judge."""

from __future__ import annotations

import html
import json
import xml.etree.ElementTree as ET
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from evalcore.services.evalsets import evalset_import
from evalcore.services.runs import run_import
from labelstudio_lite.labelling.models import ExportRecord, Label
from labelstudio_lite.labelling.services.exports import labels_export
from labelstudio_lite.labelling.services.label_formats import label_studio_config
from labelstudio_lite.labelling.services.label_import import labels_import
from labelstudio_lite.labelling.services.label_sources import LabelSource, read_users
from tests import factories

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LS = FIXTURES / "label_studio"
VALUES = {"Supported": "supported", "Not supported": "unsupported"}

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(db):
    evalset_import(path=FIXTURES / "langfuse" / "dataset_items.jsonl", name="support")
    return run_import(path=FIXTURES / "ragas" / "run1_with_id.csv", evalset="support", name="r1").run


@pytest.fixture
def labelled(run, owner, annotator, tmp_path):
    """The Label Studio fixture's five labels, and two of ours: a user's with a rationale and a can't-tell."""
    campaign = factories.make_campaign(run=run, name="tools", overlap=2, user=owner)
    source = LabelSource(value_map=VALUES, users=read_users(LS / "users.json"))
    labels_import(campaign=campaign, path=LS / "export.json", source=source)
    annotator.email = "adam@example.com"
    annotator.save()
    factories.import_labels(
        folder=tmp_path / "ours",
        campaign=campaign,
        rows=[("q2", None, "unsupported", "adam", "the context says 60 days"), ("q1", None, "cant_tell", "ext-cy", "")],
    )
    return campaign


def label_set(campaign) -> set[tuple]:
    """Every label as what it says: the item, who, the value, why."""
    return {
        (
            label.item.row.question.qid,
            label.item.claim_index,
            label.annotator.username if label.annotator_id else label.external_annotator,
            label.value,
            label.rationale,
        )
        for label in Label.objects.filter(item__campaign=campaign).select_related("item__row__question", "annotator")
    }


def page_export(client, campaign) -> str:
    """Export as the campaign page does: a POST that records it, then a GET of the file."""
    recorded = client.post(reverse("labelling:export", args=[campaign.name, "label-studio"]))
    assert recorded.status_code == 302, recorded.status_code
    response = client.get(recorded["Location"])
    assert response.status_code == 200 and response["Content-Type"].startswith("application/json")
    assert response["Content-Disposition"].endswith('-label-studio.json"')
    return response.content.decode()


def test_a_label_studio_export_imported_exported_and_imported_again_gives_the_same_labels(
    labelled, run, owner, owner_client, tmp_path
):
    first = label_set(labelled)
    assert len(first) == 7 and ("q2", None, "adam", "unsupported", "the context says 60 days") in first
    exported = tmp_path / "tasks.json"
    exported.write_text(page_export(owner_client, labelled), encoding="utf-8")

    again = factories.make_campaign(run=run, name="again", overlap=2, user=owner)
    result = labels_import(campaign=again, path=exported)  # no value map and no users table: ours are in the file

    assert result.created == 7 and label_set(again) == first
    adams = Label.objects.get(item__campaign=again, annotator__username="adam")  # a user again, not an external name
    assert adams.annotator_id is not None
    assert json.loads(labels_export(campaign=again, fmt="label-studio").content) == json.loads(exported.read_text())
    assert labels_import(campaign=again, path=exported).created == 0  # idempotent, as every import


def test_the_tasks_fit_the_labelling_config_as_label_studio_checks_them(labelled):
    tasks = json.loads(labels_export(campaign=labelled, fmt="label-studio").content)
    config = ET.fromstring(label_studio_config(labelled))
    objects = {tag.get("name"): tag.get("value") for tag in config.iter("Text")}
    controls = {tag.get("name"): (tag.tag, tag.get("toName")) for tag in config if tag.tag in ("Choices", "TextArea")}
    offered = {choice.get("value") for choice in config.iter("Choice")}
    assert offered == set(Label.Value.values)

    assert (
        sorted(t["data"]["question_id"] for t in tasks) == ["q1", "q2", "q3"]
        and sum(len(t["annotations"]) for t in tasks) == 7
    )
    for task in tasks:
        assert {value[1:] for value in objects.values()} <= set(
            task["data"]
        )  # Label Studio refuses a task without them
        for annotation in task["annotations"]:
            assert set(annotation["completed_by"]) == {"email", "username"}  # found by email in Label Studio
            assert annotation["was_cancelled"] is False and annotation["ground_truth"] is False
            for result in annotation["result"]:
                kind, target = controls[result["from_name"]]
                assert result["to_name"] == target and target in objects
                assert result["type"] == kind.lower()
                if kind == "Choices":
                    assert len(result["value"]["choices"]) == 1 and result["value"]["choices"][0] in offered
                else:
                    assert result["value"]["text"] and all(result["value"]["text"])
    adam = next(a for t in tasks for a in t["annotations"] if a["completed_by"]["username"] == "adam")
    assert adam["completed_by"]["email"] == "adam@example.com"
    assert adam["result"][1]["value"]["text"] == ["the context says 60 days"]


def test_a_claim_campaign_exports_its_claims_and_nothing_of_the_judge(tmp_path, owner, annotator):
    run = factories.make_marked_run(folder=tmp_path, n=4)
    campaign = factories.make_campaign(run=run, name="claims", unit="claim", user=owner, annotators=[annotator])
    factories.label_items(campaign=campaign, user=annotator, value="unsupported", rationale="not in the context")
    content = labels_export(campaign=campaign, fmt="label-studio").content

    for mark in (factories.JUDGE_RATIONALE_MARK, factories.METADATA_MARK, factories.RETRIEVED_MARK):
        assert mark not in content
    tasks = json.loads(content)
    assert len(tasks) == 8 and all(t["data"]["claim"].startswith("Claim ") for t in tasks)
    assert not any(key in json.dumps(t) for t in tasks for key in ("stratum", "judge", "faithfulness"))
    assert {r["to_name"] for t in tasks for a in t["annotations"] for r in a["result"]} == {"claim"}
    assert '<Text name="claim" value="$claim"/>' in label_studio_config(campaign)

    again = factories.make_campaign(run=run, name="claims-again", unit="claim", user=owner)
    path = tmp_path / "claims.json"
    path.write_text(content, encoding="utf-8")
    labels_import(campaign=again, path=path)
    assert label_set(again) == label_set(campaign) and {c for _, c, *_ in label_set(again)} == {0, 1}


def test_the_api_and_the_command_give_what_the_page_gives_and_each_is_recorded(labelled, owner, owner_client, tmp_path):
    page = json.loads(page_export(owner_client, labelled))
    body = owner_client.post(
        f"/api/campaigns/{labelled.name}/labels/", {"format": "label-studio"}, content_type="application/json"
    ).json()
    assert body["format"] == "label-studio" and body["tasks"] == page and body["version"] == 2
    assert body["label_config"] == label_studio_config(labelled)
    assert json.loads(owner_client.get(body["download"]).content) == page

    out, err = StringIO(), StringIO()
    call_command(
        "export_labels",
        labelled.name,
        "--format",
        "label-studio",
        "--output",
        str(tmp_path / "tasks.json"),
        "--label-config",
        str(tmp_path / "config.xml"),
        stdout=out,
        stderr=err,
    )
    assert json.loads((tmp_path / "tasks.json").read_text()) == page
    assert (tmp_path / "config.xml").read_text() == label_studio_config(labelled)
    assert "export v3: labels of 3 items" in err.getvalue()
    assert list(ExportRecord.objects.filter(campaign=labelled).values_list("fmt", flat=True)) == ["label-studio"] * 3
    with pytest.raises(CommandError, match="--label-config goes with --format label-studio"):
        call_command("export_labels", labelled.name, "--label-config", str(tmp_path / "c.xml"), stdout=out)


def test_the_campaign_page_offers_the_export_and_shows_its_labelling_config(labelled, owner_client):
    page = owner_client.get(reverse("labelling:campaign", args=[labelled.name])).content.decode()
    assert reverse("labelling:export", args=[labelled.name, "label-studio"]) in page
    assert '<Choices name="label" toName="answer"' in html.unescape(page)


def test_annotators_reach_no_label_export_by_any_door(labelled, annotator_client):
    assert annotator_client.post(reverse("labelling:export", args=[labelled.name, "label-studio"])).status_code in (
        403,
        404,
    )
    response = annotator_client.post(
        f"/api/campaigns/{labelled.name}/labels/", {"format": "label-studio"}, content_type="application/json"
    )
    assert response.status_code == 403 and not ExportRecord.objects.exists()
