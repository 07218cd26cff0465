"""The judge report page shows the certificate (state, the bounds against the bars, "label about N more",
staleness in words), the human ceiling, the chance baseline and the alternative annotator test, in the
campaign's own words; the same numbers as ``judge_report --json``."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from labelstudio_lite.labelling.services.campaigns import campaign_create, campaign_new_guideline
from labelstudio_lite.labelling.services.judge_report import judge_report
from labelstudio_lite.labelling.services.label_sets import label_set
from labelstudio_lite.labelling.services.published_report import judge_report_publish, published_report
from tests import factories

from .test_certificates import judged_run, label_all


def page_text(client, campaign) -> str:
    response = client.get(reverse("labelling:report", args=[campaign.name]))
    assert response.status_code == 200
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode())).replace("&#x27;", "'")


@pytest.mark.parametrize(
    ("n", "wrong", "state"), [(120, 0, "trusted"), (120, 30, "untrusted"), (40, 0, "inconclusive")]
)
def test_the_report_page_shows_the_certificate_with_its_bounds_against_the_bars(
    tmp_path, owner, owner_client, annotator, n, wrong, state
):
    run = judged_run(tmp_path, n)
    campaign = factories.make_campaign(run=run, name="c", annotators=[annotator], user=owner)
    label_all(campaign, annotator, wrong=wrong)
    certificate = judge_report(campaign).certificate

    text = page_text(owner_client, campaign)
    assert f"Judge certificate: {state}" in text
    kappa, miss = certificate["kappa"], certificate["miss_rate"]
    assert f"Cohen's kappa {kappa['estimate']:.2f} {kappa['low']:.2f}–{kappa['high']:.2f} at least 0.70" in text
    assert f"Miss rate on unsupported answers {100 * miss['estimate']:.0f} %" in text
    assert "at most 15 %" in text
    for reason in certificate["reasons"]:
        assert reason in text
    if state == "inconclusive":
        assert f"Label about {certificate['more_failure_labels']} more unsupported answers to decide" in text
        assert "undecided: the interval spans the bar" in text
    elif state == "trusted":
        assert f"upper end {100 * miss['high']:.0f} % clears it" in text
        assert f"lower end {kappa['low']:.2f} clears it" in text
    else:
        assert "fails it" in text
    assert "Chance baseline: raw agreement" in text and "(people's majority class)" in text
    assert "No item was labelled by two people yet" in text
    assert "Not run: the alternative annotator test needs at least 3 annotators" in text


def test_a_new_guideline_shows_the_certificate_stale_in_words_on_the_page(tmp_path, owner, owner_client, annotator):
    run = judged_run(tmp_path, 120)
    campaign = factories.make_campaign(run=run, name="c", annotators=[annotator], user=owner, guidance="v1")
    label_all(campaign, annotator)
    assert "Stale:" not in page_text(owner_client, campaign)

    campaign_new_guideline(campaign=campaign, text="count partial answers as unsupported", user=owner)
    report = judge_report(campaign)
    assert report.stale.startswith("the guideline of campaign c changed (v1 → v2) after these labels were given")
    assert f"Stale: {report.stale}." in page_text(owner_client, campaign)


def test_an_ordinal_report_shows_weighted_kappa_the_human_ceiling_and_the_alternative_annotator_test(
    tmp_path, owner, owner_client, django_user_model
):
    run = factories.make_marked_run(folder=tmp_path / "rel", n=40)
    people = [django_user_model.objects.create_user(f"p{i}", password="x-pass-123", role="annotator") for i in range(3)]
    campaign = campaign_create(
        run=run,
        name="relevance",
        unit="answer",
        size=100,
        heldout_fraction=0.0,
        overlap=3,
        annotators=people,
        user=owner,
        labels=label_set(metric="answer_relevance", scale="ordinal", scale_min=1, scale_max=5, fail_at=2),
    )
    for offset, person in enumerate(people):  # people mostly agree; each differs from the others on a few items
        factories.label_items(
            campaign=campaign,
            user=person,
            value=lambda item, o=offset: str(
                [1, 2, 3, 4, 5, 3][(item.position + (o if item.position % 7 == 0 else 0)) % 6]
            ),
        )
    report = judge_report(campaign).as_dict()
    agreement = report["agreement"]
    assert agreement["alt_test"] is not None and agreement["ceiling"]["annotators"] == 3

    text = page_text(owner_client, campaign)
    assert report["verdict"]["line"] in text and "unsupported" not in report["verdict"]["line"]
    page_html = heatmap = owner_client.get(reverse("labelling:report", args=[campaign.name])).content.decode()
    heatmap = heatmap[heatmap.index('<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="Confusion') :]
    heatmap = heatmap[: heatmap.index("</svg>")]
    words = (campaign.pass_word.lower(), campaign.fail_word.lower())
    assert all(f'class="hm-label">{word}</text>' in heatmap for word in words) and "supported" not in heatmap
    assert "of answers scored 1–2" in report["verdict"]["line"]
    assert "weighted kappa (linear)" in report["verdict"]["line"]
    assert "Weighted kappa (linear)" in text and "Miss rate on answers scored 1–2" in text
    linear = agreement["ordinal"]["linear"]
    assert f"weighted kappa linear {linear['estimate']:.2f} ({linear['low']:.2f}–{linear['high']:.2f})" in text
    ceiling = agreement["ceiling"]
    people_kappa, alpha = ceiling["people_kappa"], ceiling["alpha"]
    assert (
        f"People with each other: kappa (mean over 3 pairs) {people_kappa['estimate']:.2f} "
        f"{people_kappa['low']:.2f}–{people_kappa['high']:.2f}"
    ) in text
    assert f"Krippendorff's alpha (ordinal) {alpha['estimate']:.2f} {alpha['low']:.2f}–{alpha['high']:.2f}" in text
    assert "The judge with people's final label: kappa" in text
    baseline = agreement["baseline"]
    assert (
        f"raw agreement {100 * baseline['agreement']:.1f} % against {100 * baseline['majority']:.1f} % "
        f"for always answering {baseline['majority_class']}"
    ) in text
    sentence = agreement["alt_test"]["sentence"]
    assert sentence.startswith("the judge can") and sentence[0].upper() + sentence[1:] in text
    assert "Benjamini–Yekutieli" in text

    out = StringIO()
    call_command("judge_report", campaign.name, stdout=out)
    table = " ".join(out.getvalue().split())
    confusion = report["overall"]["confusion"]
    assert "judge above 2 judge 1–2" in table and "unsupported" not in table
    passed, failed = confusion["people_supported"], confusion["people_unsupported"]
    assert (
        f"people above 2 {passed['judge_supported']} {passed['judge_unsupported']} "
        f"people 1–2 {failed['judge_supported']} {failed['judge_unsupported']}"
    ) in table

    published = judge_report_publish(campaign=campaign, fmt="html").content  # in the page's words too
    published_text = " ".join(re.sub(r"<[^>]+>", " ", published).split())
    passed, failed = words
    assert f"People \\ judge judge {passed} judge {failed} people {passed}" in published_text
    assert f"people {passed}" in " ".join(re.sub(r"<[^>]+>", " ", page_html).split())
    assert all(f'class="hm-label">{word}</text>' in published for word in words)
    assert "supported" not in published  # nor anywhere else in the page: the campaign's words throughout
    assert "Weighted kappa (linear)" in published_text  # the certificate, as on the page
    campaign_page = owner_client.get(reverse("labelling:campaign", args=[campaign.name])).content.decode()
    assert f" · judge {passed}</td>" in campaign_page and " · judge supported" not in campaign_page  # its strata

    # published, people are numbered as in its labels table, never named (the page names them to the owner)
    document = published_report(campaign)["report"]["agreement"]
    numbered = {"annotator 1", "annotator 2", "annotator 3"}
    assert {row["annotator"] for row in document["alt_test"]["annotators"]} == numbered
    assert {name for pair in document["ceiling"]["pairs"] for name in pair["annotators"]} == numbered
    assert "annotator 1 and annotator 2" in published_text
    for person in people:
        assert f">{person.username}<" not in published and f'"{person.username}"' not in published
        assert f">{person.username}<" in page_html or f"{person.username} and" in page_html
