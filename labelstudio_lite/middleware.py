"""Project-wide middleware."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from functools import wraps
from typing import Any

from django.conf import settings
from django.core.files import uploadhandler
from django.db import OperationalError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

logger = logging.getLogger(__name__)

#: What SQLite says when another connection holds its write lock (an import in the embedded mode).
_BUSY = ("database is locked", "database table is locked", "database is busy")
#: Seconds a client is asked to wait before it tries again.
RETRY_AFTER_SECONDS = 2


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


def is_database_busy(error: BaseException) -> bool:
    """Whether ``error`` is the database refusing a write because another writer holds its lock."""
    return isinstance(error, OperationalError) and any(text in str(error).lower() for text in _BUSY)


class DatabaseBusy(OperationalError):
    """The database stayed locked by another writer through the short retry (answered 503, never 500)."""


@contextlib.contextmanager
def _busy_timeout(seconds: float) -> Iterator[None]:
    """On SQLite, wait at most ``seconds`` for another writer's lock (instead of the connection's 20 s)."""
    if connection.vendor != "sqlite":
        yield
        return
    connection.ensure_connection()
    raw = connection.connection  # a setting of the driver's connection, not a query (none is logged)
    default_ms = int(1000 * float(connection.settings_dict.get("OPTIONS", {}).get("timeout", 5)))
    raw.execute(f"PRAGMA busy_timeout = {max(1, int(seconds * 1000))}")
    try:
        yield
    finally:
        if connection.connection is raw:
            raw.execute(f"PRAGMA busy_timeout = {default_ms}")


def retry_when_busy(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Run a view whose writes are idempotent again while the database is locked by another writer.

    For the labelling writes (claim, answer, change): a retried answer carries its idempotency
    key, so running the view twice stores it once. Each attempt waits briefly for the lock; after
    ``DB_BUSY_RETRY_SECONDS`` in all it gives up with :class:`DatabaseBusy`, which
    :class:`DatabaseBusyMiddleware` turns into a 503 with ``Retry-After`` (the labelling page keeps
    the answer and sends it again then). Inside a transaction it never retries (it cannot).
    """

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        budget = float(getattr(settings, "DB_BUSY_RETRY_SECONDS", 3.0))
        deadline = time.monotonic() + budget
        pause = 0.05
        with _busy_timeout(min(1.0, budget)):
            while True:
                try:
                    return view(request, *args, **kwargs)
                except OperationalError as error:
                    if not is_database_busy(error) or connection.in_atomic_block:
                        raise
                    if time.monotonic() + pause >= deadline:
                        raise DatabaseBusy(str(error)) from error
                time.sleep(pause)
                pause = min(2 * pause, 0.4)

    return wrapper


class DatabaseBusyMiddleware:
    """Answer 503 with ``Retry-After`` (never 500) when a request finds the database locked by another writer.

    In the embedded mode (SQLite) an import holds the write lock while it writes; a request that
    needs to write meanwhile is told to come back shortly. JSON for the API and the labelling
    page's own requests, the site's page otherwise.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_database_busy(exception):
            return None
        logger.warning("database busy, answered 503: %s %s", request.method, request.path)
        message = (
            "The database is busy with another write (an import may be running). Nothing was lost: "
            f"try again in {RETRY_AFTER_SECONDS} seconds."
        )
        if request.path.startswith("/api/") or "application/json" in request.headers.get("Accept", ""):
            response: HttpResponse = JsonResponse({"detail": message, "busy": True}, status=503)
        else:
            try:
                body = render_to_string("503.html", {"message": message}, request=request)
            except Exception:  # the page needs the database too: fall back to words
                body = message
            response = HttpResponse(body, status=503)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response


class TemporaryFileUploadHandler(uploadhandler.TemporaryFileUploadHandler):
    """Django's handler for uploads over FILE_UPLOAD_MAX_MEMORY_SIZE (streamed to a temporary file), which
    also tells the request about its file, so :class:`UploadCleanupMiddleware` deletes it however the request
    ended. Django deletes it itself only when the body was read to the end: a client that goes away mid-upload
    (gunicorn raises while the body is read) left it behind."""

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        super().new_file(*args, **kwargs)
        self.request.__dict__.setdefault("_upload_temp_files", []).append(self.file)


class UploadCleanupMiddleware:
    """Close (and so delete) every upload temporary file once the request is answered, whatever happened."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            return self.get_response(request)
        finally:
            for file in request.__dict__.pop("_upload_temp_files", []):
                try:
                    file.close()  # a TemporaryUploadedFile: closing deletes it (moved already: nothing to do)
                except OSError:
                    logger.warning("could not delete the upload temporary file %s", getattr(file, "name", "?"))
