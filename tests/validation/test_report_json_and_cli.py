"""One report, three faces: the page, the API and ``judge_report --json`` give the same numbers.
Disagreement exports from the CLI, the page and the API are versioned and downloadable again."""

from __future__ import annotations

import csv
import html
import io
import json
import re

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from labelstudio_lite.labelling.models import ExportRecord
from labelstudio_lite.labelling.services.exports import disagreements_export
from labelstudio_lite.labelling.services.judge_report import judge_report

from .conftest import Shared, spec_campaign_once


@pytest.fixture(scope="module")
def shared(django_db_setup, django_db_blocker, tmp_path_factory):
    with spec_campaign_once(django_db_blocker, tmp_path_factory.mktemp("json"), name="spec-json") as (case, campaign):
        yield Shared(case, campaign.pk)


def cli(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def text_of(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


# ----------------------------------------------------------------------------------------------
# The same report as JSON
# ----------------------------------------------------------------------------------------------


def test_the_api_gives_the_report_as_json(owner_client, campaign):
    response = owner_client.get(f"/api/campaigns/{campaign.name}/judge-report/")

    assert response.status_code == 200
    body = response.json()
    assert body == json.loads(json.dumps(judge_report(campaign).as_dict(), default=str))
    assert body["overall"]["agreement"] == 0.85 and round(body["overall"]["kappa"], 3) == 0.559
    assert body["overall"]["miss_sentence"] == "the judge passed 22 of the 50 answers people found unsupported"


def test_the_json_report_keeps_its_keys(campaign):
    report = judge_report(campaign).as_dict()

    assert list(report) == [
        "campaign",
        "run",
        "eval_set",
        "unit",
        "unit_word",
        "question",
        "metric",
        "judge",
        "thresholds",
        "verdict",
        "warnings",
        "statuses",
        "overall",
        "slices",
        "oversampled",
        "leakage",
        "heldout_spent",
        "corrected",
        "more_labels",
        "next_labels",
        "label_set",
        "guideline_version",
        "agreement",
        "certificate",
        "slice_certificates",
        "failure",
        "stale",
        "mean_score",
        "mean_score_note",
    ]
    assert list(report["overall"]) == [
        "n",
        "agreement",
        "kappa",
        "kappa_low",
        "kappa_high",
        "kappa_undefined",
        "confusion",
        "people_unsupported_rate",
        "judge_unsupported_rate",
        "failures",
        "caught",
        "missed",
        "miss_rate",
        "miss_low",
        "miss_high",
        "miss_sentence",
        "prevalence_sentence",
        "false_fails",
        "false_fail_rate",
        "false_fail_low",
        "false_fail_high",
        "weighted",
    ]
    assert all(list(s) == ["slice", *report["overall"]] for s in report["slices"])
    assert list(report["judge"]) == ["model", "model_version", "prompt_hash", "config_hash", "source"]
    assert list(report["verdict"]) == ["fit", "line"] and list(report["thresholds"]) == ["kappa", "miss_rate"]
    assert list(report["corrected"]) == [
        "raw",
        "corrected",
        "low",
        "high",
        "sensitivity",
        "specificity",
        "note",
        "run_items",
        "iterations",
        "ppi",
        "used",
    ]
    assert report["corrected"]["used"] == "prediction-powered"
    assert list(report["corrected"]["ppi"]) == [
        "estimate",
        "low",
        "high",
        "labels_estimate",
        "labels_low",
        "labels_high",
        "labels",
        "effective_labels",
        "worth",
        "words",
        "method",
        "note",
    ]


def test_the_cli_json_is_the_same_report_as_the_api(owner_client, campaign):
    api = owner_client.get(f"/api/campaigns/{campaign.name}/judge-report/").json()

    out, _ = cli("judge_report", campaign.name, "--json")

    assert json.loads(out) == api


def test_the_page_shows_the_same_verdict_agreement_kappa_and_miss_sentence_as_the_json(owner_client, campaign):
    report = owner_client.get(f"/api/campaigns/{campaign.name}/judge-report/").json()
    o = report["overall"]

    response = owner_client.get(reverse("labelling:report", args=[campaign.name]))

    assert response.status_code == 200
    page = response.content.decode()
    verdict = re.search(r'id="verdict-line">(.*?)</p>', page, re.S).group(1)
    assert text_of(verdict) == report["verdict"]["line"]
    lead = text_of(re.search(r'<p class="lead">(.*?)</p>', page, re.S).group(1))
    miss = o["miss_sentence"][0].upper() + o["miss_sentence"][1:]
    assert lead.startswith(
        f"{miss} ({100 * o['miss_rate']:.0f} %, 95 % CI {100 * o['miss_low']:.0f} %–{100 * o['miss_high']:.0f} %); "
    )
    assert o["prevalence_sentence"] in lead
    assert f"Raw agreement {100 * o['agreement']:.1f} %" in lead
    assert f"Cohen's kappa {o['kappa']:.2f} ({o['kappa_low']:.2f}–{o['kappa_high']:.2f})" in lead
    assert lead.startswith("The judge passed 22 of the 50 answers people found unsupported (44 %")
    assert "Raw agreement 85.0 %, Cohen's kappa 0.56" in lead
    assert "200 labelled (150 supported / 50 unsupported)" in text_of(re.search(r"<h1>(.*?)</h1>", page, re.S).group(1))


def test_the_page_tables_hold_the_confusion_and_the_slices_of_the_json(owner_client, campaign):
    report = judge_report(campaign).as_dict()

    page = owner_client.get(reverse("labelling:report", args=[campaign.name])).content.decode()

    table = text_of(re.search(r'aria-label="Confusion table">(.*?)</table>', page, re.S).group(1))
    assert "people supported 142 8 people unsupported 22 28" in table
    for s in report["slices"]:
        assert f"{s['slice']} {s['n']} {100 * s['agreement']:.0f} % {s['kappa']:.2f}" in text_of(page)
        assert f"{s['missed']} / {s['failures']}" in page


def test_the_page_shows_the_thresholds_and_saves_new_ones(owner_client, campaign):
    url = reverse("labelling:report", args=[campaign.name])
    assert "Defaults: kappa ≥ 0.70 and a miss rate ≤ 15 %" in owner_client.get(url).content.decode()

    response = owner_client.post(url, {"fit_kappa": "0.5", "fit_miss_rate": "0.5"})

    assert response.status_code == 302
    campaign.refresh_from_db()
    assert (campaign.fit_kappa, campaign.fit_miss_rate) == (0.5, 0.5)
    api = owner_client.get(f"/api/campaigns/{campaign.name}/judge-report/").json()
    assert api["verdict"]["fit"] is True
    assert api["verdict"]["line"] in owner_client.get(url).content.decode()


def test_thresholds_out_of_range_are_refused(owner_client, campaign):
    owner_client.post(reverse("labelling:report", args=[campaign.name]), {"fit_kappa": "2", "fit_miss_rate": "0.5"})

    campaign.refresh_from_db()
    assert (campaign.fit_kappa, campaign.fit_miss_rate) == (0.7, 0.15)


def test_the_cli_text_report_gives_the_verdict_and_the_numbers(campaign):
    out, _ = cli("judge_report", campaign.name)

    assert "VERDICT: not fit to gate: misses 44 % of unsupported answers (22 of 50" in out
    assert "agreement 0.850 · kappa 0.559" in out
    assert (
        "the judge passed 22 of the 50 answers people found unsupported · the judge flags 18 % as unsupported against a true 25 %"
        in out
    )
    assert "corrected for the judge's errors 75 %" in out


def test_the_cli_refuses_an_unknown_campaign_or_verdict_set(campaign):
    with pytest.raises(CommandError, match="no campaign named 'nope'"):
        cli("judge_report", "nope", "--json")
    with pytest.raises(CommandError, match="has no verdict set 999"):
        cli("judge_report", campaign.name, "--verdicts", "999")


def test_an_unknown_campaign_is_a_404_on_the_page_and_the_api(owner_client):
    assert owner_client.get(reverse("labelling:report", args=["nope"])).status_code == 404
    assert owner_client.get("/api/campaigns/nope/judge-report/").status_code == 404
    assert owner_client.get("/api/campaigns/nope/remeasure/").status_code == 404


# ----------------------------------------------------------------------------------------------
# export_disagreements on the command line
# ----------------------------------------------------------------------------------------------


def test_the_cli_writes_one_jsonl_example_a_line_to_standard_output(case, campaign):
    out, err = cli("export_disagreements", campaign.name, "--format", "jsonl")

    examples = [json.loads(line) for line in out.splitlines()]
    assert len(examples) == 30
    assert {e["question_id"] for e in examples} == case.qids("false_pass") | case.qids("false_fail")
    assert "export v1: 30 examples" in err
    record = ExportRecord.objects.get(campaign=campaign)
    assert record.version == 1 and record.content == out and record.created_by is None


def test_the_cli_chat_format_writes_messages_one_example_a_line(campaign):
    out, _ = cli("export_disagreements", campaign.name, "--format", "chat", "--limit", "5")

    examples = [json.loads(line) for line in out.splitlines()]
    assert len(examples) == 5
    assert all([m["role"] for m in e["messages"]] == ["system", "user", "assistant"] for e in examples)


def test_the_cli_csv_format_balanced(campaign):
    out, _ = cli("export_disagreements", campaign.name, "--format", "csv", "--balanced")

    rows = list(csv.DictReader(io.StringIO(out)))
    assert sorted(r["error"] for r in rows) == ["false_fail"] * 8 + ["false_pass"] * 8


def test_the_cli_writes_to_a_file_with_output(campaign, tmp_path):
    target = tmp_path / "examples.jsonl"

    out, err = cli("export_disagreements", campaign.name, "--limit", "7", "--output", str(target))

    assert out == ""
    assert len(target.read_text().splitlines()) == 7
    assert f"export v1: 7 examples written to {target}" in err
    assert ExportRecord.objects.get(campaign=campaign).content == target.read_text()


def test_the_cli_refuses_bad_options_and_records_nothing(campaign):
    with pytest.raises(CommandError, match="limit must be a positive number"):
        cli("export_disagreements", campaign.name, "--limit", "0")
    with pytest.raises(CommandError):
        cli("export_disagreements", campaign.name, "--format", "xml")
    with pytest.raises(CommandError, match="no campaign named"):
        cli("export_disagreements", "nope")
    assert not ExportRecord.objects.filter(campaign=campaign).exists()


# ----------------------------------------------------------------------------------------------
# Versioned, recorded, downloadable again
# ----------------------------------------------------------------------------------------------


def test_exports_are_numbered_v1_v2_v3_and_each_downloads_again_with_the_same_content(owner_client, campaign):
    out, _ = cli("export_disagreements", campaign.name, "--format", "jsonl")
    second = disagreements_export(campaign=campaign, fmt="csv", balanced=True)
    third = disagreements_export(campaign=campaign, fmt="chat", limit=4)

    assert sorted(ExportRecord.objects.filter(campaign=campaign).values_list("version", flat=True)) == [1, 2, 3]
    for version, content, fmt, kind in (
        (1, out, "jsonl", "application/x-ndjson"),
        (2, second.content, "csv", "text/csv"),
        (3, third.content, "chat", "application/x-ndjson"),
    ):
        response = owner_client.get(reverse("labelling:export-download", args=[campaign.name, version]))
        assert response.status_code == 200
        assert response.content.decode() == content
        assert response["Content-Type"].startswith(kind)
        extension = "csv" if fmt == "csv" else "jsonl"
        assert (
            response["Content-Disposition"]
            == f'attachment; filename="{campaign.name}-disagreements-v{version}-{fmt}.{extension}"'
        )
    again = owner_client.get(reverse("labelling:export-download", args=[campaign.name, 1]))
    assert again.content.decode() == out


def test_every_recorded_export_is_downloadable_and_only_those(owner_client, campaign):
    owner_client.post(reverse("labelling:export", args=[campaign.name, "csv"]))  # a label export: v1

    download = owner_client.get(reverse("labelling:export-download", args=[campaign.name, 1]))
    assert download.status_code == 200 and download.content.decode().startswith("question_id,claim_index,split")
    assert owner_client.get(reverse("labelling:export-download", args=[campaign.name, 2])).status_code == 404


def test_the_page_makes_an_export_lists_it_and_links_to_its_download(owner_client, owner, campaign):
    response = owner_client.post(
        reverse("labelling:export-create", args=[campaign.name]),
        {"format": "csv", "limit": "12", "balanced": "on", "seed": "3"},
    )

    assert response.status_code == 302
    record = ExportRecord.objects.get(campaign=campaign)
    assert record.created_by == owner and record.fmt == "csv"
    assert record.options == {
        "limit": 12,
        "balanced": True,
        "seed": 3,
        "verdict_set": None,
        "false_pass": 6,
        "false_fail": 6,
    }
    page = owner_client.get(reverse("labelling:report", args=[campaign.name])).content.decode()
    assert reverse("labelling:export-download", args=[campaign.name, 1]) in page
    assert "olivia" in page


def test_the_api_makes_an_export_and_lists_every_export(owner_client, campaign):
    created = owner_client.post(
        f"/api/campaigns/{campaign.name}/exports/",
        {"format": "jsonl", "balanced": True},
        content_type="application/json",
    )

    assert created.status_code == 201
    body = created.json()
    assert body["version"] == 1 and body["items"] == 16
    assert len(body["content"].splitlines()) == 16
    owner_client.post(reverse("labelling:export", args=[campaign.name, "jsonl"]))
    listing = owner_client.get(f"/api/campaigns/{campaign.name}/exports/").json()
    assert [(e["version"], e["kind"], e["items"], e["heldout_items"]) for e in listing] == [
        (2, "labels", 200, 0),
        (1, "disagreements", 16, 0),
    ]
    assert listing[1]["download"] == f"/campaigns/{campaign.name}/exports/1/"
    assert listing[1]["created_by"] == "olivia"
    assert owner_client.get(listing[1]["download"]).content.decode() == body["content"]


def test_the_api_refuses_a_bad_export_request(owner_client, campaign):
    response = owner_client.post(
        f"/api/campaigns/{campaign.name}/exports/", {"format": "xml"}, content_type="application/json"
    )

    assert response.status_code == 400
    unknown = owner_client.post(
        f"/api/campaigns/{campaign.name}/exports/",
        {"format": "jsonl", "verdicts": 999999},
        content_type="application/json",
    )
    assert unknown.status_code == 400, "an unknown verdict set must not silently fall back to the run's judge"
    assert "has no verdict set 999999" in unknown.json()["verdicts"][0]
    assert not ExportRecord.objects.filter(campaign=campaign).exists()
