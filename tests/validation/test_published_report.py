"""The portable judge validation report (JSON and one self-contained HTML page) with the labels behind it:
the same numbers as the judge report service, numbers a reader recomputes from its labels (checked here
with scikit-learn), nothing fetched or run by the page, annotators numbered and rationales left out,
recorded as an export (it holds held-out labels), through the page, the API and ``judge_report --format``.
Who may not reach it is in test_permissions_and_pictures.py."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from labelstudio_lite.labelling.models import ExportRecord, Item
from labelstudio_lite.labelling.services.judge_report import judge_report
from labelstudio_lite.labelling.services.published_report import judge_report_publish, published_report
from tests.factories import human_why

from .conftest import Shared, spec_campaign_once

HELDOUT = 0.3


@pytest.fixture(scope="module")
def shared(django_db_setup, django_db_blocker, tmp_path_factory):
    folder = tmp_path_factory.mktemp("published")
    with spec_campaign_once(django_db_blocker, folder, name="spec-pub", heldout_fraction=HELDOUT) as (case, campaign):
        yield Shared(case, campaign.pk)


class Page(HTMLParser):
    """Every tag and attribute of a page, the text of its <style> and of the labels table's rows."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.style = ""
        self._in_style = False
        self.label_rows: list[list[str]] = []
        self._table: str | None = None
        self._row: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"
        if tag == "table":
            self._table = dict(attrs).get("aria-label")
        elif tag == "tr" and self._table == "Labels":
            self._row = []
        elif tag == "td" and self._row is not None:
            self._row.append("")

    def handle_endtag(self, tag):
        if tag == "style":
            self._in_style = False
        elif tag == "tr" and self._row:
            self.label_rows.append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._in_style:
            self.style += data
        elif self._row:
            self._row[-1] += data


def test_the_json_holds_the_reports_numbers_and_the_labels_they_are_recomputed_from(campaign, case):
    document = published_report(campaign)
    report = judge_report(campaign).as_dict()

    assert document["schema"] == "labelstudio-lite/judge-validation-report/v1"
    assert document["report"] == report  # the judge report service's own numbers
    labels = document["labels"]
    assert len(labels) == 200 == Item.objects.filter(campaign=campaign).count()
    assert {item["question_id"]: item["final_label"] for item in labels} == {
        q: "supported" if v else "unsupported" for q, v in case.human.items()
    }
    people = [item["final_label"] for item in labels]
    judge = [item["judge_verdict"] for item in labels]
    assert cohen_kappa_score(people, judge) == pytest.approx(report["overall"]["kappa"], abs=1e-12)
    assert round(cohen_kappa_score(people, judge), 3) == 0.559  # the spec's example
    (ss, su), (us, uu) = confusion_matrix(people, judge, labels=["supported", "unsupported"])
    assert report["overall"]["confusion"] == {
        "people_supported": {"judge_supported": ss, "judge_unsupported": su},
        "people_unsupported": {"judge_supported": us, "judge_unsupported": uu},
    }
    assert sum(p == j for p, j in zip(people, judge)) / 200 == report["overall"]["agreement"] == 0.85
    assert sum(item["split"] == "heldout" for item in labels) == round(200 * HELDOUT)


def test_annotators_are_numbered_and_rationales_left_out(campaign):
    document = published_report(campaign)
    text = json.dumps(document)
    assert "rater-1" not in text and "HUMANWHY" not in text and human_why("q0000") not in text
    assert {p["annotator"] for item in document["labels"] for p in item["labels"]} == {"annotator 1"}
    assert all(
        item["labels"] == [{"annotator": "annotator 1", "label": item["final_label"]}] for item in document["labels"]
    )


def test_the_html_page_is_self_contained_no_script_no_link_nothing_fetched(campaign):
    content = judge_report_publish(campaign=campaign, fmt="html").content
    page = Page()
    page.feed(content)

    tags = {tag for tag, _ in page.tags}
    assert not tags & {"script", "link", "img", "iframe", "object", "embed", "base", "form", "input", "video", "audio"}
    for tag, attrs in page.tags:
        assert not set(attrs) & {"src", "href", "srcset", "action", "style"} or tag == "svg", (tag, attrs)
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)  # no event handler
        if tag == "svg":
            assert set(attrs) & {"src", "href"} == set()
    assert re.findall(r"https?://[^\s\"'<>]+", content) == ["http://www.w3.org/2000/svg"] * 2  # namespaces only
    assert "url(" not in page.style and "@import" not in page.style and ".hm-count" in page.style
    assert 'class="heatmap"' in content and 'class="slice-plot"' in content


def test_the_html_page_says_what_the_report_says_and_lists_every_label(campaign):
    report = judge_report(campaign)
    content = judge_report_publish(campaign=campaign, fmt="html").content
    page = Page()
    page.feed(content)

    assert report.verdict.line in content
    assert all(w.replace("'", "&#x27;") in content for w in report.warnings)
    assert "85.0 %" in content and f"{report.overall.kappa:.3f}" in content
    assert len(page.label_rows) == 200
    rows = {r[0]: r for r in page.label_rows}
    q = next(iter(sorted(rows)))
    item = next(i for i in published_report(campaign)["labels"] if i["question_id"] == q)
    assert rows[q][5:] == [f"annotator 1: {item['final_label']}", item["final_label"], "agreed", item["judge_verdict"]]
    shaded = content.count('<tr class="disagree">')
    assert shaded == 30  # 22 false passes and 8 false fails (the spec)
    assert "rater-1" not in content and "HUMANWHY" not in content


def test_the_html_page_carries_the_judges_certificate_and_the_people_beside_it_as_the_report_page_does(
    campaign, owner_client
):
    report = judge_report(campaign)
    content = judge_report_publish(campaign=campaign, fmt="html").content
    live = owner_client.get(reverse("labelling:report", args=[campaign.name])).content.decode()

    certificate = report.certificate
    assert certificate is not None and certificate["reasons"]
    for text in (content, live):
        assert f'id="certificate-state">{certificate["state"]}</span>' in text
        assert all(html.escape(reason) in text for reason in certificate["reasons"])
        assert 'id="agreement"' in text and 'id="chance-baseline"' in text
    assert ".status-block{" in content and ".panel{" in content  # styled inline: the page fetches nothing


def test_publishing_is_recorded_as_an_export_and_the_report_then_warns_of_leakage(campaign):
    record = judge_report_publish(campaign=campaign, fmt="json")

    assert (record.kind, record.fmt) == ("report", "json")
    assert len(record.item_ids) == 200 and record.heldout_items == round(200 * HELDOUT)
    assert any(
        w.startswith(f"Leakage: {round(200 * HELDOUT)} held-out answers") for w in judge_report(campaign).warnings
    )
    assert not ExportRecord.objects.filter(kind="report").exclude(pk=record.pk).exists()


def test_the_page_offers_both_and_gives_them_as_downloads(campaign, owner_client):
    page = owner_client.get(reverse("labelling:report", args=[campaign.name])).content.decode()
    for fmt, kind in (("html", "text/html"), ("json", "application/json")):
        url = reverse("labelling:report-publish", args=[campaign.name, fmt])
        assert f'action="{url}"' in page
        assert owner_client.get(url).status_code == 405  # a read records nothing
        recorded = owner_client.post(url)
        assert recorded.status_code == 302
        response = owner_client.get(recorded["Location"])
        assert response.status_code == 200 and response["Content-Type"].startswith(kind)
        assert re.search(rf'filename="spec-pub-report-v\d+-{fmt}\.{fmt}"', response["Content-Disposition"])
    assert json.loads(response.content)["report"]["overall"]["n"] == 200
    assert owner_client.post(reverse("labelling:report-publish", args=[campaign.name, "pdf"])).status_code == 404


def test_the_api_and_the_command_publish_the_same_labels_as_the_page(campaign, owner, owner_client, tmp_path):
    body = owner_client.post(
        f"/api/campaigns/{campaign.name}/judge-report/publish/", {"format": "json"}, content_type="application/json"
    ).json()
    assert body["format"] == "json" and body["items"] == 200 and body["version"] == 1
    assert body["document"]["labels"] == published_report(campaign)["labels"]
    html = owner_client.post(
        f"/api/campaigns/{campaign.name}/judge-report/publish/", {"format": "html"}, content_type="application/json"
    ).json()
    assert (
        html["content"].startswith("<!doctype html>")
        and owner_client.get(html["download"]).content.decode() == html["content"]
    )
    refused = owner_client.post(
        f"/api/campaigns/{campaign.name}/judge-report/publish/",
        {"format": "json", "verdicts": 999_999},
        content_type="application/json",
    )
    assert refused.status_code == 400 and "verdicts" in refused.json()

    err = StringIO()
    call_command("judge_report", campaign.name, "--format", "json", "--output", str(tmp_path / "r.json"), stderr=err)
    assert json.loads((tmp_path / "r.json").read_text())["labels"] == body["document"]["labels"]
    assert (
        f"export v3: the judge report with the labels of 200 items ({round(200 * HELDOUT)} held out) written to"
        in err.getvalue()
    )
    out = StringIO()
    call_command("judge_report", campaign.name, "--format", "html", stdout=out, stderr=StringIO())
    assert out.getvalue().startswith("<!doctype html>") and out.getvalue().rstrip().endswith("</html>")
    with pytest.raises(CommandError, match="--output goes with --format"):
        call_command("judge_report", campaign.name, "--output", str(tmp_path / "x"))
    with pytest.raises(CommandError, match="give one"):
        call_command("judge_report", campaign.name, "--json", "--format", "json")
    assert ExportRecord.objects.filter(campaign=campaign, kind="report").count() == 4
