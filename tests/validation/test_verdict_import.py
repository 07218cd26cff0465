"""Verdicts of a new judge config: imported atomically with line-numbered errors, idempotently, and
never from the run's own judge config; through the service, the command and the upload page."""

from __future__ import annotations

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from evalcore.jobs.labelling_kinds import IMPORT_VERDICTS
from evalcore.models import Job
from evalcore.services.problems import ImportFailed
from labelstudio_lite.labelling.models import Verdict, VerdictSet
from labelstudio_lite.labelling.services.verdicts import verdicts_import
from tests.factories import ANSWER_JUDGE, TUNED_JUDGE
from tests.files import write_csv, write_jsonl

from .conftest import Shared, spec_campaign_once


@pytest.fixture(scope="module")
def shared(django_db_setup, django_db_blocker, tmp_path_factory):
    with spec_campaign_once(
        django_db_blocker, tmp_path_factory.mktemp("verdicts"), name="spec-verdicts", heldout_fraction=0.3
    ) as (case, campaign):
        yield Shared(case, campaign.pk)


def good_records(case) -> list[dict]:
    return [
        {"question_id": q, "supported": bool(case.human[q]), "rationale": f"tuned on {q}"} for q in sorted(case.human)
    ]


def bad_records(case) -> list[dict]:
    records = good_records(case)[:10]
    records[2] = {"question_id": "q9999", "supported": True}  # line 3: not an item
    records[4] = {**records[4], "supported": "maybe"}  # line 5: not a boolean
    records[6] = {**records[6], "question_id": records[0]["question_id"]}  # line 7: the item of line 1 again
    return records


def nothing_imported() -> bool:
    return not VerdictSet.objects.exists() and not Verdict.objects.exists()


# ----------------------------------------------------------------------------------------------
# The service
# ----------------------------------------------------------------------------------------------


def test_verdicts_are_imported_for_every_item_with_their_rationales(case, campaign, owner, tmp_path):
    path = write_jsonl(tmp_path / "tuned.jsonl", good_records(case))

    result = verdicts_import(campaign=campaign, path=path, judge_config=TUNED_JUDGE, user=owner)
    verdict_set, created, message = result.verdict_set, result.created, result.message

    assert created
    assert (
        verdict_set.campaign == campaign
        and verdict_set.created_by == owner
        and verdict_set.source_name == "tuned.jsonl"
    )
    assert verdict_set.judge_config.prompt == TUNED_JUDGE["prompt"]
    assert verdict_set.verdicts.count() == 200
    verdict = verdict_set.verdicts.get(item__row__question__qid="q0007")
    assert verdict.supported is bool(case.human["q0007"]) and verdict.rationale == "tuned on q0007"
    heldout = campaign.items.filter(split="heldout").count()
    assert (
        message
        == f"Imported 200 verdicts of {verdict_set.judge_config} ({heldout} of {heldout} held-out items covered)."
    )


def test_verdicts_import_from_csv_too(case, campaign, tmp_path):
    path = write_csv(
        tmp_path / "tuned.csv",
        ["question_id", "supported", "rationale"],
        [(r["question_id"], "true" if r["supported"] else "false", r["rationale"]) for r in good_records(case)],
    )

    result = verdicts_import(campaign=campaign, path=path, judge_config=TUNED_JUDGE)
    verdict_set, created = result.verdict_set, result.created

    assert created and verdict_set.verdicts.filter(supported=False).count() == 50


def test_a_bad_file_is_refused_whole_with_a_numbered_line_for_each_problem(case, campaign, tmp_path):
    path = write_jsonl(tmp_path / "bad.jsonl", bad_records(case))

    with pytest.raises(ImportFailed) as caught:
        verdicts_import(campaign=campaign, path=path, judge_config=TUNED_JUDGE)

    problems = [(p.line, p.field) for p in caught.value.problems]
    assert problems == [(3, "question_id"), (5, "supported"), (7, "question_id")]
    text = str(caught.value)
    assert text.startswith("Nothing was imported: 3 problem(s)")
    assert "bad.jsonl, line 3, field 'question_id': question 'q9999' is not an item of campaign 'spec-verdicts'" in text
    assert "bad.jsonl, line 5, field 'supported': must be true or false, got 'maybe'" in text
    assert "bad.jsonl, line 7, field 'question_id': this item already has a verdict on line 1" in text
    assert nothing_imported()


def test_the_same_file_twice_imports_nothing_new(case, campaign, tmp_path):
    path = write_jsonl(tmp_path / "tuned.jsonl", good_records(case))
    result = verdicts_import(campaign=campaign, path=path, judge_config=TUNED_JUDGE)
    first, created = result.verdict_set, result.created

    result = verdicts_import(campaign=campaign, path=path, judge_config=TUNED_JUDGE)
    again, created_again, message = result.verdict_set, result.created, result.message

    assert created and not created_again
    assert again == first
    assert message == f"Nothing new: these verdicts of {first.judge_config} are already imported."
    assert VerdictSet.objects.count() == 1 and Verdict.objects.count() == 200


def test_another_file_for_a_judge_config_already_imported_is_refused(case, campaign, tmp_path):
    verdicts_import(
        campaign=campaign, path=write_jsonl(tmp_path / "a.jsonl", good_records(case)), judge_config=TUNED_JUDGE
    )

    with pytest.raises(ImportFailed, match="already imported for spec-verdicts from another file"):
        verdicts_import(
            campaign=campaign, path=write_jsonl(tmp_path / "b.jsonl", good_records(case)[:50]), judge_config=TUNED_JUDGE
        )
    assert Verdict.objects.count() == 200


def test_the_runs_own_judge_config_is_refused(case, campaign, tmp_path):
    path = write_jsonl(tmp_path / "same.jsonl", good_records(case))

    with pytest.raises(ImportFailed, match="come from the run's own judge config; a re-measurement needs a different"):
        verdicts_import(campaign=campaign, path=path, judge_config=dict(ANSWER_JUDGE))
    assert nothing_imported()


def test_an_empty_file_or_a_config_without_a_model_is_refused(campaign, tmp_path):
    with pytest.raises(ImportFailed, match="holds no verdicts"):
        verdicts_import(campaign=campaign, path=write_jsonl(tmp_path / "empty.jsonl", []), judge_config=TUNED_JUDGE)
    with pytest.raises(ImportFailed, match="model"):
        verdicts_import(
            campaign=campaign,
            path=write_jsonl(tmp_path / "x.jsonl", [{"question_id": "q0000", "supported": True}]),
            judge_config={"prompt": "no model"},
        )
    assert nothing_imported()


def test_an_answer_campaign_ignores_claim_indexes(case, campaign, tmp_path):
    path = write_jsonl(tmp_path / "with-index.jsonl", [{**r, "claim_index": 0} for r in good_records(case)])

    result = verdicts_import(campaign=campaign, path=path, judge_config=TUNED_JUDGE)
    verdict_set, created = result.verdict_set, result.created

    assert created and verdict_set.verdicts.count() == 200


# ----------------------------------------------------------------------------------------------
# The command
# ----------------------------------------------------------------------------------------------


def command(*args: str) -> str:
    out = io.StringIO()
    call_command("import_verdicts", *args, "--quiet", stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.fixture
def tuned_config(tmp_path):
    path = tmp_path / "tuned.judge.json"
    path.write_text(json.dumps(TUNED_JUDGE))
    return path


def test_the_command_imports_verdicts_and_names_the_verdict_set(case, campaign, tmp_path, tuned_config):
    path = write_jsonl(tmp_path / "tuned.jsonl", good_records(case))

    out = command(str(path), "--campaign", campaign.name, "--judge-config", str(tuned_config))

    verdict_set = VerdictSet.objects.get(campaign=campaign)
    assert out.startswith("Imported 200 verdicts of ")
    assert f"verdict set: {verdict_set.pk}" in out
    assert Job.objects.get(kind=IMPORT_VERDICTS).status == Job.Status.SUCCEEDED


def test_the_command_run_twice_says_nothing_new(case, campaign, tmp_path, tuned_config):
    path = write_jsonl(tmp_path / "tuned.jsonl", good_records(case))
    command(str(path), "--campaign", campaign.name, "--judge-config", str(tuned_config))

    out = command(str(path), "--campaign", campaign.name, "--judge-config", str(tuned_config))

    assert out.startswith("Nothing new: ")
    assert Verdict.objects.count() == 200


def test_the_command_reports_every_bad_line_and_imports_nothing(case, campaign, tmp_path, tuned_config):
    path = write_jsonl(tmp_path / "bad.jsonl", bad_records(case))

    with pytest.raises(CommandError) as caught:
        command(str(path), "--campaign", campaign.name, "--judge-config", str(tuned_config))

    for line in ("line 3, field 'question_id'", "line 5, field 'supported'", "line 7, field 'question_id'"):
        assert line in str(caught.value)
    assert nothing_imported()
    assert Job.objects.get(kind=IMPORT_VERDICTS).status == Job.Status.FAILED


def test_the_command_refuses_the_runs_own_judge_config(case, campaign, tmp_path):
    config = tmp_path / "same.judge.json"
    config.write_text(json.dumps(ANSWER_JUDGE))
    path = write_jsonl(tmp_path / "same.jsonl", good_records(case))

    with pytest.raises(CommandError, match="run's own judge config"):
        command(str(path), "--campaign", campaign.name, "--judge-config", str(config))
    assert nothing_imported()


def test_the_command_refuses_a_missing_file_an_unknown_campaign_and_an_unreadable_config(
    case, campaign, tmp_path, tuned_config
):
    path = write_jsonl(tmp_path / "tuned.jsonl", good_records(case))
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")

    with pytest.raises(CommandError, match="no such file"):
        command(str(tmp_path / "missing.jsonl"), "--campaign", campaign.name, "--judge-config", str(tuned_config))
    with pytest.raises(CommandError, match="no campaign named 'nope'"):
        command(str(path), "--campaign", "nope", "--judge-config", str(tuned_config))
    with pytest.raises(CommandError, match="broken.json: the judge config holds malformed JSON"):
        command(str(path), "--campaign", campaign.name, "--judge-config", str(broken))
    assert nothing_imported()


# ----------------------------------------------------------------------------------------------
# The upload page
# ----------------------------------------------------------------------------------------------


def upload(client, campaign, records, config, name="tuned.jsonl"):
    content = "".join(json.dumps(r) + "\n" for r in records).encode()
    return client.post(
        reverse("labelling:verdicts", args=[campaign.name]),
        {
            "file": SimpleUploadedFile(name, content, content_type="application/x-ndjson"),
            "judge_config": json.dumps(config) if isinstance(config, dict) else config,
        },
    )


def test_the_upload_page_imports_verdicts_as_a_job_and_links_to_their_report(case, campaign, owner, owner_client):
    response = upload(owner_client, campaign, good_records(case), TUNED_JUDGE)

    job = Job.objects.get(kind=IMPORT_VERDICTS)
    assert response.status_code == 302 and response["Location"] == reverse("evalcore:job", args=[job.pk])
    assert job.status == Job.Status.SUCCEEDED and job.created_by == owner
    verdict_set = VerdictSet.objects.get(campaign=campaign)
    assert verdict_set.created_by == owner and verdict_set.verdicts.count() == 200
    assert job.result["url"] == reverse("labelling:report", args=[campaign.name]) + f"?verdicts={verdict_set.pk}"
    page = owner_client.get(reverse("labelling:report", args=[campaign.name])).content.decode()
    assert f"?verdicts={verdict_set.pk}" in page and f"Re-measure {verdict_set.judge_config}" in page


def test_the_same_upload_twice_creates_nothing_new(case, campaign, owner_client):
    upload(owner_client, campaign, good_records(case), TUNED_JUDGE)

    upload(owner_client, campaign, good_records(case), TUNED_JUDGE)

    second = Job.objects.filter(kind=IMPORT_VERDICTS).order_by("pk").last()
    assert second.status == Job.Status.SUCCEEDED and second.result["created"] is False
    assert second.result["message"].startswith("Nothing new")
    assert VerdictSet.objects.count() == 1 and Verdict.objects.count() == 200


def test_a_bad_upload_fails_its_job_with_numbered_lines_and_imports_nothing(case, campaign, owner_client):
    upload(owner_client, campaign, bad_records(case), TUNED_JUDGE, name="bad.jsonl")

    job = Job.objects.get(kind=IMPORT_VERDICTS)
    assert job.status == Job.Status.FAILED
    assert [(p["line"], p["field"]) for p in job.result["problems"]] == [
        (3, "question_id"),
        (5, "supported"),
        (7, "question_id"),
    ]
    assert "bad.jsonl, line 5, field 'supported'" in job.error
    assert nothing_imported()
    page = owner_client.get(reverse("evalcore:job", args=[job.pk])).content.decode()
    assert "line 3" in page and "line 7" in page


def test_an_upload_with_the_runs_own_judge_config_fails_with_the_reason(case, campaign, owner_client):
    upload(owner_client, campaign, good_records(case), ANSWER_JUDGE)

    job = Job.objects.get(kind=IMPORT_VERDICTS)
    assert job.status == Job.Status.FAILED and "the run's own judge config" in job.error
    assert nothing_imported()


def test_an_upload_with_a_malformed_judge_config_is_refused_before_any_job(case, campaign, owner_client):
    response = upload(owner_client, campaign, good_records(case), "{not json")

    assert response.status_code == 400  # the report page again, with the form as it was sent
    assert not Job.objects.exists() and nothing_imported()
    page = response.content.decode()
    assert "malformed JSON" in page and "{not json</textarea>" in page
