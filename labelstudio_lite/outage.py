"""Outages of what the app depends on (the database, the broker, the storage), told apart from bugs.

Every door answers an outage in its own terms and never with a traceback: the API with a JSON 503
and ``Retry-After`` (:func:`api_exception_handler`), pages with the 503 page (:func:`outage_response`
from the 500 handler), management commands with one line on standard error (``manage.py``).
"""

from __future__ import annotations

from django.db import InterfaceError, OperationalError

from evalcore.jobs.errors import BrokerUnavailable

RETRY_AFTER_SECONDS = 30


def outage_message(error: BaseException) -> str | None:
    """What is unavailable, in words, if ``error`` is an outage (not a bug); None otherwise."""
    if isinstance(error, BrokerUnavailable):
        return str(error)
    if isinstance(error, OperationalError | InterfaceError) or type(error).__name__ == "DatabaseBusy":
        return f"The database is unavailable ({_first_line(error)}). Nothing was changed: try again shortly."
    name = f"{type(error).__module__}.{type(error).__name__}"
    if name.startswith(("kombu.", "redis.", "amqp.")) and ("Connection" in name or "OperationalError" in name):
        return f"The job queue (broker) is unavailable ({_first_line(error)}). Try again shortly."
    if name.startswith(("botocore.", "boto3.")) and "Error" in name:
        return f"The file storage is unavailable ({_first_line(error)}). Try again shortly."
    return None


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def api_exception_handler(exc: Exception, context: dict):  # type: ignore[no-untyped-def]
    """DRF's exception handler, with outages answered 503 in JSON (``{"detail": ..., "unavailable": true}``)."""
    from rest_framework.response import Response
    from rest_framework.views import exception_handler

    response = exception_handler(exc, context)
    if response is not None:
        return response
    message = outage_message(exc)
    if message is None:
        return None
    _log(exc, context["request"].path)
    return Response({"detail": message, "unavailable": True}, status=503, headers=_retry_after())


def outage_response(request, error: BaseException | None):  # type: ignore[no-untyped-def]
    """A 503 for a request that met an outage (JSON for the API, the 503 page otherwise); None if it is a bug."""
    from django.http import HttpResponse, JsonResponse
    from django.template.loader import render_to_string

    message = outage_message(error) if error is not None else None
    if message is None:
        return None
    _log(error, request.path)
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message, "unavailable": True}, status=503, headers=_retry_after())
    try:
        body = render_to_string("503.html", {"message": message, "title": "Unavailable for a moment"}, request=request)
    except Exception:  # the layout needs the database and the session: they may be what is away
        body = message
    return HttpResponse(body, status=503, headers=_retry_after())


def _retry_after() -> dict[str, str]:
    return {"Retry-After": str(RETRY_AFTER_SECONDS)}


def _log(error: BaseException, path: str) -> None:
    import logging

    logging.getLogger("labelstudio_lite.outage").error("outage answered 503 on %s: %s", path, _first_line(error))
