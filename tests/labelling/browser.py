"""Helpers for the labelling page in a real browser (the fixtures are in tests/conftest.py)."""

from __future__ import annotations

from labelstudio_lite.labelling.views.annotate import GUARD_MS


def item_id(page) -> str:
    """The id of the item on screen."""
    return page.input_value("#answer-form input[name=item_id]")


def wait_for_next_item(page, previous: str) -> None:
    """Wait until another item (or the finished panel) is on screen."""
    page.wait_for_function(
        """prev => { const el = document.querySelector('#answer-form input[name=item_id]');
                     return (el && el.value !== prev) || document.querySelector('.panel.done'); }""",
        arg=previous,
    )


def press(page, key: str) -> None:
    """Press ``key`` as a person does: after the double-press guard of the item on screen has passed."""
    page.wait_for_timeout(GUARD_MS + 60)
    page.keyboard.press(key)


def answer(page, key: str) -> str:
    """Answer the item on screen with ``key`` and wait for the next one; return the answered item's id."""
    current = item_id(page)
    press(page, key)
    wait_for_next_item(page, current)
    return current


def wait_until_sent(page) -> None:
    """Wait until the page has no answer left to send."""
    page.wait_for_function("() => !document.getElementById('share-pending').textContent")


def status(page) -> str:
    return page.inner_text("#label-status")


def tab_to(page, predicate_js: str, limit: int = 60) -> None:
    """Press Tab until the focused element matches (keyboard only, no clicks)."""
    for _ in range(limit):
        if page.evaluate(f"(() => {{ const el = document.activeElement; return !!(el && ({predicate_js})); }})()"):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached an element matching {predicate_js}")
