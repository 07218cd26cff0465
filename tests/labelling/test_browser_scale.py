"""End to end in headless Chromium: an answer-relevance campaign labelled on a 1-5 scale with the number keys."""

from __future__ import annotations

import pytest

from labelstudio_lite.labelling.models import Label
from labelstudio_lite.labelling.services.label_sets import label_set
from tests.conftest import log_in
from tests.factories import make_marked_run

from .browser import answer, press, wait_until_sent


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_annotator_scores_relevance_with_number_keys_undoes_one_and_finishes(
    page, live_server, tmp_path, annotator, make_campaign
):
    run = make_marked_run(folder=tmp_path / "run", n=3, evalset="scale")
    campaign = make_campaign(
        run=run,
        name="relevance",
        overlap=1,
        guidance="5: answers exactly what was asked; 1: does not address it.",
        annotators=[annotator],
        labels=label_set(metric="answer_relevance", scale="ordinal", scale_min=1, scale_max=5, fail_at=2),
    )
    log_in(page, live_server.url, "adam", "annot-pass-123", f"/label/{campaign.name}/")
    page.wait_for_selector("#answer-form")
    assert page.locator("#answer-form .choices kbd").all_inner_texts()[:6] == ["1", "2", "3", "4", "5", "C"]
    html = page.content()
    assert "First chunk for" not in html  # relevance needs the question, not the context
    assert "Guideline (version 1)" in html and "S</kbd>" not in html

    answer(page, "4")
    page.wait_for_function("() => document.getElementById('label-status').textContent === 'Saved: 4 on 1–5.'")
    press(page, "s")  # no pass / fail keys on a scale: nothing happens
    answer(page, "1")
    wait_until_sent(page)
    press(page, "z")  # undo: back to the last answer, change it with a number key
    page.wait_for_selector(".label-editor")
    press(page, "2")
    page.wait_for_function("() => document.getElementById('label-status').textContent.includes('2 on 1–5')")
    page.wait_for_selector("#answer-form")
    answer(page, "5")
    page.wait_for_selector(".panel.done")
    wait_until_sent(page)

    assert sorted(Label.objects.values_list("score", "value")) == [
        (2, "unsupported"),
        (4, "supported"),
        (5, "supported"),
    ]
    assert set(Label.objects.values_list("guideline_version", flat=True)) == {1}
