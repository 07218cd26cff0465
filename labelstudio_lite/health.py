"""Health for operators: ``/healthz`` (the process answers), ``/readyz`` (it can do its work), ``/metrics``.

``/healthz`` and ``/readyz`` need no login (a load balancer or an orchestrator calls them) and tell
nothing private: each check's name, whether it passed, how long it took and, when it failed, why.
``/readyz`` answers 503 when any check fails, so a proxy stops sending requests to a host that
cannot serve them; it also says whether a worker consumes the jobs' queue (``workers``), which does
not make it fail: pages are served without workers, jobs wait queued (the job page says so). ``/metrics`` (Prometheus) is for staff or the bearer of ``METRICS_TOKEN``.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable
from dataclasses import dataclass

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


#: How long workers are given to answer, and how long their answer is reused (a job page polls every second).
WORKERS_TIMEOUT = 0.5
WORKERS_CACHE_SECONDS = 10


@dataclass(frozen=True)
class Workers:
    """Whether a Celery worker consumes the queue jobs are sent to (None in the embedded mode: none by design)."""

    consuming: bool | None
    detail: str


def workers_consuming(*, timeout: float = WORKERS_TIMEOUT, broker_up: bool = True) -> Workers:
    """Ask the workers which queues they read (``inspect().active_queues()``), the answer kept ``WORKERS_CACHE_SECONDS``.

    ``broker_up`` False (the caller found it away) answers at once: no worker can be asked, nor take a job.
    """
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return Workers(None, "none by design: jobs run in this process (embedded mode)")
    if not broker_up:
        return Workers(False, "the workers could not be asked: the broker does not answer")
    from django.core.cache import cache

    queue = celery_app.conf.task_default_queue
    key = f"lsl:workers:{queue}"
    try:
        kept = cache.get(key)
    except Exception:  # the cache away: ask the workers every time
        kept = None
    if kept is not None:
        return Workers(*kept)
    try:
        with celery_app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=1, timeout=2)  # a broker away: said in seconds, not retried
            replies = celery_app.control.inspect(timeout=timeout, connection=connection).active_queues() or {}
    except Exception as error:  # the broker away: no worker can be reached (nor take a job)
        found = Workers(False, f"the workers could not be asked (the broker: {_first_line(error)})")
    else:
        consumers = sorted(
            name for name, queues in replies.items() if any(q.get("name") == queue for q in queues or ())
        )
        if consumers:
            found = Workers(True, f"{len(consumers)} worker(s) consume queue {queue!r}: {', '.join(consumers[:3])}")
        elif replies:
            found = Workers(
                False, f"no worker consumes queue {queue!r} ({len(replies)} answered, reading other queues)"
            )
        else:
            found = Workers(
                False,
                f"no worker answered within {timeout:g} s: jobs wait queued until one starts "
                "(celery -A labelstudio_lite worker)",
            )
    try:
        cache.set(key, (found.consuming, found.detail), WORKERS_CACHE_SECONDS)
    except Exception:
        pass
    return found


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
    started = time.perf_counter()
    workers = workers_consuming(broker_up=checks["broker"]["ok"])
    # told, not checked: a web host without workers still serves every page (jobs wait queued)
    body = {
        "status": "ok" if ready else "unavailable",
        "checks": checks,
        "workers": {
            "consuming": workers.consuming,
            "detail": workers.detail,
            "ms": round(1000 * (time.perf_counter() - started), 1),
        },
    }
    return JsonResponse(body, status=200 if ready else 503)


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
