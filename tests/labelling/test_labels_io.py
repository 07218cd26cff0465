"""Labels made elsewhere come in (CSV or JSON Lines, atomic, idempotent, line-numbered errors); labels go out."""

from __future__ import annotations

import csv
import io
import json
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from evalcore.services.problems import ImportFailed
from labelstudio_lite.labelling.models import ExportRecord, Item, Label
from labelstudio_lite.labelling.services.label_import import labels_import
from tests.factories import label_items
from tests.files import write_csv, write_jsonl

HEADER = ["question_id", "label", "annotator", "rationale"]


def counters(campaign) -> set[tuple[str, int, int]]:
    return {
        (qid, slots, labels)
        for qid, slots, labels in Item.objects.filter(campaign=campaign).values_list(
            "row__question__qid", "slots_taken", "label_count"
        )
        if slots or labels
    }


def problems_of(error: ImportFailed) -> list[tuple[int | None, str | None, str]]:
    return [(p.line, p.field, p.message) for p in error.problems]


# ----------------------------------------------------------------------------------------------
# Imports that succeed
# ----------------------------------------------------------------------------------------------


def test_a_csv_of_labels_is_imported_with_users_and_external_annotators(tmp_path, campaign, annotator):
    path = write_csv(
        tmp_path / "labels.csv",
        HEADER,
        [
            ["q0000", "supported", "adam", "says 10 days"],
            ["q0000", "unsupported", "ext-anna", ""],
            ["q0001", "cant_tell", "ext-anna", "chunk cut"],
            ["q0002", "Unsupported", "ext-ben", ""],
        ],
    )

    result = labels_import(campaign=campaign, path=path)

    assert (result.created, result.unchanged) == (4, 0)
    assert result.external_annotators == ["ext-anna", "ext-ben"]
    assert result.message == "Imported 4 labels into 'faith'. External annotators (not users): ext-anna, ext-ben."
    rows = set(
        Label.objects.values_list(
            "item__row__question__qid", "annotator__username", "external_annotator", "value", "rationale", "source"
        )
    )
    assert rows == {
        ("q0000", "adam", "", "supported", "says 10 days", "import"),
        ("q0000", None, "ext-anna", "unsupported", "", "import"),
        ("q0001", None, "ext-anna", "cant_tell", "chunk cut", "import"),
        ("q0002", None, "ext-ben", "unsupported", "", "import"),
    }
    # can't tell takes no slot; the two labels on q0000 fill it
    assert counters(campaign) == {("q0000", 2, 2), ("q0002", 1, 1)}


def test_imported_labels_count_against_the_overlap_of_people_labelling_in_the_app(tmp_path, campaign, annotator):
    labels_import(
        campaign=campaign,
        path=write_csv(
            tmp_path / "l.csv",
            HEADER,
            [
                ["q0000", "supported", "ext-anna", ""],
                ["q0000", "supported", "ext-ben", ""],
            ],
        ),
    )

    mine = label_items(campaign=campaign, user=annotator)

    assert "q0000" not in {label.item.row.question.qid for label in mine}
    assert Label.objects.filter(item__row__question__qid="q0000").count() == 2


def test_a_jsonl_of_claim_labels_names_the_claim_index(tmp_path, small_run, make_campaign):
    campaign = make_campaign(run=small_run, name="claims", unit="claim", overlap=1)
    path = write_jsonl(
        tmp_path / "labels.jsonl",
        [
            {
                "question_id": "q0003",
                "claim_index": 1,
                "label": "unsupported",
                "annotator": "ext-anna",
                "rationale": "no date",
            },
            {"question_id": "q0003", "claim_index": 0, "label": "supported", "annotator": "ext-anna"},
        ],
    )

    result = labels_import(campaign=campaign, path=path)

    assert result.created == 2
    assert set(Label.objects.values_list("item__row__question__qid", "item__claim_index", "value")) == {
        ("q0003", 1, "unsupported"),
        ("q0003", 0, "supported"),
    }


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_importing_the_same_file_twice_says_nothing_new(tmp_path, campaign, fmt):
    records = [["q0000", "supported", "ext-anna", ""], ["q0001", "unsupported", "adam", "x"]]
    if fmt == "csv":
        path = write_csv(tmp_path / "labels.csv", HEADER, records)
    else:
        path = write_jsonl(tmp_path / "labels.jsonl", [dict(zip(HEADER, r)) for r in records])

    first = labels_import(campaign=campaign, path=path)
    before = (list(Label.objects.order_by("pk").values_list("pk", "value", "updated_at")), counters(campaign))
    second = labels_import(campaign=campaign, path=path)

    assert first.created == 2
    assert (second.created, second.unchanged) == (0, 2)
    assert second.message == "Nothing new: all 2 labels were already in campaign 'faith'."
    assert (list(Label.objects.order_by("pk").values_list("pk", "value", "updated_at")), counters(campaign)) == before


def test_a_file_with_some_new_labels_adds_only_those(tmp_path, campaign):
    labels_import(
        campaign=campaign, path=write_csv(tmp_path / "a.csv", HEADER, [["q0000", "supported", "ext-anna", ""]])
    )

    result = labels_import(
        campaign=campaign,
        path=write_csv(
            tmp_path / "b.csv",
            HEADER,
            [
                ["q0000", "supported", "ext-anna", ""],
                ["q0001", "supported", "ext-anna", ""],
            ],
        ),
    )

    assert (result.created, result.unchanged) == (1, 1)
    assert "1 already there" in result.message
    assert Label.objects.count() == 2


# ----------------------------------------------------------------------------------------------
# Refused imports: every problem with its line, and nothing written
# ----------------------------------------------------------------------------------------------


def test_problems_are_reported_with_their_line_and_nothing_is_written(tmp_path, campaign):
    path = write_csv(
        tmp_path / "bad.csv",
        HEADER,
        [
            ["q0000", "supported", "ext-anna", ""],  # line 2: fine
            ["q9999", "supported", "ext-anna", ""],  # line 3: no such question
            ["q0001", "yes", "ext-anna", ""],  # line 4: bad label
            ["q0000", "unsupported", "ext-anna", ""],  # line 5: ext-anna labels q0000 twice
            ["q0002", "supported", "", ""],  # line 6: no annotator
        ],
    )

    with pytest.raises(ImportFailed) as refused:
        labels_import(campaign=campaign, path=path)

    problems = problems_of(refused.value)
    assert [(line, field) for line, field, _ in problems] == [
        (3, "question_id"),
        (4, "label"),
        (5, "annotator"),
        (6, "annotator"),
    ]
    assert "question 'q9999' is not an item of campaign 'faith'" in problems[0][2]
    assert "must be supported, unsupported or cant_tell, got 'yes'" in problems[1][2]
    assert "labels this item twice (first on line 2)" in problems[2][2]
    text = str(refused.value)
    assert text.startswith("Nothing was imported: 4 problem(s)")
    assert "bad.csv, line 3, field 'question_id'" in text
    assert not Label.objects.exists() and counters(campaign) == set()


def test_labels_beyond_the_overlap_are_refused_with_their_line_and_nothing_is_written(tmp_path, campaign):
    path = write_jsonl(
        tmp_path / "over.jsonl",
        [
            {"question_id": "q0001", "label": "supported", "annotator": "ext-anna"},
            {"question_id": "q0000", "label": "supported", "annotator": "ext-anna"},
            {"question_id": "q0000", "label": "supported", "annotator": "ext-ben"},
            {"question_id": "q0000", "label": "unsupported", "annotator": "ext-cleo"},
        ],
    )

    with pytest.raises(ImportFailed) as refused:
        labels_import(campaign=campaign, path=path)

    assert problems_of(refused.value) == [
        (4, "question_id", "this item already has its 2 label(s) (the campaign's overlap)")
    ]
    assert not Label.objects.exists() and counters(campaign) == set()


def test_a_label_that_contradicts_one_already_stored_is_refused(tmp_path, campaign):
    labels_import(
        campaign=campaign, path=write_csv(tmp_path / "a.csv", HEADER, [["q0000", "supported", "ext-anna", ""]])
    )

    with pytest.raises(ImportFailed) as refused:
        labels_import(
            campaign=campaign,
            path=write_csv(
                tmp_path / "b.csv",
                HEADER,
                [
                    ["q0001", "supported", "ext-anna", ""],
                    ["q0000", "unsupported", "ext-anna", ""],
                ],
            ),
        )

    assert problems_of(refused.value)[0][:2] == (3, "label")
    assert "already labelled this item 'supported'" in problems_of(refused.value)[0][2]
    assert list(Label.objects.values_list("item__row__question__qid", "value")) == [("q0000", "supported")]


def test_claim_campaigns_need_the_claim_index_and_answer_campaigns_refuse_it(
    tmp_path, small_run, make_campaign, campaign
):
    claims = make_campaign(run=small_run, name="claims", unit="claim")
    no_index = write_csv(tmp_path / "a.csv", ["question_id", "label", "annotator"], [["q0000", "supported", "x"]])
    with_index = write_csv(
        tmp_path / "b.csv", ["question_id", "claim_index", "label", "annotator"], [["q0000", "1", "supported", "x"]]
    )
    out_of_range = write_csv(
        tmp_path / "c.csv", ["question_id", "claim_index", "label", "annotator"], [["q0000", "7", "supported", "x"]]
    )

    with pytest.raises(ImportFailed) as missing:
        labels_import(campaign=claims, path=no_index)
    with pytest.raises(ImportFailed) as unexpected:
        labels_import(campaign=campaign, path=with_index)
    with pytest.raises(ImportFailed) as unknown:
        labels_import(campaign=claims, path=out_of_range)

    assert problems_of(missing.value)[0][:2] == (2, "claim_index")
    assert (
        problems_of(unexpected.value)[0][:2] == (2, "claim_index")
        and "answer campaign" in problems_of(unexpected.value)[0][2]
    )
    assert "question 'q0000', claim 7 is not an item" in problems_of(unknown.value)[0][2]
    assert not Label.objects.exists()


def test_an_empty_file_or_a_parquet_file_is_refused(tmp_path, campaign):
    with pytest.raises(ImportFailed, match="holds no labels"):
        labels_import(campaign=campaign, path=write_csv(tmp_path / "empty.csv", HEADER, []))
    (tmp_path / "labels.parquet").write_bytes(b"PAR1")
    with pytest.raises(ImportFailed, match="CSV or JSON Lines"):
        labels_import(campaign=campaign, path=tmp_path / "labels.parquet")


def test_a_malformed_jsonl_line_is_reported_with_its_number(tmp_path, campaign):
    path = write_jsonl(
        tmp_path / "broken.jsonl", [{"question_id": "q0000", "label": "supported", "annotator": "x"}, "{not json"]
    )
    with pytest.raises(ImportFailed) as refused:
        labels_import(campaign=campaign, path=path)
    assert refused.value.problems[0].line == 2
    assert not Label.objects.exists()


# ----------------------------------------------------------------------------------------------
# The command and the page
# ----------------------------------------------------------------------------------------------


def test_the_import_labels_command_imports_and_is_idempotent(tmp_path, campaign):
    path = write_csv(
        tmp_path / "labels.csv", HEADER, [["q0000", "supported", "ext-anna", ""], ["q0001", "unsupported", "adam", ""]]
    )

    first, second = StringIO(), StringIO()
    call_command("import_labels", str(path), "--campaign", "faith", "--quiet", stdout=first, stderr=StringIO())
    call_command("import_labels", str(path), "--campaign", "faith", "--quiet", stdout=second, stderr=StringIO())

    assert "Imported 2 labels into 'faith'. External annotators (not users): ext-anna." in first.getvalue()
    assert "Nothing new: all 2 labels were already in campaign 'faith'." in second.getvalue()
    assert Label.objects.count() == 2


def test_the_import_labels_command_reports_problems_with_lines_and_writes_nothing(tmp_path, campaign):
    path = write_csv(
        tmp_path / "bad.csv", HEADER, [["q0000", "supported", "ext-anna", ""], ["q0000", "perhaps", "ext-ben", ""]]
    )

    with pytest.raises(CommandError, match=r"bad.csv, line 3, field 'label'"):
        call_command("import_labels", str(path), "--campaign", "faith", "--quiet", stdout=StringIO(), stderr=StringIO())
    assert not Label.objects.exists()


def test_the_import_labels_command_names_a_missing_file_or_campaign(tmp_path, campaign):
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_labels", str(tmp_path / "nope.csv"), "--campaign", "faith", stdout=StringIO())
    path = write_csv(tmp_path / "labels.csv", HEADER, [["q0000", "supported", "x", ""]])
    with pytest.raises(CommandError, match="no campaign named 'other'"):
        call_command("import_labels", str(path), "--campaign", "other", stdout=StringIO())


def test_an_eval_owner_imports_labels_from_the_overview_page(campaign, owner_client):
    upload = SimpleUploadedFile(
        "team.csv", b"question_id,label,annotator\nq0000,supported,ext-anna\nq0001,unsupported,ext-anna\n"
    )

    response = owner_client.post(reverse("labelling:import", args=[campaign.name]), {"file": upload})

    assert response.status_code == 302 and "/jobs/" in response["Location"]
    assert Label.objects.filter(external_annotator="ext-anna").count() == 2
    job_page = owner_client.get(response["Location"]).content.decode()
    assert "Imported 2 labels" in job_page


# ----------------------------------------------------------------------------------------------
# Export
# ----------------------------------------------------------------------------------------------


@pytest.fixture
def labelled(campaign, annotator, other_annotator, tmp_path):
    label_items(campaign=campaign, user=annotator, rationale="adam says so")
    label_items(
        campaign=campaign,
        user=other_annotator,
        value=lambda item: "unsupported" if item.row.question.qid == "q0004" else "supported",
    )
    return campaign


def export_download(client, campaign, fmt: str):
    """Export the labels as the campaign page does: a POST that records the export, then a GET of the file."""
    recorded = client.post(reverse("labelling:export", args=[campaign.name, fmt]))
    assert recorded.status_code == 302, recorded.status_code
    return client.get(recorded["Location"])


def test_the_csv_export_holds_every_label_with_its_final_label(labelled, owner_client):
    response = export_download(owner_client, labelled, "csv")

    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert 'filename="faith-labels-v1-csv.csv"' in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == 24 == Label.objects.count()
    assert {(r["question_id"], r["annotator"]) for r in rows} == {
        (f"q{i:04d}", who) for i in range(12) for who in ("adam", "bea")
    }
    q4 = [r for r in rows if r["question_id"] == "q0004"]
    assert {r["label"] for r in q4} == {"supported", "unsupported"} and {r["final_status"] for r in q4} == {"conflict"}
    q0 = [r for r in rows if r["question_id"] == "q0000"]
    assert {(r["final_label"], r["final_status"]) for r in q0} == {("supported", "agreed")}
    assert {r["rationale"] for r in rows if r["annotator"] == "adam"} == {"adam says so"}
    assert {r["split"] for r in rows} <= {"tuning", "heldout"}


def test_the_jsonl_export_holds_the_same_labels(labelled, owner_client, tmp_path):
    labels_import(
        campaign=labelled, path=write_csv(tmp_path / "x.csv", HEADER, [["q0000", "cant_tell", "ext-anna", "unsure"]])
    )

    response = export_download(owner_client, labelled, "jsonl")

    rows = [json.loads(line) for line in response.content.decode().splitlines()]
    assert len(rows) == 25
    external = [r for r in rows if r["external"]]
    assert external == [
        {**external[0], "question_id": "q0000", "annotator": "ext-anna", "label": "cant_tell", "rationale": "unsure"}
    ]
    assert all(r["claim_index"] is None for r in rows)


def test_the_owner_labels_api_exports_every_label_with_a_post_that_records_it(labelled, owner, owner_client):
    assert owner_client.get(f"/api/campaigns/{labelled.name}/labels/").status_code == 405  # a read records nothing
    assert not ExportRecord.objects.exists()
    body = owner_client.post(f"/api/campaigns/{labelled.name}/labels/").json()
    rows = body["labels"]
    assert len(rows) == 24 and {r["annotator"] for r in rows} == {"adam", "bea"} and body["version"] == 1

    record = ExportRecord.objects.get(campaign=labelled)
    assert (record.kind, record.fmt, record.created_by) == ("labels", "jsonl", owner)
    assert sorted(record.item_ids) == sorted(Item.objects.filter(campaign=labelled).values_list("pk", flat=True))


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_the_export_labels_command_writes_what_the_page_gives_and_records_the_export(
    labelled, owner, owner_client, fmt, tmp_path
):
    page = export_download(owner_client, labelled, fmt).content.decode()
    out, err = StringIO(), StringIO()

    call_command("export_labels", labelled.name, "--format", fmt, stdout=out, stderr=err)
    call_command(
        "export_labels", labelled.name, "--format", fmt, "--output", str(tmp_path / f"labels.{fmt}"), stderr=err
    )

    assert out.getvalue() == page == (tmp_path / f"labels.{fmt}").read_bytes().decode()
    assert (
        "export v2: labels of 12 items" in err.getvalue()
        and f"export v3: labels of 12 items written to {tmp_path}" in err.getvalue()
    )
    assert list(
        ExportRecord.objects.filter(campaign=labelled).order_by("version").values_list("version", "created_by")
    ) == [(1, owner.pk), (2, None), (3, None)]


def test_the_export_labels_command_refuses_an_unknown_campaign(db):
    with pytest.raises(CommandError, match="no campaign named 'nope'"):
        call_command("export_labels", "nope")


def test_an_unknown_export_format_is_404_and_a_get_of_the_export_url_records_nothing(labelled, owner_client):
    assert owner_client.post(reverse("labelling:export", args=[labelled.name, "xlsx"])).status_code == 404
    assert owner_client.get(reverse("labelling:export", args=[labelled.name, "csv"])).status_code == 405
    assert not ExportRecord.objects.exists()
