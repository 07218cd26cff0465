"""The campaign form's plan is live in a real browser: it appears on load and follows the settings, before a
name is typed (the preview must not wait for the form's required fields)."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client

from tests.conftest import ARTIFACTS
from tests.factories import make_marked_run


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_plan_appears_and_follows_the_settings_before_the_campaign_is_named(page, live_server, tmp_path, owner):  # noqa: F811
    make_marked_run(folder=tmp_path / "run", n=60, evalset="browser-plan")
    client = Client()
    client.force_login(owner)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME]
    page.context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": cookie.value, "url": live_server.url}])

    page.goto(f"{live_server.url}/campaigns/")
    page.select_option("#id_run", index=1)
    page.wait_for_selector("#plan-summary")
    first = page.inner_text("#plan-summary")
    page.fill("#id_size", "40")
    page.press("#id_size", "Tab")
    page.wait_for_function("prev => document.querySelector('#plan-summary').innerText !== prev", arg=first)

    assert page.input_value("#id_name") == ""
    assert page.inner_text("#plan-summary").startswith("40 items: miss rate ±")
    assert "What this samples" in page.inner_text("#preview")
    page.screenshot(path=str(ARTIFACTS / "campaign-plan.png"), full_page=True)
