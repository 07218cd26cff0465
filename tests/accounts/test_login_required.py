"""Every page needs a login, except the few meant for people (or machines) who have none: walked from the URL patterns."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

pytestmark = pytest.mark.django_db

#: Open without a login, and why.
OPEN = {
    "login": "the login page",
    "accounts:link": "a one-time link sets a password for someone who has none yet",
    "favicon": "an icon",
    "healthz": "load balancers",
    "readyz": "load balancers",
    "metrics": "Prometheus (a bearer token or staff, checked by the view)",
}
ARGUMENTS = {"int": 1, "id": 1, "slug": "x", "string": "x", "path": "x"}


def pages() -> list[tuple[str, str]]:
    found = []

    def walk(patterns, namespace, prefix):
        for entry in patterns:
            route = prefix + str(entry.pattern)
            if isinstance(entry, URLResolver):
                if entry.namespace != "admin":
                    walk(entry.url_patterns, entry.namespace or namespace, route)
            elif isinstance(entry, URLPattern) and entry.name and not route.startswith("api/"):
                name = f"{namespace}:{entry.name}" if namespace else entry.name
                kwargs = {
                    key: ARGUMENTS[type(c).__name__.removesuffix("Converter").lower()]
                    for key, c in entry.pattern.converters.items()
                }
                found.append((name, reverse(name, kwargs=kwargs)))

    walk(get_resolver().url_patterns, None, "")
    return found


def test_every_page_but_the_open_ones_sends_a_visitor_without_a_login_to_the_login_page():
    walked = pages()
    assert {"accounts:people", "accounts:tokens", "accounts:person", "labelling:leave"} <= {n for n, _ in walked}
    for name, url in walked:
        for method in ("get", "post"):
            response = getattr(Client(), method)(url)
            if name in OPEN:
                assert response.status_code != 302 or "/accounts/login/" not in response.get("Location", ""), name
            else:
                assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), (
                    name,
                    method,
                    response.status_code,
                )
