"""End to end in headless Chromium: an annotator labels with the keyboard only, goes back, finishes.

Screenshots land in tests/browser/artifacts/ (gitignored): the labelling page at 1280x800, the
recent labels, the edit page and the finished state.
"""

from __future__ import annotations

import pytest

from labelstudio_lite.labelling.models import Label, Lease
from tests.conftest import ARTIFACTS, log_in
from tests.factories import make_marked_run

from .browser import answer, item_id, press, status, tab_to, wait_for_next_item, wait_until_sent


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_annotator_labels_with_the_keyboard_goes_back_changes_a_label_and_finishes(
    page, live_server, tmp_path, annotator, make_campaign
):
    run = make_marked_run(folder=tmp_path / "run", n=5, evalset="browser")
    campaign = make_campaign(
        run=run, name="keyboard", overlap=1, guidance="Judge only against the context shown.", annotators=[annotator]
    )
    label_url = f"{live_server.url}/label/{campaign.name}/"

    # log in with the keyboard
    log_in(page, live_server.url, "adam", "annot-pass-123", f"/label/{campaign.name}/")
    page.wait_for_selector("#answer-form")
    page.screenshot(path=str(ARTIFACTS / "labelling-page-1280x800.png"))
    assert page.viewport_size == {"width": 1280, "height": 800}
    assert page.locator("#answer-form kbd").all_inner_texts()[:6] == ["S", "U", "C", "K", "Z", "B"]

    # S: supported; the next item swaps in without a page load, and the server confirms
    page.evaluate("window.__marker = 'same-page'")
    first = answer(page, "s")
    assert page.evaluate("window.__marker") == "same-page", "the page reloaded instead of swapping the item in"
    page.wait_for_function("() => document.getElementById('label-status').textContent === 'Saved: supported.'")
    assert page.inner_text("#share-done") == "1"

    # typing 's' in the rationale box types, it does not submit
    second = item_id(page)
    tab_to(page, "el.id === 'rationale'")
    page.keyboard.type("says 10 days but the chunk says 14")
    page.wait_for_timeout(300)
    assert item_id(page) == second
    assert page.input_value("#rationale") == "says 10 days but the chunk says 14"
    assert not Label.objects.filter(item_id=second).exists()
    # Escape leaves the box; U submits with the rationale
    page.keyboard.press("Escape")
    page.keyboard.press("u")
    wait_for_next_item(page, second)

    # C: can't tell, K: skip
    third = answer(page, "c")
    fourth = answer(page, "k")
    page.wait_for_function("() => document.getElementById('label-status').textContent.startsWith('Skipped')")
    assert page.evaluate("window.__marker") == "same-page"
    page.screenshot(path=str(ARTIFACTS / "labelling-page-after-four-keys.png"))

    # B: back to the recent labels, open the first one and change it with U
    wait_until_sent(page)
    press(page, "b")
    page.wait_for_url(f"{label_url}recent/")
    page.screenshot(path=str(ARTIFACTS / "recent-labels.png"))
    first_label = Label.objects.get(item_id=first, annotator=annotator)
    tab_to(page, f"el.tagName === 'A' && el.getAttribute('href').endsWith('/labels/{first_label.pk}/')")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{label_url}labels/{first_label.pk}/")
    assert page.inner_text("#current-label") == "Supported"
    page.screenshot(path=str(ARTIFACTS / "edit-label.png"))
    page.keyboard.press("u")
    page.wait_for_url(label_url)
    page.wait_for_selector("#answer-form")
    assert Label.objects.get(pk=first_label.pk).value == "unsupported"

    # label what is left (the fifth item, then the skipped one) and see the finished state
    for _ in range(5):
        if page.locator(".panel.done").count():
            break
        answer(page, "s")
    page.wait_for_selector(".panel.done")
    assert "You're done." in page.inner_text("#item-area")
    assert page.locator("#answer-form").count() == 0
    assert "Saved: supported." in status(page)
    page.screenshot(path=str(ARTIFACTS / "done-state.png"), full_page=True)

    labels = dict(Label.objects.filter(annotator=annotator).values_list("item_id", "value"))
    assert labels == {
        int(first): "unsupported",
        int(second): "unsupported",
        int(third): "cant_tell",
        int(fourth): "supported",
        **{k: v for k, v in labels.items() if k not in {int(first), int(second), int(third), int(fourth)}},
    }
    assert len(labels) == 5 and list(labels.values()).count("supported") == 2
    assert Label.objects.get(item_id=second, annotator=annotator).rationale == "says 10 days but the chunk says 14"
    assert not Lease.objects.filter(status="active").exists()
    assert all(label.seconds is not None for label in Label.objects.filter(annotator=annotator))
