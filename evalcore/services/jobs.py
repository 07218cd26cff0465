"""Jobs: long work run as Celery tasks, with progress that pages and the CLI can show.

Progress is written to the cache at once (a task may be inside a long transaction, where a row
update would stay invisible until commit) and to the job row when the task is not inside one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import close_old_connections, connection, transaction
from django.utils import timezone

from ..models import Job

PROGRESS_TTL = 24 * 3600


def _key(job_id: int) -> str:
    return f"job-progress:{job_id}"


def job_create(*, kind: str, params: dict[str, Any], user: Any = None) -> Job:
    return Job.objects.create(kind=kind, params=params, created_by=user if getattr(user, "pk", None) else None)


def job_enqueue(job: Job) -> None:
    """Start the job's task once the current transaction commits.

    With a broker, the task goes to a Celery worker. In the embedded mode (tasks run in-process)
    a web request must not wait for it, so it runs in a background thread of the server process,
    unless ``EMBEDDED_TASKS_IN_THREAD`` is off (tests, the CLI), where it runs inline.
    """
    from ..tasks import run_job

    if settings.CELERY_TASK_ALWAYS_EAGER and not settings.EMBEDDED_TASKS_IN_THREAD:
        run_job.apply(args=(job.pk,))  # inline: the caller waits, and sees the finished job
        return

    def start() -> None:
        if settings.CELERY_TASK_ALWAYS_EAGER:
            threading.Thread(target=_run_in_thread, args=(job.pk,), daemon=True, name=f"job-{job.pk}").start()
        else:
            run_job.delay(job.pk)

    transaction.on_commit(start)


def _run_in_thread(job_id: int) -> None:
    from ..tasks import run_job

    try:
        run_job.apply(args=(job_id,))
    finally:
        close_old_connections()
        connection.close()


def progress_reporter(job_id: int) -> Callable[[int, int | None, str], None]:
    """Return a callback that records progress for the job (cheaply: at most every 0.5 s)."""
    last = [0.0]

    def report(done: int, total: int | None, message: str) -> None:
        now = timezone.now().timestamp()
        if now - last[0] < 0.5 and done != total:
            return
        last[0] = now
        cache.set(_key(job_id), {"done": done, "total": total, "message": message}, PROGRESS_TTL)
        if not connection.in_atomic_block:
            Job.objects.filter(pk=job_id).update(done=done, total=total, message=message)

    return report


def job_mark_running(job_id: int) -> None:
    Job.objects.filter(pk=job_id).update(status=Job.Status.RUNNING, started_at=timezone.now(), message="starting")


def job_mark_finished(job_id: int, *, result: dict[str, Any] | None = None, error: str = "") -> None:
    status = Job.Status.FAILED if error else Job.Status.SUCCEEDED
    progress = cache.get(_key(job_id)) or {}
    Job.objects.filter(pk=job_id).update(
        status=status,
        result=result or {},
        error=error,
        finished_at=timezone.now(),
        message="failed" if error else "done",
        done=progress.get("total") or progress.get("done") or 0,
        total=progress.get("total"),
    )
    cache.delete(_key(job_id))


def job_snapshot(job: Job) -> Job:
    """Return the job with its latest progress from the cache merged in."""
    if job.status in (Job.Status.QUEUED, Job.Status.RUNNING):
        progress = cache.get(_key(job.pk))
        if progress:
            job.done = progress["done"] or 0
            job.total = progress["total"]
            job.message = progress["message"]
    return job
