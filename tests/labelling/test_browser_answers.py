"""The labelling page in headless Chromium, as annotators break it: double presses, network drops, failed
POSTs, two tabs, undo and the shortcut list. Every answer is stored exactly once, nothing silently.

Marked ``slow`` (a browser each, about 5 s a test): CI runs them, ``./dev test`` leaves them, and
``./dev test -m ""`` runs everything. The slower still (leases running out, an import while two
people label, 100 items timed) are in test_browser_slow.py; the keyboard walk-through in
test_browser.py stays in the quick run.
"""

from __future__ import annotations

import pytest

from labelstudio_lite.labelling.models import Label
from tests.conftest import ARTIFACTS, log_in
from tests.factories import make_marked_run

from .browser import answer, item_id, press, status, wait_for_next_item, wait_until_sent

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def labelling(page, live_server, tmp_path, annotator, make_campaign):
    """adam on the labelling page of a 12-answer campaign, the first item on screen; returns the campaign."""
    run = make_marked_run(folder=tmp_path / "run", n=12, evalset="robust")
    campaign = make_campaign(run=run, name="robust", overlap=1, annotators=[annotator])
    log_in(page, live_server.url, "adam", "annot-pass-123", f"/label/{campaign.name}/")
    page.wait_for_selector("#answer-form")
    return campaign


def labels_of(user) -> dict[int, str]:
    return dict(Label.objects.filter(annotator=user).values_list("item_id", "value"))


def test_a_double_press_answers_only_the_item_that_was_on_screen(page, labelling, annotator):
    first = item_id(page)
    page.wait_for_timeout(400)

    page.keyboard.press("s")
    page.wait_for_timeout(150)  # the second press of a double press: the next item is on screen by now
    page.keyboard.press("s")
    wait_until_sent(page)
    page.wait_for_timeout(300)

    second = item_id(page)
    assert second != first
    assert labels_of(annotator) == {int(first): "supported"}  # the second item was not answered
    answer(page, "u")  # once the guard has passed, a key works at once
    wait_until_sent(page)
    assert labels_of(annotator) == {int(first): "supported", int(second): "unsupported"}


def test_a_held_key_answers_once(page, labelling, annotator):
    first = item_id(page)
    page.wait_for_timeout(400)

    page.keyboard.down("s")
    for _ in range(5):  # the browser's auto-repeat
        page.keyboard.down("s")
        page.wait_for_timeout(80)
    page.keyboard.up("s")
    wait_until_sent(page)

    assert labels_of(annotator) == {int(first): "supported"}


def test_answers_given_offline_are_kept_shown_as_waiting_and_stored_once_when_the_network_is_back(
    page, labelling, annotator
):
    page.context.set_offline(True)

    a = answer(page, "s")  # the next items were held ahead: they come at once, offline
    b = answer(page, "u")
    page.wait_for_selector("#connection-banner:not([hidden])")
    c = answer(page, "c")

    banner = page.inner_text("#connection-banner")
    assert "The connection is down: 3 answers are waiting in this browser, not saved yet" in banner
    assert page.inner_text("#share-pending") == " (3 being sent)"
    assert "Kept: can't tell; it is sent once the connection is back." in status(page)
    assert page.locator("#label-alert p").count() == 0  # a banner, not an error
    page.screenshot(path=str(ARTIFACTS / "offline-three-answers-kept.png"))
    assert labels_of(annotator) == {}

    page.context.set_offline(False)
    page.evaluate("document.getElementById('retry-now').click()")
    wait_until_sent(page)

    assert labels_of(annotator) == {int(a): "supported", int(b): "unsupported", int(c): "cant_tell"}
    stored = list(Label.objects.filter(annotator=annotator).order_by("created_at").values_list("item_id", flat=True))
    assert stored == [int(a), int(b), int(c)]  # in the order given
    assert page.is_hidden("#connection-banner")


def test_a_failed_post_and_a_lost_reply_are_retried_and_stored_once(page, labelling, annotator):
    seen = []

    def flaky(route):
        seen.append(len(seen))
        if len(seen) == 1:
            route.fulfill(status=500, body="Server Error")  # the server never saw it
        elif len(seen) == 2:
            route.fetch()  # the server stored it ...
            route.abort()  # ... and the reply was lost on the way back
        else:
            route.continue_()

    page.route("**/answer/", flaky)
    first = answer(page, "s")
    page.wait_for_selector("#connection-banner:not([hidden])")
    assert "The server had a problem (HTTP 500)" in page.inner_text("#connection-banner")
    second = answer(page, "u")  # keys keep working meanwhile; the answer queues behind
    wait_until_sent(page)

    assert len(seen) >= 3
    assert labels_of(annotator) == {int(first): "supported", int(second): "unsupported"}
    assert "Saved: unsupported." in status(page)
    assert page.is_hidden("#connection-banner")


def test_the_undo_button_shows_only_once_there_is_an_answer_to_go_back_to(page, labelling, annotator):
    assert page.is_hidden('[data-action="undo"]')  # nothing answered yet
    answer(page, "s")
    assert page.is_visible('[data-action="undo"]')
    wait_until_sent(page)
    page.reload()
    page.wait_for_selector("#answer-form")
    assert page.is_visible('[data-action="undo"]')  # an earlier label to go back to


def test_an_item_answered_on_another_device_is_said_so_and_the_page_moves_on(page, labelling, annotator):
    from labelstudio_lite.labelling.services.assignment import submit_label

    shown = item_id(page)
    submit_label(campaign=labelling, user=annotator, item_id=int(shown), value="supported", key="phone")
    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")  # the tab comes back to the front
    page.wait_for_function(f"() => document.querySelector('#answer-form input[name=item_id]').value !== '{shown}'")
    assert "already answered this item in another tab or window" in status(page)
    assert labels_of(annotator) == {int(shown): "supported"}


def test_z_undoes_the_last_answer_and_shows_it(page, labelling, annotator):
    first = answer(page, "s")
    wait_until_sent(page)
    second = item_id(page)
    page.fill("#rationale", "half a thought")  # typed on the item on screen before going back
    page.keyboard.press("Escape")

    press(page, "z")
    page.wait_for_selector(".label-editor")
    assert page.inner_text("#current-label") == "Supported"
    assert page.get_attribute('.label-editor button[value="supported"]', "aria-pressed") == "true"
    page.screenshot(path=str(ARTIFACTS / "undo-shows-the-last-answer.png"))
    press(page, "u")
    page.wait_for_selector("#answer-form")
    wait_until_sent(page)

    assert item_id(page) == second  # back on the item that was on screen, with what was typed on it
    assert page.input_value("#rationale") == "half a thought"
    assert labels_of(annotator) == {int(first): "unsupported"}
    assert "Changed your earlier answer to unsupported." in status(page)

    # an answer not sent yet comes straight back, with its rationale
    page.context.set_offline(True)
    page.fill("#rationale", "the chunk says 14 days")
    page.keyboard.press("Escape")
    press(page, "s")
    wait_for_next_item(page, second)
    press(page, "z")
    page.wait_for_function(f"() => document.querySelector('#answer-form input[name=item_id]').value === '{second}'")
    assert page.input_value("#rationale") == "the chunk says 14 days"
    assert "Your answer was: supported (not sent)" in page.inner_text(".previous-answer")
    page.context.set_offline(False)
    answer(page, "u")
    wait_until_sent(page)
    assert labels_of(annotator) == {int(first): "unsupported", int(second): "unsupported"}
    assert Label.objects.get(item_id=second).rationale == "the chunk says 14 days"

    # a skip too: the item comes back
    skipped = answer(page, "k")
    wait_until_sent(page)
    press(page, "z")
    page.wait_for_function(f"() => document.querySelector('#answer-form input[name=item_id]').value === '{skipped}'")
    answer(page, "s")
    wait_until_sent(page)
    assert labels_of(annotator)[int(skipped)] == "supported"


def test_question_mark_opens_the_shortcut_list_and_keys_wait_while_it_is_open(page, labelling, annotator):
    shown = item_id(page)

    press(page, "?")
    assert page.is_visible("#shortcuts")
    page.screenshot(path=str(ARTIFACTS / "shortcut-list.png"))
    text = page.inner_text("#shortcuts")
    assert "Undo" in text and "Can't tell" in text and "Skip" in text
    page.keyboard.press("s")
    page.wait_for_timeout(300)
    assert item_id(page) == shown and labels_of(annotator) == {}
    page.keyboard.press("Escape")
    assert page.is_hidden("#shortcuts")
    press(page, "?")
    press(page, "?")
    assert page.is_hidden("#shortcuts")
    answer(page, "s")
    wait_until_sent(page)
    assert labels_of(annotator) == {int(shown): "supported"}


def test_the_page_does_not_move_after_an_answer(page, labelling):
    page.set_viewport_size({"width": 1280, "height": 500})
    page.mouse.wheel(0, 120)
    page.wait_for_timeout(200)
    before = page.evaluate("window.scrollY")
    assert before > 0

    for key in "suc":
        answer(page, key)
        page.wait_for_timeout(150)
        assert page.evaluate("window.scrollY") == before


@pytest.mark.parametrize("width,height", [(390, 844), (360, 640), (1440, 900)])
def test_the_answer_buttons_are_on_the_first_screen_on_a_phone_and_a_desktop(
    width, height, new_page, live_server, tmp_path, annotator, make_campaign
):
    run = make_marked_run(folder=tmp_path / "run", n=4, evalset="phone")
    campaign = make_campaign(run=run, name="phone", overlap=1, annotators=[annotator])
    page = new_page(width, height)
    log_in(page, live_server.url, "adam", "annot-pass-123", f"/label/{campaign.name}/")
    page.wait_for_selector("#answer-form")

    off_screen = page.evaluate("""() => [...document.querySelectorAll('.choices button, .choices a')]
        .filter(el => el.offsetParent !== null)
        .filter(el => { const r = el.getBoundingClientRect(); return r.top < 0 || r.bottom > window.innerHeight || r.right > window.innerWidth; })
        .map(el => el.textContent.trim())""")
    page.screenshot(path=str(ARTIFACTS / f"label-first-screen-{width}.png"))
    assert not off_screen, f"answer buttons below the first screen at {width}x{height}: {off_screen}"
    question = page.evaluate("document.getElementById('judge-question').getBoundingClientRect().bottom")
    assert question <= height
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 1
    answer(page, "s")  # and they work from there
    wait_until_sent(page)
    assert len(labels_of(annotator)) == 1
