"""The labelling page as an annotator's browser gets it: the page (a GET that claims nothing), then
the item it asks for with a POST once loaded."""

from __future__ import annotations

from django.urls import reverse


def open_label_page(client, name: str, **extra):
    """GET the labelling page, then POST for its item as the loaded page does; return the item's response."""
    page = client.get(reverse("labelling:label", args=[name]))
    assert page.status_code == 200, page.status_code
    assert 'hx-trigger="load"' in page.content.decode()  # the page asks for its item itself
    return client.post(reverse("labelling:next", args=[name]), **extra)
