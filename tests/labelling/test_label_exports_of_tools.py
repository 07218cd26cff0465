"""Labels made in Label Studio (JSON, JSON_MIN, CSV), Argilla and Langfuse, as those tools export them
(tests/fixtures/, made by tests/fixtures/regenerate.py): the label field, a value map, user ids named
from a users table, unfinished labels skipped and counted, items matched by question id or by text."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command

from evalcore.services.evalsets import evalset_import
from evalcore.services.problems import ImportFailed
from evalcore.services.runs import run_import
from labelstudio_lite.labelling.models import Label
from labelstudio_lite.labelling.services.label_import import labels_import
from labelstudio_lite.labelling.services.label_sources import LabelSource, read_users
from tests import factories

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LS = FIXTURES / "label_studio"
ARGILLA = FIXTURES / "argilla"
VALUES = {"Supported": "supported", "Not supported": "unsupported"}

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign(owner):
    """Every answer of a three-question run (q1, q2, q3), two labels an item."""
    evalset_import(path=FIXTURES / "langfuse" / "dataset_items.jsonl", name="support")
    run = run_import(path=FIXTURES / "ragas" / "run1_with_id.csv", evalset="support", name="r1").run
    return factories.make_campaign(run=run, name="tools", overlap=2, user=owner)


def labels(campaign) -> set[tuple[str, str, str]]:
    return {
        (label.item.row.question.qid, label.external_annotator or label.annotator.username, label.value)
        for label in Label.objects.filter(item__campaign=campaign).select_related("item__row__question", "annotator")
    }


LS_LABELS = {
    ("q1", "alice", "supported"),
    ("q1", "bob", "supported"),
    ("q2", "alice", "supported"),
    ("q3", "alice", "supported"),
    ("q3", "bob", "unsupported"),
}


def test_a_label_studio_json_export_is_imported_with_users_named_and_cancelled_and_drafts_skipped(campaign):
    source = LabelSource(value_map=VALUES, users=read_users(LS / "users.json"))
    result = labels_import(campaign=campaign, path=LS / "export.json", source=source)
    assert labels(campaign) == LS_LABELS
    assert result.skipped == {"cancelled": 1, "draft": 1}
    assert "Skipped, not labels: 1 cancelled, 1 draft." in result.message


@pytest.mark.parametrize("file", ["export_min.json", "export.csv"])
def test_label_studio_json_min_and_csv_exports_name_the_label_column_after_the_control_tag(campaign, file):
    source = LabelSource(value_map=VALUES, users=read_users(LS / "users.json"), label_field="support")
    labels_import(campaign=campaign, path=LS / file, source=source)
    assert labels(campaign) == LS_LABELS


def test_a_label_studio_export_without_the_label_column_named_says_which_columns_could_be_it(campaign):
    with pytest.raises(
        ImportFailed, match=r"name the control tag's column with --label-field \(\['answer', 'support'\]\)"
    ):
        labels_import(campaign=campaign, path=LS / "export_min.json")


def test_numeric_label_studio_user_ids_without_a_users_table_are_refused_not_imported_as_names(campaign):
    with pytest.raises(ImportFailed, match="'11' is a Label Studio user id, not a name; give a users table"):
        labels_import(campaign=campaign, path=LS / "export.json", source=LabelSource(value_map=VALUES))
    assert not Label.objects.exists()


def test_a_value_the_export_uses_and_no_map_names_is_refused_with_how_to_map_it(campaign):
    with pytest.raises(ImportFailed, match="got 'Not supported'; map the export's values"):
        labels_import(
            campaign=campaign, path=LS / "export.json", source=LabelSource(users=read_users(LS / "users.json"))
        )


def test_label_studio_tasks_can_be_matched_to_questions_by_their_text(campaign):
    source = LabelSource(value_map=VALUES, users=read_users(LS / "users.json"), match="text")
    labels_import(campaign=campaign, path=LS / "export.json", source=source)
    assert labels(campaign) == LS_LABELS


def test_the_same_label_studio_export_twice_creates_nothing(campaign):
    source = LabelSource(value_map=VALUES, users=read_users(LS / "users.json"))
    labels_import(campaign=campaign, path=LS / "export.json", source=source)
    again = labels_import(campaign=campaign, path=LS / "export.json", source=source)
    assert again.created == 0 and again.message.startswith("Nothing new")


def test_argilla_flattened_records_keep_submitted_responses_only(campaign):
    source = LabelSource(value_map=VALUES, users=read_users(ARGILLA / "users.json"))
    result = labels_import(campaign=campaign, path=ARGILLA / "records_flat.json", source=source)
    assert labels(campaign) == {
        ("q1", "alice", "supported"),
        ("q1", "bob", "unsupported"),
        ("q2", "alice", "supported"),
        ("q3", "alice", "unsupported"),
    }
    assert result.skipped == {"draft": 2, "discarded": 1}


def test_argillas_nested_export_which_drops_response_statuses_is_refused(campaign):
    source = LabelSource(value_map=VALUES, users=read_users(ARGILLA / "users.json"))
    with pytest.raises(ImportFailed, match="carry no status"):
        labels_import(campaign=campaign, path=ARGILLA / "records.json", source=source)


def test_langfuse_annotation_scores_become_labels_and_eval_scores_are_not_labels(campaign):
    result = labels_import(
        campaign=campaign,
        path=FIXTURES / "langfuse" / "scores.jsonl",
        source=LabelSource(value_map=VALUES, users={"user-alice": "alice", "user-bob": "bob"}),
    )
    assert len(labels(campaign)) == 6 and ("q3", "bob", "unsupported") in labels(campaign)
    assert result.skipped == {"eval score": 3}


def test_the_import_labels_command_takes_every_option(campaign, capsys):
    call_command(
        "import_labels",
        str(LS / "export_min.json"),
        "--campaign",
        "tools",
        "--label-field",
        "support",
        "--value-map",
        "Supported=supported,Not supported=unsupported",
        "--users",
        str(LS / "users.json"),
        "--quiet",
    )
    assert "Imported 5 labels" in capsys.readouterr().out
    assert labels(campaign) == LS_LABELS


def test_the_upload_form_takes_a_label_studio_export_with_its_options(campaign, owner_client):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.urls import reverse

    response = owner_client.post(
        reverse("labelling:import", args=[campaign.name]),
        {
            "file": SimpleUploadedFile("export.json", (LS / "export.json").read_bytes()),
            "users": SimpleUploadedFile("users.json", (LS / "users.json").read_bytes()),
            "value_map": "Supported=supported, Not supported=unsupported",
            "format": "label-studio",
            "match": "id",
        },
    )
    assert response.status_code == 302 and "/jobs/" in response["Location"]
    assert labels(campaign) == LS_LABELS
    assert "1 cancelled, 1 draft" in owner_client.get(response["Location"]).content.decode()


def test_the_api_takes_an_argilla_export_with_its_options(campaign, owner_client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = owner_client.post(
        f"/api/campaigns/{campaign.name}/labels/import/",
        {
            "file": SimpleUploadedFile("records.json", (ARGILLA / "records_flat.json").read_bytes()),
            "users": SimpleUploadedFile("users.json", (ARGILLA / "users.json").read_bytes()),
            "value_map": '{"Supported": "supported", "Not supported": "unsupported"}',
        },
    )
    assert response.status_code == 202, response.content
    job = owner_client.get(response["Location"]).json()
    assert job["status"] == "succeeded" and "2 draft" in job["result"]["message"]
    assert len(labels(campaign)) == 4


def test_annotators_cannot_import_labels_through_the_api(campaign, annotator_client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = annotator_client.post(
        f"/api/campaigns/{campaign.name}/labels/import/",
        {"file": SimpleUploadedFile("records.json", (ARGILLA / "records_flat.json").read_bytes())},
    )
    assert response.status_code == 403 and not Label.objects.exists()


def test_a_label_studio_csv_without_its_label_field_says_so_once_not_once_a_line(campaign):
    with pytest.raises(ImportFailed) as refusal:
        labels_import(campaign=campaign, path=LS / "export.csv")
    assert len(refusal.value.problems) == 1
    assert "--label-field" in refusal.value.problems[0].message


PHOENIX = FIXTURES / "phoenix"
PHOENIX_LABELS = {
    ("q1", "alice", "supported"),
    ("q1", "bob", "supported"),
    ("q2", "alice", "supported"),
    ("q3", "alice", "supported"),
    ("q3", "bob", "unsupported"),
}


@pytest.mark.parametrize("file", ["span_annotations.parquet", "span_annotations.csv"])
def test_phoenix_human_annotations_become_labels_and_llm_ones_are_skipped(campaign, file):
    result = labels_import(campaign=campaign, path=PHOENIX / file)  # detected from the content
    assert labels(campaign) == PHOENIX_LABELS
    assert result.skipped == {"llm annotation": 3} and "Skipped, not labels: 3 llm annotation." in result.message
    assert set(Label.objects.values_list("rationale", flat=True)) == {"checked the context"}  # the explanation
    assert set(Label.objects.values_list("external_annotator", flat=True)) == {"alice", "bob"}  # its identifier
    assert not Label.objects.filter(value="hallucinated").exists()


def test_phoenix_annotations_match_questions_by_the_spans_input(campaign):
    labels_import(campaign=campaign, path=PHOENIX / "span_annotations.parquet", source=LabelSource(match="text"))
    assert labels(campaign) == PHOENIX_LABELS


def test_phoenix_annotations_are_taken_by_their_annotation_name(campaign):
    result = labels_import(
        campaign=campaign, path=PHOENIX / "span_annotations.csv", source=LabelSource(label_field="support")
    )
    assert result.created == 5 and labels(campaign) == PHOENIX_LABELS


def test_phoenix_annotations_through_the_command_and_twice_create_nothing_new(campaign, capsys):
    call_command("import_labels", str(PHOENIX / "span_annotations.parquet"), "--campaign", "tools", "--quiet")
    call_command(
        "import_labels", str(PHOENIX / "span_annotations.csv"), "--campaign", "tools", "--format", "phoenix", "--quiet"
    )
    out = capsys.readouterr().out
    assert "Imported 5 labels" in out and "Nothing new: all 5 labels were already in campaign 'tools'." in out
    assert labels(campaign) == PHOENIX_LABELS


def test_a_phoenix_label_named_by_another_annotation_is_skipped_not_imported(campaign):
    with pytest.raises(ImportFailed, match="the file holds no labels"):
        labels_import(
            campaign=campaign, path=PHOENIX / "span_annotations.csv", source=LabelSource(label_field="correctness")
        )
    assert not Label.objects.exists()


def test_the_api_and_the_upload_form_take_phoenix_annotations(campaign, owner_client):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.urls import reverse

    response = owner_client.post(
        f"/api/campaigns/{campaign.name}/labels/import/",
        {"file": SimpleUploadedFile("annotations.parquet", (PHOENIX / "span_annotations.parquet").read_bytes())},
    )
    assert response.status_code == 202, response.content
    job = owner_client.get(response["Location"]).json()
    assert job["status"] == "succeeded" and "3 llm annotation" in job["result"]["message"]
    assert labels(campaign) == PHOENIX_LABELS
    page = owner_client.post(
        reverse("labelling:import", args=[campaign.name]),
        {"file": SimpleUploadedFile("annotations.csv", (PHOENIX / "span_annotations.csv").read_bytes())},
    )
    assert page.status_code == 302 and "Nothing new" in owner_client.get(page["Location"]).content.decode()
