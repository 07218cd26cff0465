"""Project-wide middleware."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse


class ServerTimingMiddleware:
    """Add ``Server-Timing: app;dur=<ms>`` to every response: the time Django spent on the request.

    Registered first in ``MIDDLEWARE``, so the figure covers every other middleware, the view, its
    queries and the template. Browsers show it in their network panel; load tests and benchmarks
    read it to separate server time from network and queueing. A header only (no body change), so
    it is safe in production; streaming responses get the time to their first byte.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        start = time.perf_counter()
        response = self.get_response(request)
        entry = f"app;dur={(time.perf_counter() - start) * 1000:.2f}"
        existing = response.get("Server-Timing")
        response["Server-Timing"] = f"{existing}, {entry}" if existing else entry
        return response
