"""The labelling page as an annotator's browser gets it: the page (a GET that claims nothing), then
its items, which the loaded page asks for with a POST."""

from __future__ import annotations

import re

from django.urls import reverse

JSON = {"HTTP_ACCEPT": "application/json"}


def open_label_page(client, name: str, **extra):
    """GET the labelling page, then POST for its item as a browser without JavaScript does; return the item's page."""
    page = client.get(reverse("labelling:label", args=[name]))
    assert page.status_code == 200, page.status_code
    assert 'data-next-url="' in page.content.decode()  # the page asks for its items itself
    return client.post(reverse("labelling:next", args=[name]), **extra)


def take_items(client, name: str, have: list[int] | None = None) -> dict:
    """POST for the page's items as label.js does (JSON); return the reply."""
    response = client.post(reverse("labelling:next", args=[name]), {"have": ",".join(map(str, have or []))}, **JSON)
    assert response.status_code == 200, response.status_code
    return response.json()


def send_answer(client, name: str, **fields) -> dict:
    """POST one answer as label.js does (JSON); return the reply."""
    response = client.post(reverse("labelling:answer", args=[name]), fields, **JSON)
    assert response.status_code == 200, response.status_code
    return response.json()


def key_of(html: str) -> str:
    """The idempotency key the server gave an item's form."""
    return re.search(r'name="key" value="([^"]+)"', html).group(1)
