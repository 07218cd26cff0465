"""Health for operators: ``/healthz`` (the process answers), ``/readyz`` (it can do its work), ``/metrics``.

``/healthz`` and ``/readyz`` need no login (a load balancer or an orchestrator calls them) and tell
nothing private: each check's name, whether it passed, how long it took and, when it failed, why.
``/readyz`` answers 503 when any check fails, so a proxy stops sending requests to a host that
cannot serve them. ``/metrics`` (Prometheus) is for staff or the bearer of ``METRICS_TOKEN``.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from .celery import app as celery_app
from .outage import _first_line
from .prometheus import export


def check_database() -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return connection.vendor


def check_migrations() -> str:
    """Every migration is applied (a host started on a newer release before ``migrate`` ran is not ready)."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if plan:
        names = ", ".join(f"{m.app_label}.{m.name}" for m, _ in plan[:5])
        raise RuntimeError(f"{len(plan)} migration(s) not applied ({names}): run manage.py migrate")
    return "all applied"


def check_broker() -> str:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return "none: jobs run in-process (embedded mode)"
    with celery_app.connection_for_write() as connection:
        connection.ensure_connection(max_retries=1, timeout=2)
        return connection.as_uri()  # the password masked


def check_storage() -> str:
    from django.core.files.storage import default_storage

    try:
        default_storage.listdir("uploads")  # a folder that is there, or a bucket that answers a listing
    except FileNotFoundError:  # a local storage that has stored nothing yet
        pass
    return type(default_storage).__name__


def check_cache() -> str:
    from django.core.cache import cache

    cache.set("readyz", "ok", 10)
    if cache.get("readyz") != "ok":
        raise RuntimeError("a value written to the cache could not be read back")
    return settings.CACHES["default"]["BACKEND"].rsplit(".", 1)[-1]


CHECKS: dict[str, Callable[[], str]] = {
    "database": check_database,
    "migrations": check_migrations,
    "broker": check_broker,
    "storage": check_storage,
    "cache": check_cache,
}


def readiness() -> tuple[bool, dict[str, dict]]:
    """Run every check; return whether all passed, and each one's outcome."""
    results: dict[str, dict] = {}
    for name, check in CHECKS.items():
        started = time.perf_counter()
        try:
            detail, ok = check(), True
        except Exception as error:  # a check fails however its dependency fails
            detail, ok = _first_line(error), False
        results[name] = {"ok": ok, "detail": detail, "ms": round(1000 * (time.perf_counter() - started), 1)}
    return all(r["ok"] for r in results.values()), results


@login_not_required
@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """The process is up and answering (no dependency is checked: that is /readyz)."""
    return JsonResponse({"status": "ok"})


@login_not_required
@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """Database, migrations, broker, storage and cache reachable: 200, else 503 with the failed checks."""
    ready, checks = readiness()
    return JsonResponse({"status": "ok" if ready else "unavailable", "checks": checks}, status=200 if ready else 503)


@login_not_required  # a scraper has no session: it sends the token (checked here)
@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus metrics (django-prometheus plus the job metrics): staff, or ``Authorization: Bearer METRICS_TOKEN``."""
    token = settings.METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    bearer = header.removeprefix("Bearer ").strip() if header.startswith("Bearer ") else ""
    allowed = (bool(token) and bool(bearer) and hmac.compare_digest(bearer, token)) or (
        request.user.is_authenticated and request.user.is_staff
    )
    if not allowed:
        raise PermissionDenied("metrics are for staff, or a request with Authorization: Bearer METRICS_TOKEN")
    return HttpResponse(export(), content_type=CONTENT_TYPE_LATEST)
