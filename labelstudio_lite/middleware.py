"""Project-wide middleware."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse


class _QueryTimer:
    """``connection.execute_wrapper`` that adds up the queries' count and time."""

    __slots__ = ("count", "seconds")

    def __init__(self) -> None:
        self.count = 0
        self.seconds = 0.0

    def __call__(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.seconds += time.perf_counter() - start
            self.count += 1


class ServerTimingMiddleware:
    """Add a ``Server-Timing`` header to responses for staff (or with DEBUG): where the request's time went.

    ``app;dur=<ms>`` is the time Django spent on the request (registered first in ``MIDDLEWARE``,
    so it covers every other middleware, the view, its queries and the template); ``db;dur=<ms>``
    the time spent in database queries, with their number in ``desc``; ``cpu;dur=<ms>`` the CPU
    time of the thread that served it. On a busy machine ``app`` grows while ``cpu`` stays: the
    rest is waiting (for a CPU, the database or a lock). Browsers show the header in their network
    panel; load tests and benchmarks read it (``SERVER_TIMING=all``). Others get no such header:
    timings and query counts help whoever probes the server. Streaming responses get the time to
    their first byte.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        start, cpu = time.perf_counter(), time.thread_time()
        queries = _QueryTimer()
        with connection.execute_wrapper(queries):
            response = self.get_response(request)
        entries = (
            f"app;dur={(time.perf_counter() - start) * 1000:.2f}",
            f'db;dur={queries.seconds * 1000:.2f};desc="{queries.count} queries"',
            f"cpu;dur={(time.thread_time() - cpu) * 1000:.2f}",
        )
        if _shows_timing(request):
            existing = response.get("Server-Timing")
            response["Server-Timing"] = ", ".join((existing, *entries) if existing else entries)
        return response


def _shows_timing(request: HttpRequest) -> bool:
    """Whether this request may see its timings: ``SERVER_TIMING`` is ``all``, or ``staff`` (the default) and
    the user is staff or DEBUG is on; never with ``off``. Timings and query counts help an attacker probe."""
    mode = settings.SERVER_TIMING
    if mode == "all":
        return True
    if mode == "off":
        return False
    user = getattr(request, "user", None)
    return settings.DEBUG or bool(user is not None and getattr(user, "is_staff", False))
