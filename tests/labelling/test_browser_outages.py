"""Annotators through longer outages, and a second tab, in headless Chromium (marked ``slow``: CI runs them).

* The page holds a few minutes of work (13 items at the default pace) and keeps serving it offline,
  through 502s and connection resets; it says plainly that answers are waiting and will be sent, and
  why it waits once it has nothing left it may show; every answer is stored once, in order.
* Offline, an item whose hold ran out is not shown (its answer might be refused); it comes back
  with the connection.
* A second tab of the same browser is told at once that the campaign is open elsewhere, claims
  nothing, and may take over: the first pauses and the answers it had not sent are sent by the new
  one. Another browser (a second device) is told by the server, and may take over too.
"""

from __future__ import annotations

import pytest

from labelstudio_lite.labelling.models import Label, Lease
from tests.conftest import ARTIFACTS, log_in
from tests.factories import make_marked_run

from .browser import answer, item_id, press, wait_until_sent

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ELSEWHERE = "This campaign is open elsewhere"


@pytest.fixture
def big_campaign(tmp_path, annotator, make_campaign):
    run = make_marked_run(folder=tmp_path / "run", n=30, evalset="outage")
    return make_campaign(run=run, name="outage", overlap=1, annotators=[annotator])


def open_page(page, live_server, campaign):
    log_in(page, live_server.url, "adam", "annot-pass-123", f"/label/{campaign.name}/")
    page.wait_for_selector("#answer-form")


def stored(user) -> list[int]:
    return list(Label.objects.filter(annotator=user).order_by("created_at", "pk").values_list("item_id", flat=True))


def held(user) -> int:
    return Lease.objects.active().filter(annotator=user).count()


def back_online(page) -> None:
    """The network is back; the person presses "Try again now" (or the browser's online event already did)."""
    page.context.set_offline(False)
    page.evaluate("document.getElementById('retry-now').click()")


def banner(page) -> str:
    page.wait_for_selector("#connection-banner:not([hidden])")
    return page.inner_text("#connection-banner")


def test_offline_the_page_serves_a_few_minutes_of_held_work_says_why_it_waits_and_loses_nothing(
    page, live_server, big_campaign, annotator
):
    open_page(page, live_server, big_campaign)
    assert held(annotator) == 13  # the item on screen and 12 more: 4 minutes at 20 s an item

    page.context.set_offline(True)
    answered = [answer(page, key) for key in "suc" * 4]  # 12 answers, the items come at once
    assert "The connection is down: 12 answers are waiting in this browser, not saved yet" in banner(page)
    last = item_id(page)
    press(page, "s")  # the 13th, the last item held
    page.wait_for_selector("#item-area .panel.waiting")

    waiting = page.inner_text("#item-area")
    assert "The connection is down and you have answered every item this page held." in waiting
    assert "13 answers are waiting in this browser and will be sent as soon as the connection is back" in waiting
    assert page.inner_text("#share-pending") == " (13 being sent)"
    page.screenshot(path=str(ARTIFACTS / "outage-13-answers-waiting.png"))
    assert stored(annotator) == []

    back_online(page)
    page.wait_for_selector("#answer-form")
    wait_until_sent(page)
    assert stored(annotator) == [int(i) for i in [*answered, last]]  # each once, in the order given
    assert page.is_hidden("#connection-banner")


def test_offline_an_item_whose_hold_ran_out_is_not_shown_and_comes_back_with_the_connection(
    page, live_server, big_campaign, annotator, settings
):
    settings.LABEL_LEASE_SECONDS = 20  # 20 s holds: the page holds 3 items (all answerable within a hold)
    open_page(page, live_server, big_campaign)
    assert held(annotator) == 3
    page.context.set_offline(True)
    first = answer(page, "s")
    page.wait_for_timeout(6_000)  # the last held item now has under 15 s of its hold left
    second = item_id(page)
    press(page, "u")
    page.wait_for_selector("#item-area .panel.waiting")

    waiting = page.inner_text("#item-area")
    assert (
        "your hold on the 1 item left on this page ran out meanwhile: it comes back when the connection does" in waiting
    )
    assert "2 answers are waiting in this browser" in waiting

    back_online(page)
    page.wait_for_selector("#answer-form")
    wait_until_sent(page)
    assert stored(annotator) == [int(first), int(second)]
    answer(page, "c")
    wait_until_sent(page)
    assert len(stored(annotator)) == 3


@pytest.mark.parametrize("fault", ["502", "reset"])
def test_through_502s_and_connection_resets_keys_keep_working_and_every_answer_is_stored_once(
    fault, page, live_server, big_campaign, annotator
):
    open_page(page, live_server, big_campaign)
    tries = []

    def broken(route):
        tries.append(1)
        if fault == "502":
            route.fulfill(status=502, body="<html>Bad Gateway</html>", content_type="text/html")
        else:
            route.abort("connectionreset")

    page.route("**/answer/", broken)
    answered = [answer(page, key) for key in "susus"]
    words = banner(page)
    assert ("The server had a problem (HTTP 502)" if fault == "502" else "The connection is down") in words
    assert "5 answers are waiting in this browser, not saved yet; they are sent as soon as it is back" in words
    assert stored(annotator) == [] and tries

    page.unroute("**/answer/")
    page.evaluate("document.getElementById('retry-now').click()")
    wait_until_sent(page)
    assert stored(annotator) == [int(i) for i in answered]
    assert page.is_hidden("#connection-banner")


def test_a_second_tab_is_told_at_once_claims_nothing_and_taking_over_sends_what_the_first_had_not(
    page, live_server, big_campaign, annotator
):
    open_page(page, live_server, big_campaign)
    before = held(annotator)
    page.route("**/answer/", lambda route: route.fulfill(status=503, headers={"Retry-After": "60"}, body=""))
    waiting = [answer(page, key) for key in "suc"]  # kept in the first tab: the server is busy for it

    second = page.context.new_page()  # the same person, another tab of the same browser
    second.goto(page.url)
    second.wait_for_selector("#take-over", timeout=3_000)  # told at once, before any item is asked for
    assert ELSEWHERE in second.inner_text("#item-area")
    assert second.evaluate("document.activeElement.id") == "take-over"
    second.screenshot(path=str(ARTIFACTS / "second-tab-told-at-once.png"))
    assert held(annotator) == before and stored(annotator) == []

    second.keyboard.press("Enter")  # take over
    second.wait_for_selector("#answer-form")
    page.wait_for_selector("#take-over")
    assert "so this one paused" in page.inner_text("#item-area")
    wait_until_sent(second)
    assert stored(annotator) == [int(i) for i in waiting]  # the first tab's unsent answers, sent by the second
    shown = item_id(second)
    assert int(shown) not in [int(i) for i in waiting]
    answer(second, "u")
    wait_until_sent(second)
    assert Label.objects.filter(annotator=annotator).count() == 4
    page.keyboard.press("s")  # the paused tab answers nothing
    page.wait_for_timeout(400)
    assert Label.objects.filter(annotator=annotator).count() == 4

    second.close()  # the other tab closed: the paused one says so
    page.wait_for_function("() => document.querySelector('.elsewhere-note').textContent.includes('was closed')")
    page.click("#take-over")
    page.wait_for_selector("#answer-form")


def test_another_browser_is_told_by_the_server_and_may_take_over(new_page, page, live_server, big_campaign, annotator):
    open_page(page, live_server, big_campaign)  # a laptop
    phone = new_page(390, 844)  # another browser: no tab there knows of the laptop
    log_in(phone, live_server.url, "adam", "annot-pass-123", f"/label/{big_campaign.name}/")
    phone.wait_for_selector("#take-over")
    note = phone.inner_text(".elsewhere-note")
    assert "open in another tab, window or device of yours (active just now)" in note
    phone.screenshot(path=str(ARTIFACTS / "second-device-told-by-the-server.png"))

    phone.click("#take-over")
    phone.wait_for_selector("#answer-form")
    on_phone = answer(phone, "s")
    wait_until_sent(phone)
    laptop_item = item_id(page)
    press(page, "u")  # the laptop's answer is still taken (never lost) and the laptop is told
    page.wait_for_selector("#take-over")
    assert "open in another tab, window or device of yours" in page.inner_text(".elsewhere-note")
    assert set(stored(annotator)) == {int(on_phone), int(laptop_item)}
