"""The labelling page in headless Chromium, the slower cases (marked ``slow``: CI runs them, ``./dev test`` leaves them):

* a lease that runs out while the annotator reads or writes (a short ``LABEL_LEASE_SECONDS``);
* an import writing on SQLite while two annotators label: no error on screen, every answer stored once;
* 100 items in a row: the keypress-to-next-item times are printed (a measurement, not an assertion),
  and double presses at several gaps show what the guard stops.
"""

from __future__ import annotations

import statistics
import threading

import pytest
from django.db import connections
from django.utils import timezone

from evalcore.services.runs import run_import
from labelstudio_lite.labelling.models import Label, Lease
from labelstudio_lite.labelling.services.assignment import next_item
from labelstudio_lite.labelling.views.annotate import GUARD_MS
from tests.conftest import ARTIFACTS, log_in
from tests.factories import JUDGE, make_eval_set, make_marked_run, qid_of
from tests.files import write_jsonl

from .browser import answer, item_id, press, status, wait_until_sent

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LEASE = 4  # seconds: the page warns in the last third and renews in the second half while people are active


@pytest.fixture
def short_lease(settings, tmp_path, annotator, other_annotator, make_campaign):
    settings.LABEL_LEASE_SECONDS = LEASE
    run = make_marked_run(folder=tmp_path / "run", n=12, evalset="lease")
    return make_campaign(run=run, name="lease", overlap=1, annotators=[annotator, other_annotator])


def open_labelling(page, live_server, campaign, username="adam", password="annot-pass-123"):
    log_in(page, live_server.url, username, password, f"/label/{campaign.name}/")
    page.wait_for_selector("#answer-form")


def wait_for_timer(page, text: str, timeout: float = 15_000) -> None:
    page.wait_for_function(
        "t => document.getElementById('lease-timer').textContent.includes(t)", arg=text, timeout=timeout
    )


def test_a_lease_that_ran_out_while_reading_still_takes_the_answer_when_nobody_took_the_item(
    page, live_server, short_lease, annotator
):
    open_labelling(page, live_server, short_lease)
    shown = item_id(page)

    wait_for_timer(page, "Your hold on this item ends in 0:0")  # the warning once time runs low
    page.screenshot(path=str(ARTIFACTS / "lease-running-low.png"))
    wait_for_timer(page, "ran out")
    assert Lease.objects.get(item_id=shown, annotator=annotator).expires_at < timezone.now()
    page.keyboard.press("s")
    page.wait_for_function("() => document.getElementById('label-status').textContent === 'Saved: supported.'")

    assert item_id(page) != shown
    assert dict(Label.objects.filter(annotator=annotator).values_list("item_id", "value")) == {int(shown): "supported"}
    assert page.locator("#label-alert p").count() == 0


def test_an_answer_is_refused_only_when_someone_else_took_the_item_and_the_rationale_stays(
    page, live_server, short_lease, annotator, other_annotator
):
    open_labelling(page, live_server, short_lease)
    shown = item_id(page)
    page.fill("#rationale", "chunk 2 contradicts the answer")
    page.keyboard.press("Escape")
    wait_for_timer(page, "ran out")
    taken = next_item(campaign=short_lease, user=other_annotator)  # releases the expired leases, takes the first
    assert str(taken.item.pk) == shown

    press(page, "u")
    page.wait_for_function("() => document.querySelector('#label-alert p')")

    assert "someone else took it" in page.inner_text("#label-alert")
    assert item_id(page) == shown  # still on screen ...
    assert page.input_value("#rationale") == "chunk 2 contradicts the answer"  # ... with the rationale kept
    page.screenshot(path=str(ARTIFACTS / "lease-taken-rationale-kept.png"))
    answer(page, "k")  # K moves on
    assert not Label.objects.filter(annotator=annotator).exists()


def test_an_annotator_who_keeps_working_keeps_the_item(page, live_server, short_lease, annotator):
    open_labelling(page, live_server, short_lease)
    shown = item_id(page)
    page.click("#rationale")

    for word in "the answer cites a date that no chunk mentions at all".split():  # about 2.5 lease times
        page.keyboard.type(word + " ")
        page.wait_for_timeout(900)
        assert "ran out" not in page.inner_text("#lease-timer")
    page.keyboard.press("Escape")
    press(page, "s")
    wait_until_sent(page)

    assert Label.objects.get(annotator=annotator).item_id == int(shown)
    assert Label.objects.get(annotator=annotator).rationale.startswith("the answer cites")


@pytest.mark.sqlite
def test_two_annotators_label_through_an_import_on_sqlite_and_see_no_error(
    new_page, live_server, tmp_path, annotator, other_annotator, make_campaign, settings
):
    settings.DB_BUSY_RETRY_SECONDS = 0.3  # give up on the lock quickly, so the pages meet 503s
    run = make_marked_run(folder=tmp_path / "run", n=40, evalset="during")
    campaign = make_campaign(run=run, name="during", overlap=1, annotators=[annotator, other_annotator])
    n = 12_000
    make_eval_set(
        folder=tmp_path / "big",
        name="big",
        questions=[{"id": qid_of(i), "question": f"Question {i}?", "gold": [{"doc": f"d{i}"}]} for i in range(n)],
    )
    rows = write_jsonl(
        tmp_path / "big" / "rows.jsonl",
        [
            {"id": qid_of(i), "retrieved": [f"d{i}", "x"], "context": ["c"], "answer": "a", "scores": {"f": 0.5}}
            for i in range(n)
        ],
    )
    pages = []
    for username, password in (("adam", "annot-pass-123"), ("bea", "annot-pass-456")):
        page = new_page()
        open_labelling(page, live_server, campaign, username, password)
        pages.append(page)
    busy, errors = [], []
    for page in pages:
        page.on("response", lambda r: (busy if r.status == 503 else errors).append(r.url) if r.status >= 500 else None)

    writing = threading.Event()
    failures = []

    def import_in_the_background():
        try:
            run_import(
                path=rows,
                evalset="big",
                name="nightly",
                k=1,
                judge_config=JUDGE,
                progress=lambda done, total, message: writing.set() if "writing" in message else None,
            )
        except BaseException as error:  # noqa: BLE001 - reported by the test
            failures.append(error)
            writing.set()
        finally:
            connections.close_all()

    importer = threading.Thread(target=import_in_the_background)
    importer.start()
    assert writing.wait(60)
    answered = {page: [] for page in pages}
    while importer.is_alive() or min(len(ids) for ids in answered.values()) < 4:
        for page in pages:  # each person answers whatever is on screen, as fast as the guard lets them
            if page.locator("#answer-form").count() and len(answered[page]) < 12:
                shown = item_id(page)
                if shown not in answered[page]:
                    press(page, "s" if len(answered[page]) % 2 else "u")
                    answered[page].append(shown)
        pages[0].wait_for_timeout(50)
    importer.join()
    for page in pages:
        wait_until_sent(page)
        assert page.locator("#label-alert p").count() == 0, page.inner_text("#label-alert")
        assert page.is_hidden("#connection-banner")
    pages[0].screenshot(path=str(ARTIFACTS / "labelled-through-an-import.png"))

    assert not failures and not errors
    for page, user in zip(pages, (annotator, other_annotator)):
        stored = sorted(Label.objects.filter(annotator=user).values_list("item_id", flat=True))
        assert stored == sorted(int(i) for i in answered[page])  # every answer, exactly once
    print(f"\n{len(busy)} requests met the import's lock and were answered 503, then sent again")
    assert busy  # the pages did meet the import's lock (and handled it without a word of error)


def test_keypress_to_next_item_over_100_items(page, live_server, tmp_path, annotator, make_campaign):
    """A measurement for the record (printed, not asserted): how long the next item takes to appear after a key."""
    run = make_marked_run(folder=tmp_path / "run", n=120, evalset="timing")
    campaign = make_campaign(run=run, name="timing", overlap=1, annotators=[annotator])
    open_labelling(page, live_server, campaign)
    page.evaluate("""() => {
        window.__times = []; window.__down = 0;
        document.addEventListener('keydown', () => { window.__down = performance.now(); }, true);
        document.addEventListener('lsl:item-shown', () => {
            const down = window.__down;
            if (down) requestAnimationFrame(() => { window.__times.push(performance.now() - down); window.__down = 0; });
        });
    }""")

    for i in range(100):
        answer(page, "su"[i % 2])
    wait_until_sent(page)
    times = page.evaluate("window.__times")

    assert Label.objects.filter(annotator=annotator).count() == 100
    assert len(times) == 100
    ordered = sorted(times)
    p95 = ordered[int(0.95 * len(ordered)) - 1]
    print(
        f"\nkeypress to next item on screen (next frame), 100 items: median {statistics.median(times):.1f} ms, "
        f"p95 {p95:.1f} ms, max {ordered[-1]:.1f} ms"
    )

    # double presses at several gaps, each gap measured inside the page as the guard sees it (a busy
    # machine fires a timer late: a 240 ms timer can press at 260 ms), so each case is judged by its real gap
    stopped, seen = {}, {}
    for gap in (100, 150, 200, 240, 270, 300, 400):
        before = Label.objects.filter(annotator=annotator).count()
        page.wait_for_timeout(GUARD_MS + 100)
        seen[gap] = page.evaluate(
            """gap => new Promise(done => {
                const press = () => document.dispatchEvent(new KeyboardEvent('keydown', {key: 's', bubbles: true}));
                const first = performance.now();
                press();
                setTimeout(() => { const after = performance.now() - first; press(); done(after); }, gap);
            })""",
            gap,
        )
        wait_until_sent(page)
        stopped[gap] = Label.objects.filter(annotator=annotator).count() - before == 1
    print(f"double press stopped by the {GUARD_MS} ms guard, by gap in ms (as pressed): {stopped}; gaps seen: {seen}")
    under = [gap for gap in stopped if seen[gap] < GUARD_MS - 5]  # clear of the guard's own clock reading
    assert len(under) >= 3 and all(stopped[gap] for gap in under), (stopped, seen)  # every gap under the guard
    assert not stopped[400]  # a deliberate second answer goes through
    assert "Saved" in status(page)
