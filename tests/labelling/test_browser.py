"""End to end in headless Chromium: an annotator labels with the keyboard only, goes back, finishes.

Screenshots land in tests/browser/artifacts/ (gitignored): the labelling page at 1280x800, the
recent labels, the edit page and the finished state.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from labelstudio_lite.labelling.models import Label, Lease
from tests.factories import make_marked_run

ARTIFACTS = Path(__file__).resolve().parents[1] / "browser" / "artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def page(live_server, monkeypatch):
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's loop runs on this thread
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        page.set_default_timeout(10_000)
        try:
            yield page
        finally:
            context.close()
            browser.close()
            # While Playwright's loop runs, the test's queries use a connection of their own
            # (Django keys connections by context): close it, or PostgreSQL cannot drop the test
            # database at the end ("being accessed by other users").
            from django.db import connections

            connections.close_all()


def item_id(page) -> str:
    return page.input_value("input[name=item_id]")


def wait_for_next_item(page, previous: str) -> None:
    page.wait_for_function(
        """prev => { const el = document.querySelector('input[name=item_id]');
                     return (el && el.value !== prev) || document.querySelector('.panel.done'); }""",
        arg=previous,
    )


def tab_to(page, predicate_js: str, limit: int = 60) -> None:
    """Press Tab until the focused element matches (keyboard only, no clicks)."""
    for _ in range(limit):
        if page.evaluate(f"(() => {{ const el = document.activeElement; return !!(el && ({predicate_js})); }})()"):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached an element matching {predicate_js}")


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
    page.goto(f"{live_server.url}/accounts/login/?next=/label/{campaign.name}/")
    page.keyboard.type("adam")
    page.keyboard.press("Tab")
    page.keyboard.type("annot-pass-123")
    page.keyboard.press("Enter")
    page.wait_for_url(label_url)
    page.wait_for_selector("#answer-form")
    page.screenshot(path=str(ARTIFACTS / "labelling-page-1280x800.png"))
    assert page.viewport_size == {"width": 1280, "height": 800}
    assert page.locator("kbd").all_inner_texts()[:5] == ["S", "U", "C", "K", "B"]

    # S: supported; the next item swaps in without a page load
    page.evaluate("window.__marker = 'same-page'")
    first = item_id(page)
    page.keyboard.press("s")
    wait_for_next_item(page, first)
    assert page.evaluate("window.__marker") == "same-page", "the page reloaded instead of swapping the item in"
    assert "Saved: supported." in page.inner_text("#item-area")
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
    third = item_id(page)
    page.keyboard.press("c")
    wait_for_next_item(page, third)
    fourth = item_id(page)
    page.keyboard.press("k")
    wait_for_next_item(page, fourth)
    assert "Skipped" in page.inner_text("#item-area")
    assert page.evaluate("window.__marker") == "same-page"
    page.screenshot(path=str(ARTIFACTS / "labelling-page-after-four-keys.png"))

    # B: back to the recent labels, open the first one and change it with U
    page.keyboard.press("b")
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
        current = item_id(page)
        page.keyboard.press("s")
        wait_for_next_item(page, current)
    assert "You're done." in page.inner_text("#item-area")
    assert page.locator("#answer-form").count() == 0
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


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_key_pressed_the_moment_the_next_item_swaps_in_still_answers_without_a_page_load(
    page, live_server, tmp_path, annotator, make_campaign
):
    run = make_marked_run(folder=tmp_path / "run", n=3, evalset="quick")
    campaign = make_campaign(run=run, name="quick", overlap=1, annotators=[annotator])
    page.goto(f"{live_server.url}/accounts/login/?next=/label/{campaign.name}/")
    page.keyboard.type("adam")
    page.keyboard.press("Tab")
    page.keyboard.type("annot-pass-123")
    page.keyboard.press("Enter")
    page.wait_for_selector("#answer-form")
    # press U as soon as htmx has swapped the next item in (before the swap settles)
    page.evaluate("""() => {
        window.__marker = 'same-page';
        document.body.addEventListener('htmx:afterSwap', () => {
            if (window.__pressed) return;
            window.__pressed = true;
            setTimeout(() => document.dispatchEvent(new KeyboardEvent('keydown', {key: 'u', bubbles: true})), 0);
        });
    }""")
    hx_posts = []
    page.on("request", lambda r: hx_posts.append(r.headers.get("hx-request")) if r.method == "POST" else None)

    page.keyboard.press("s")
    page.wait_for_function(  # a function, not an expression: Playwright evals expressions, which the CSP refuses
        "() => document.getElementById('share-done') && document.getElementById('share-done').textContent === '2'"
    )

    assert page.evaluate("window.__marker") == "same-page"
    assert hx_posts == ["true", "true"]
    assert sorted(Label.objects.filter(annotator=annotator).values_list("value", flat=True)) == [
        "supported",
        "unsupported",
    ]
