"""An eval owner on an empty instance: the home page lists the first steps, each page's empty state says what
to do next, and the steps mark themselves done as the database fills."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from evalcore.services.comparisons import compare_runs
from labelstudio_lite.first_steps import first_steps
from labelstudio_lite.labelling.services.assignment import next_item, submit_label
from labelstudio_lite.labelling.services.campaigns import campaign_set_annotators
from labelstudio_lite.labelling.services.exports import disagreements_export
from tests.factories import QUESTIONS, label_items, make_campaign, make_eval_set, make_marked_run, make_run, ok_row

pytestmark = pytest.mark.django_db


def text(response) -> str:
    assert response.status_code == 200, response.status_code
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def states() -> dict[str, bool]:
    return {step.key: step.done for step in first_steps().steps}


def test_an_empty_instance_shows_the_owner_every_first_step_with_the_first_one_next(owner_client):
    home = owner_client.get("/").content.decode()

    assert "Getting started: 0 of 9 done" in home
    keys = re.findall(r'data-step="([a-z]+)"', home)
    assert keys == ["evalset", "runs", "compare", "judge", "campaign", "invite", "label", "report", "gate"]
    assert re.search(r'data-step="evalset" aria-current="step"', home)
    assert 'href="/evalsets/">Import questions</a>' in home


@pytest.mark.parametrize(
    "url,words",
    [
        ("/evalsets/", "Start here: import your questions"),
        ("/runs/", "First, an eval set"),
        ("/compare/", "Two runs to compare"),
        ("/judges/", "A judge the tool can call"),
        ("/campaigns/", "First, a judged run"),
        ("/people/", "Only you so far"),
    ],
)
def test_each_page_of_an_empty_instance_says_what_to_do_next(owner_client, url, words):
    assert words in text(owner_client.get(url))


def test_the_steps_mark_themselves_done_as_the_owner_goes(owner_client, owner, annotator, tmp_path):
    make_eval_set(folder=tmp_path, questions=QUESTIONS, name="support")
    assert "Import what your system answered" in text(owner_client.get("/runs/"))
    rows = [ok_row(q["id"]) for q in QUESTIONS]
    make_run(folder=tmp_path, rows=rows, evalset="support", name="base", k=3)
    assert "there is one run so far" in text(owner_client.get("/compare/"))
    assert states() == {**dict.fromkeys(states(), False), "evalset": True}

    run = make_marked_run(folder=tmp_path / "m", n=12, evalset="lab")  # with a judge's verdicts
    make_marked_run(folder=tmp_path / "m2", n=12, evalset="lab", name="cand")
    assert "Check the judge against people" in text(owner_client.get("/campaigns/"))
    campaign = make_campaign(run=run, name="faith", user=owner)
    assert "Nobody labels this campaign yet" in text(owner_client.get(reverse("labelling:campaign", args=["faith"])))
    assert states()["runs"] and states()["judge"] and states()["campaign"] and not states()["invite"]
    home = owner_client.get("/").content.decode()
    assert re.search(r'data-step="compare" aria-current="step"', home)

    campaign_set_annotators(campaign=campaign, users=[annotator])
    label_items(campaign=campaign, user=annotator)
    assert states()["invite"] and states()["label"] and not states()["report"]


def test_once_every_step_is_done_the_home_page_stops_listing_them(owner_client, owner, annotator, tmp_path):
    base = make_marked_run(folder=tmp_path / "a", n=12, evalset="lab")
    cand = make_marked_run(folder=tmp_path / "b", n=12, evalset="lab", name="cand")
    campaign = make_campaign(run=cand, name="faith", user=owner, annotators=[annotator])
    served = next_item(campaign=campaign, user=annotator)
    submit_label(campaign=campaign, user=annotator, item_id=served.item.pk, value="unsupported")
    label_items(campaign=campaign, user=annotator)
    disagreements_export(campaign=campaign, fmt="jsonl", user=owner)
    compare_runs(base=base, candidate=cand, user=owner, judge_policy="off")

    assert first_steps().finished
    assert "Getting started" not in owner_client.get("/").content.decode()
