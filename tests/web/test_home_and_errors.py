"""Home pages that lead somewhere, error pages that say why and where to go, failed uploads that come
back to their form, and charts whose text stays readable on a phone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.test import override_settings
from django.urls import path, reverse

from evalcore.charts import ForestRow, forest_plot_svg, slice_intervals_svg
from evalcore.models import Job
from labelstudio_lite.labelling.services.assignment import next_item, submit_label
from labelstudio_lite.urls import urlpatterns as site_urls
from tests.factories import label_items, make_campaign, make_marked_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaigns(tmp_path, owner, annotator, other_annotator):
    run = make_marked_run(folder=tmp_path / "run", n=6, evalset="home")
    fresh = make_campaign(run=run, name="fresh", annotators=[annotator], user=owner)
    started = make_campaign(run=run, name="started", annotators=[annotator], user=owner)
    done = make_campaign(run=run, name="done", overlap=2, annotators=[annotator, other_annotator], user=owner)
    served = next_item(campaign=started, user=annotator)
    submit_label(campaign=started, user=annotator, item_id=served.item.pk, value="supported")
    label_items(campaign=done, user=annotator, value="supported")
    label_items(
        campaign=done, user=other_annotator, value=lambda item: "unsupported" if item.position < 2 else "supported"
    )
    return fresh, started, done


# ----------------------------------------------------------------------------------------------
# Home pages
# ----------------------------------------------------------------------------------------------


def test_the_annotators_home_lists_their_campaigns_with_progress_and_enter_continues(campaigns, annotator_client):
    body = annotator_client.get(reverse("home")).content.decode()

    entries = re.findall(r'<h2 id="campaign-\d+">([^<]+)</h2>', body)
    assert entries == ["started", "fresh", "done"]  # unfinished first, newest first
    assert "1 of your 6 done" in body and "5 left" in body
    assert "6 of your 6 done" in body and "<strong>finished</strong>" in body
    first = re.search(r'<a class="button primary" href="([^"]+)" autofocus>([^<]+)</a>', body)
    assert first.groups() == (reverse("labelling:label", args=["started"]), "Continue labelling")
    assert body.count("autofocus") == 1 and "press <kbd>Enter</kbd>" in body
    assert f'href="{reverse("labelling:label", args=["fresh"])}">Start labelling</a>' in body
    assert f'href="{reverse("labelling:recent", args=["done"])}">Review your labels</a>' in body
    assert 'role="progressbar"' in body and "Your labelling work appears here" not in body


def test_an_annotator_with_no_campaign_is_told_what_to_do(annotator_client):
    body = annotator_client.get(reverse("home")).content.decode()
    assert "not assigned to any campaign yet" in body and "Ask an eval owner to add you" in body


def test_the_owners_home_shows_what_needs_attention_with_links(campaigns, owner_client):
    Job.objects.create(kind="import_run", status=Job.Status.FAILED, params={"display_name": "bad.jsonl"})

    body = owner_client.get(reverse("home")).content.decode()

    for url in ("evalcore:evalsets", "evalcore:runs", "evalcore:compare", "labelling:campaigns"):
        assert f'<h2><a href="{reverse(url)}">' in body  # the cards are links
    fresh = reverse("labelling:campaign", args=["fresh"])
    assert re.search(rf'<a href="{fresh}">fresh</a>:\s+0 of 6 items fully labelled \(6 waiting for labels\)', body)
    assert f'href="{reverse("labelling:adjudicate", args=["done"])}">2 conflicts to adjudicate</a>' in body
    assert "Judge configs not fit to gate" in body and "never validated" in body
    assert "Validate it with a campaign on run base" in body
    assert "No comparison yet" in body
    assert "Import run of bad.jsonl" in body


def test_the_campaign_form_starts_on_the_run_the_home_page_names(campaigns, owner_client):
    run = campaigns[0].run
    body = owner_client.get(reverse("labelling:campaigns") + f"?run={run.pk}").content.decode()
    assert re.search(rf'<option value="{run.pk}" selected>', body)


# ----------------------------------------------------------------------------------------------
# Error pages
# ----------------------------------------------------------------------------------------------


def test_a_404_uses_the_site_layout_and_says_why_and_where_to_go(campaigns, client, other_annotator):
    client.force_login(other_annotator)  # not assigned to "started"
    response = client.get(reverse("labelling:label", args=["started"]))

    body = response.content.decode()
    assert response.status_code == 404
    assert '<header class="topbar">' in body and 'aria-label="Main"' in body
    assert "There is no campaign “started” among the ones you are assigned to label" in body
    assert "ask its eval owner to add you" in body
    assert f'<a href="{reverse("home")}">Your home page</a>' in body


def test_a_403_uses_the_site_layout_and_gives_the_reason(annotator_client):
    response = annotator_client.get(reverse("evalcore:runs"))

    body = response.content.decode()
    assert response.status_code == 403
    assert '<header class="topbar">' in body and "This page is for eval owners." in body
    assert "Go to your home page" in body


def test_an_unknown_address_is_a_404_in_the_layout(owner_client):
    response = owner_client.get("/no/such/page/")
    assert response.status_code == 404 and "There is no page at" in response.content.decode()


def _broken(request):
    raise RuntimeError("boom")


urlpatterns = [path("broken/", _broken), *site_urls]


@override_settings(ROOT_URLCONF=__name__)
def test_a_500_uses_the_site_layout_and_says_nothing_was_lost(owner_client):
    owner_client.raise_request_exception = False

    response = owner_client.get("/broken/")

    body = response.content.decode()
    assert response.status_code == 500
    assert '<header class="topbar">' in body and "Something went wrong on our side" in body
    assert "what you saved before is safe" in body


# ----------------------------------------------------------------------------------------------
# A failed upload goes back to its form
# ----------------------------------------------------------------------------------------------


def failed_run_import() -> Job:
    return Job.objects.create(
        kind="import_run",
        status=Job.Status.FAILED,
        params={
            "path": "/tmp/x.jsonl",
            "evalset": "support-qa@1",
            "name": "chunks-128",
            "display_name": "rows.jsonl",
            "k": 5,
            "gain": "linear",
            "judge_config": {"model": "gpt-x", "prompt": "Is it supported?"},
        },
        result={"problems": [{"file": "rows.jsonl", "line": 3, "field": "retrieved", "message": "must be a list"}]},
        error="Nothing was imported: 1 problem",
    )


def test_a_failed_imports_job_page_leads_back_to_its_form(owner_client):
    job = failed_run_import()

    body = owner_client.get(reverse("evalcore:job", args=[job.pk])).content.decode()

    assert "Failed: nothing was written." in body and "rows.jsonl, line 3, field “retrieved”: must be a list" in body
    assert f'href="{reverse("evalcore:runs")}?retry={job.pk}"' in body and "go back to the form" in body
    assert f'href="{reverse("evalcore:jobs")}">← All jobs</a>' in body


def test_a_job_that_failed_for_want_of_the_storage_does_not_ask_to_fix_the_file(owner_client):
    job = failed_run_import()
    Job.objects.filter(pk=job.pk).update(result={}, error="The file storage could not be read, so nothing was imported")

    body = owner_client.get(reverse("evalcore:job", args=[job.pk])).content.decode()

    assert "The file storage could not be read" in body and "go back to the form" in body
    assert "Fix the file" not in body
    assert (
        "Fix the file, then"
        in owner_client.get(reverse("evalcore:job", args=[failed_run_import().pk])).content.decode()
    )


def test_the_form_comes_back_with_the_values_given_and_the_problems_listed(owner_client):
    job = failed_run_import()

    body = owner_client.get(reverse("evalcore:runs") + f"?retry={job.pk}").content.decode()

    assert 'id="retry-problems"' in body and "Your upload of rows.jsonl failed; nothing was written." in body
    assert "line 3, field “retrieved”: must be a list" in body
    assert 'name="evalset" value="support-qa@1"' in body and 'name="name" value="chunks-128"' in body
    assert 'name="k" value="5"' in body and '<option value="linear" selected>' in body
    assert "&quot;model&quot;: &quot;gpt-x&quot;" in body  # the judge config, as JSON text


def test_a_retry_names_only_a_failed_job_of_its_own_kind(owner_client):
    other = Job.objects.create(kind="import_evalset", status=Job.Status.FAILED, params={"name": "x"})
    body = owner_client.get(reverse("evalcore:runs") + f"?retry={other.pk}").content.decode()
    assert 'id="retry-problems"' not in body


def test_a_refused_verdict_upload_keeps_its_judge_config(campaigns, owner_client, tmp_path):
    url = reverse("labelling:verdicts", args=["done"])
    (tmp_path / "v.jsonl").write_text('{"question_id": "q0000", "supported": true}\n')

    with (tmp_path / "v.jsonl").open("rb") as handle:
        response = owner_client.post(url, {"file": handle, "judge_config": '{"model": "gpt-y", '})

    body = response.content.decode()
    assert response.status_code == 400 and "Not imported:" in body and "malformed JSON" in body
    assert "{&quot;model&quot;: &quot;gpt-y&quot;, </textarea>" in body


def test_the_job_page_in_the_embedded_mode_does_not_wait_for_a_worker(owner_client, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    job = Job.objects.create(kind="import_run", status=Job.Status.QUEUED, params={})
    body = owner_client.get(reverse("evalcore:job", args=[job.pk])).content.decode()
    assert "waiting for a worker" not in body and "starting" in body


# ----------------------------------------------------------------------------------------------
# Charts on a phone
# ----------------------------------------------------------------------------------------------


CHART_FONTS = {  # class -> font size (px), from the charts' stylesheet (the CSP keeps styles out of the SVGs)
    name: float(size)
    for name, size in re.findall(
        r"\.([\w-]+)\{font:[^;}]*?(\d+)px", (Path(settings.BASE_DIR) / "static/css/charts.css").read_text()
    )
}


def on_screen_font_sizes(svg: str, screen: float) -> list[float]:
    """The font sizes (px) the SVG's text gets when drawn ``screen`` px wide."""
    view_width = float(re.search(r'viewBox="0 0 ([\d.]+) ', svg).group(1))
    classes = re.findall(r'<text[^>]*class="([\w-]+)', svg)
    return [CHART_FONTS[name] * screen / view_width for name in classes if name in CHART_FONTS]


def test_the_phone_drawings_of_the_charts_keep_their_text_readable():
    rows = [ForestRow("faithfulness", s, 0.01, -0.02, 0.04, 0.02, "review", n=90) for s in ("all", "billing")]
    slices = [
        {"slice": "billing", "n": 40, "kappa": 0.6, "kappa_low": 0.4, "kappa_high": 0.8, "miss_rate": 0.3}
        | {"miss_low": 0.1, "miss_high": 0.5, "missed": 3, "failures": 10}
    ]
    phone = 390 - 2 * 16 - 2 * 18  # the screen less the page's and the panel's padding

    wide = forest_plot_svg(rows)
    assert min(on_screen_font_sizes(wide, phone)) < 5  # what a phone used to get
    for svg in (forest_plot_svg(rows, compact=True), slice_intervals_svg(slices, compact=True)):
        assert min(on_screen_font_sizes(svg, phone)) >= 9.5
        assert "billing (n=" in svg
