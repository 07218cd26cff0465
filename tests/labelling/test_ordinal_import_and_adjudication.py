"""An ordinal campaign's labels come in from a file as scores (checked against the scale; a problem names the
file, the line and the field; nothing is written unless all is well), and its adjudication sets a final score."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evalcore.services.problems import ImportFailed, UserFacingError
from labelstudio_lite.labelling.models import Adjudication, Label
from labelstudio_lite.labelling.selectors import final_labels
from labelstudio_lite.labelling.services.adjudication import adjudicate
from labelstudio_lite.labelling.services.campaigns import campaign_create, campaign_set_annotators
from labelstudio_lite.labelling.services.exports import label_lines
from labelstudio_lite.labelling.services.judge_agreement import human_scores
from labelstudio_lite.labelling.services.label_import import labels_import
from labelstudio_lite.labelling.services.label_sets import label_set
from tests import factories
from tests.files import write_csv, write_jsonl


@pytest.fixture
def relevance(small_run, owner):
    return campaign_create(
        run=small_run,
        name="rel",
        unit="answer",
        size=100,
        heldout_fraction=0.0,
        overlap=2,
        user=owner,
        labels=label_set(metric="answer_relevance", scale="ordinal", scale_min=1, scale_max=5, fail_at=2),
    )


def test_an_ordinal_campaign_imports_scores_from_a_score_column_or_the_label(tmp_path, relevance, annotator):
    path = write_csv(
        tmp_path / "scores.csv",
        ["question_id", "score", "label", "annotator"],
        [["q0000", "5", "", "adam"], ["q0001", "2", "", "ext-anna"], ["q0002", "", "cant_tell", "ext-anna"]],
    )
    result = labels_import(campaign=relevance, path=path)
    assert result.created == 3
    got = {
        (qid, who or ext, value, score)
        for qid, who, ext, value, score in Label.objects.values_list(
            "item__row__question__qid", "annotator__username", "external_annotator", "value", "score"
        )
    }
    assert got == {
        ("q0000", "adam", "supported", 5),
        ("q0001", "ext-anna", "unsupported", 2),  # 2 is at the threshold: the failure class
        ("q0002", "ext-anna", "cant_tell", None),
    }
    lines = write_jsonl(tmp_path / "scores.jsonl", [{"question_id": "q0003", "label": 3, "annotator": "ext-ben"}])
    assert labels_import(campaign=relevance, path=lines).created == 1
    assert Label.objects.get(external_annotator="ext-ben").score == 3
    assert labels_import(campaign=relevance, path=lines).unchanged == 1  # the same file again: nothing new


def test_an_ordinal_export_imports_back_with_its_scores(tmp_path, small_run, relevance, owner, annotator):
    campaign_set_annotators(campaign=relevance, users=[annotator])
    factories.label_items(campaign=relevance, user=annotator, value=lambda item: str(1 + item.position % 5))
    exported = tmp_path / "export.jsonl"
    exported.write_text("".join(label_lines(relevance, "jsonl")), encoding="utf-8")
    copy = campaign_create(
        run=small_run,
        name="rel-copy",
        unit="answer",
        size=100,
        heldout_fraction=0.0,
        user=owner,
        labels=label_set(metric="answer_relevance", scale="ordinal", scale_min=1, scale_max=5, fail_at=2),
    )
    assert labels_import(campaign=copy, path=exported).created == relevance.items.count()
    scores = lambda c: sorted(  # noqa: E731
        Label.objects.filter(item__campaign=c).values_list("item__row__question__qid", "score", "value")
    )
    assert scores(copy) == scores(relevance) and {s for _, s, _ in scores(copy)} == {1, 2, 3, 4, 5}


def test_a_score_off_the_scale_names_the_file_line_and_field_and_nothing_is_written(tmp_path, relevance):
    path = write_csv(
        tmp_path / "bad.csv",
        ["question_id", "score", "annotator"],
        [["q0000", "4", "ext-anna"], ["q0001", "7", "ext-anna"], ["q0002", "supported", "ext-anna"]],
    )
    with pytest.raises(ImportFailed) as caught:
        labels_import(campaign=relevance, path=path)
    problems = [(p.file, p.line, p.field, p.message) for p in caught.value.problems]
    assert problems == [
        ("bad.csv", 3, "score", "must be a whole score from 1 to 5 (or cant_tell), got '7'"),
        ("bad.csv", 4, "score", "must be a whole score from 1 to 5 (or cant_tell), got 'supported'"),
    ]
    assert "bad.csv, line 3, field 'score'" in str(caught.value)
    assert not Label.objects.exists()


def test_an_ordinal_adjudication_sets_the_final_score_and_its_class(relevance, owner, owner_client):
    item = relevance.items.order_by("position").first()
    with pytest.raises(UserFacingError, match="a score from 1 to 5"):
        adjudicate(campaign=relevance, item_id=item.pk, value="supported", user=owner)
    with pytest.raises(UserFacingError, match="a score from 1 to 5"):
        adjudicate(campaign=relevance, item_id=item.pk, score=9, user=owner)

    response = owner_client.post(
        reverse("labelling:adjudicate", args=[relevance.name]), {"item_id": item.pk, "score": 2, "note": "partly"}
    )
    assert response.status_code == 302
    decided = Adjudication.objects.get(item=item)
    assert (decided.value, decided.score, decided.note) == ("unsupported", 2, "partly")
    assert final_labels(relevance)[item.pk].value == "unsupported" and human_scores(relevance)[item.pk] == 2.0

    refused = owner_client.post(
        reverse("labelling:adjudicate", args=[relevance.name]), {"item_id": item.pk, "score": 6}, follow=True
    )
    assert "a label on this campaign is a score from 1 to 5" in refused.content.decode()
    assert Adjudication.objects.get(item=item).score == 2


def test_the_adjudication_page_offers_the_scale_on_an_ordinal_campaign(relevance, owner_client, django_user_model):
    a, b = (django_user_model.objects.create_user(n, password="x-pass-123", role="annotator") for n in ("a1", "b1"))
    campaign_set_annotators(campaign=relevance, users=[a, b])
    for person, score in ((a, "5"), (b, "1")):
        factories.label_items(campaign=relevance, user=person, value=score)
    page = owner_client.get(reverse("labelling:adjudicate", args=[relevance.name])).content.decode()
    assert 'aria-label="Final score"' in page
    assert all(f'name="score" value="{p}"' in page for p in range(1, 6))
    assert 'name="value" value="supported"' not in page
