"""Jobs: long work (imports, gates) run as Celery tasks, with progress that pages and the CLI show.

One lifecycle for every job, whoever starts it:

* each app registers its job kinds (:func:`register_job_kind`): a name, a label, a frozen
  parameters dataclass and the handler that calls the kind's service;
* a door asks for work through the kind's request function, which checks what it can up front
  and calls :func:`job_request` (create the job, start it once the transaction commits);
* :func:`job_run` runs a job to the end and records its progress, result, import problems or
  error. The Celery task and the CLI both call it, so a job stores the same things whichever
  door started it.

Progress is written to the cache at once (a task may be inside a long transaction, where a row
update would stay invisible until commit) and to the job row when the task is not inside one.

Cancel and resume (added for the judge jobs; kept small and general):

* :func:`job_cancel` asks a job to stop: a queued job is cancelled at once, a running one when its
  handler next calls :func:`job_cancel_requested` (between batches) and raises :class:`JobCancelled`;
* a kind registered ``resumable=True`` (its handler picks up where it stopped, from its own
  records) is claimed with a conditional ``UPDATE`` and its row's ``heartbeat_at`` is refreshed
  with every progress report; a running job whose heartbeat is older than ``JOB_STALE_SECONDS``
  lost its worker, and :func:`jobs_resume_stale` (called when a worker starts) queues it again.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import close_old_connections, connection, transaction
from django.db.models import Q
from django.utils import timezone

from ..models import Job
from .importing import Progress, no_progress
from .problems import ImportFailed, UserFacingError
from .uploads import discard_uploads_of

logger = logging.getLogger(__name__)

PROGRESS_TTL = 24 * 3600
Handler = Callable[[Any, Job, Progress], dict[str, Any]]


@dataclass(frozen=True)
class JobKind:
    """A kind of job: what its parameters are and which service runs it."""

    name: str
    label: str
    params: type
    handler: Handler
    resumable: bool = False


JOB_KINDS: dict[str, JobKind] = {}


class JobCancelled(Exception):
    """Raised by a handler that found its job was asked to stop (see :func:`job_cancel_requested`)."""


def register_job_kind(*, name: str, label: str, params: type, resumable: bool = False) -> Callable[[Handler], Handler]:
    """Register ``handler(params, job, progress) -> result`` as the runner of jobs of kind ``name``.

    ``resumable``: running the handler again after its worker died continues the work (the
    judge jobs read their answered calls back from the cache), so a stale job may be re-queued.
    """
    if not dataclasses.is_dataclass(params):
        raise TypeError(f"the parameters of job kind {name!r} must be a dataclass, got {params!r}")

    def register(handler: Handler) -> Handler:
        JOB_KINDS[name] = JobKind(name, label, params, handler, resumable)
        return handler

    return register


def job_kind(name: str) -> JobKind:
    try:
        return JOB_KINDS[name]
    except KeyError:
        raise ValueError(f"no job kind {name!r} is registered (known: {', '.join(sorted(JOB_KINDS))})") from None


def job_kind_label(name: str) -> str:
    kind = JOB_KINDS.get(name)
    return kind.label if kind else name.replace("_", " ")


def _key(job_id: int) -> str:
    return f"job-progress:{job_id}"


def job_request(*, kind: str, params: Any, user: Any = None, start: bool = True) -> Job:
    """Create a job of ``kind`` for ``params`` and, with ``start``, start it once the transaction commits.

    Request functions of each kind call this after checking their parameters; the CLI passes
    ``start=False`` and then follows the job with :func:`job_follow`.
    """
    spec = job_kind(kind)
    if not isinstance(params, spec.params):
        raise TypeError(f"job kind {kind!r} takes {spec.params.__name__}, got {type(params).__name__}")
    jobs_recover()
    job = Job.objects.create(
        kind=kind, params=dataclasses.asdict(params), created_by=user if getattr(user, "pk", None) else None
    )
    if start:
        job_enqueue(job)
    return job


def job_enqueue(job: Job) -> None:
    """Start the job's task once the current transaction commits.

    With a broker, the task goes to a Celery worker. In the embedded mode (tasks run in-process)
    a web request must not wait for it, so it runs in a background thread of the server process,
    unless ``EMBEDDED_TASKS_IN_THREAD`` is off (tests), where it runs inline.
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
    try:
        job_run(job_id)
    finally:
        close_old_connections()
        connection.close()


def job_run(job_id: int, *, on_progress: Progress = no_progress) -> Job | None:
    """Run a job to the end, recording its progress and then its result, problems or error.

    ``on_progress`` also receives every progress report (the CLI draws its bar with it). A job
    that is already finished, or gone, is left alone.
    """
    job = Job.objects.filter(pk=job_id).first()
    if job is None or job.finished:
        return job
    spec = job_kind(job.kind)
    record = progress_reporter(job_id)

    def progress(done: int, total: int | None, message: str) -> None:
        record(done, total, message)
        on_progress(done, total, message)

    now = timezone.now()
    if spec.resumable:  # claimed by one worker at a time: queued, or running with a dead worker
        alive = now - timedelta(seconds=settings.JOB_STALE_SECONDS)
        claimable = Q(status=Job.Status.QUEUED) | Q(status=Job.Status.RUNNING) & (
            Q(heartbeat_at__lt=alive) | Q(heartbeat_at__isnull=True)
        )
        resumed = job.status == Job.Status.RUNNING
        claimed = Job.objects.filter(claimable, pk=job_id).update(
            status=Job.Status.RUNNING,
            started_at=job.started_at or now,
            heartbeat_at=now,
            message="resuming from the cache" if resumed else "starting",
            runner=this_process(),
        )
    else:
        claimed = Job.objects.filter(pk=job_id, status__in=[Job.Status.QUEUED, Job.Status.RUNNING]).update(
            status=Job.Status.RUNNING, started_at=now, message="starting", runner=this_process()
        )
    if not claimed:
        return Job.objects.filter(pk=job_id).first()
    params = None
    try:
        params = spec.params(**job.params)
        result = spec.handler(params, job, progress)
    except JobCancelled:
        _finish(job_id, result={"cancelled": True}, status=Job.Status.CANCELLED)
    except ImportFailed as error:
        _finish(job_id, error=str(error), result={"problems": [p.as_dict() for p in error.problems]}, params=params)
    except UserFacingError as error:
        _finish(job_id, error=str(error), params=params)
    except Exception as error:  # a job must record why it failed, whatever failed; the details go to the log only
        logger.exception("job %s (%s) failed", job_id, job.kind)
        _finish(
            job_id,
            error=f"Internal error ({type(error).__name__}) in job {job_id}; the server log has the details.",
            params=params,
        )
    else:
        _finish(job_id, result=result)
    return Job.objects.get(pk=job_id)


def progress_reporter(job_id: int) -> Progress:
    """Return a callback that records progress for the job (cheaply: at most every 0.5 s)."""
    last = [0.0]

    def report(done: int, total: int | None, message: str) -> None:
        now = timezone.now().timestamp()
        if now - last[0] < 0.5 and done != total:
            return
        last[0] = now
        cache.set(_key(job_id), {"done": done, "total": total, "message": message}, PROGRESS_TTL)
        if not connection.in_atomic_block:
            Job.objects.filter(pk=job_id).update(done=done, total=total, message=message, heartbeat_at=timezone.now())

    return report


def _finish(
    job_id: int, *, result: dict[str, Any] | None = None, error: str = "", status: str | None = None, params: Any = None
) -> None:
    if error and params is not None:
        discard_uploads_of(params)  # a failed import's uploads are of no more use
    progress = cache.get(_key(job_id)) or {}
    status = status or (Job.Status.FAILED if error else Job.Status.SUCCEEDED)
    Job.objects.filter(pk=job_id).update(
        status=status,
        result=result or {},
        error=error,
        finished_at=timezone.now(),
        message={Job.Status.FAILED: "failed", Job.Status.CANCELLED: "cancelled"}.get(status, "done"),
        done=progress.get("total") or progress.get("done") or 0,
        total=progress.get("total"),
    )
    cache.delete(_key(job_id))


def job_cancel(*, job: Job, user: Any = None) -> Job:
    """Ask a job to stop: a queued job is cancelled now, a running one at its handler's next check.

    What a cancelled judge job already paid for stays in the cache: running it again resumes.
    """
    if job.finished:
        raise UserFacingError(f"job #{job.pk} has already {job.get_status_display().lower()}; nothing to cancel")
    now = timezone.now()
    Job.objects.filter(pk=job.pk, status=Job.Status.QUEUED).update(
        status=Job.Status.CANCELLED, cancel_requested_at=now, finished_at=now, message="cancelled before it started"
    )
    Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING, cancel_requested_at__isnull=True).update(
        cancel_requested_at=now
    )
    return Job.objects.get(pk=job.pk)


def job_cancel_requested(job_id: int) -> bool:
    """Whether someone asked the job to stop (handlers check between batches and raise :class:`JobCancelled`)."""
    return Job.objects.filter(pk=job_id, cancel_requested_at__isnull=False).exists()


def jobs_resume_stale(*, queue: str | None = None) -> list[int]:
    """Queue again every running job of a resumable kind whose worker stopped reporting (it died); return their ids.

    ``queue``: where to send them (a starting worker sends them to a queue it reads); Celery's default otherwise.
    """
    stale = timezone.now() - timedelta(seconds=settings.JOB_STALE_SECONDS)
    kinds = [name for name, kind in JOB_KINDS.items() if kind.resumable]
    jobs = list(
        Job.objects.filter(status=Job.Status.RUNNING, kind__in=kinds)
        .filter(Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True, started_at__lt=stale))
        .values_list("pk", flat=True)
    )
    if jobs and not settings.CELERY_TASK_ALWAYS_EAGER:
        from ..tasks import run_job

        for job_id in jobs:
            logger.warning("job %s lost its worker; queued again to resume from the cache", job_id)
            run_job.apply_async(args=(job_id,), queue=queue)
    return jobs


def job_snapshot(job: Job) -> Job:
    """Return the job with its latest progress from the cache merged in."""
    if job.status in (Job.Status.QUEUED, Job.Status.RUNNING):
        progress = cache.get(_key(job.pk))
        if progress:
            job.done = progress["done"] or 0
            job.total = progress["total"]
            job.message = progress["message"]
    return job


def job_follow(job: Job, *, on_progress: Progress = no_progress, poll_seconds: float = 0.3) -> Job:
    """Run a job created with ``start=False`` here (embedded mode) or on a worker, and wait for its end.

    Either way the job row ends with the same status, result, problems or error as a job
    started from a page.
    """
    import time

    if settings.CELERY_TASK_ALWAYS_EAGER:
        finished = job_run(job.pk, on_progress=on_progress)
        assert finished is not None
        return finished
    from ..tasks import run_job

    run_job.delay(job.pk)
    while True:
        time.sleep(poll_seconds)
        current = job_snapshot(Job.objects.get(pk=job.pk))
        on_progress(current.done, current.total, current.message or current.get_status_display())
        if current.finished:
            return current


# ----------------------------------------------------------------------------------------------
# Jobs whose process died
# ----------------------------------------------------------------------------------------------


def this_process() -> str:
    """``host:pid:start`` of the running process: who runs a job (the start time tells a reused pid apart)."""
    return f"{socket.gethostname()}:{os.getpid()}:{_started(os.getpid())}"


def _started(pid: int) -> str:
    """When process ``pid`` started, in clock ticks since boot (Linux); "" where that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return ""


def _gone(runner: str) -> bool:
    """Whether the process ``runner`` names (on this host) is no longer running."""
    _, pid_text, started = runner.rsplit(":", 2)
    try:
        pid = int(pid_text)
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (ValueError, PermissionError, OSError):
        return False
    return bool(started) and _started(pid) not in ("", started)


def jobs_recover() -> list[int]:
    """Mark failed, with the reason, the running jobs of this host whose process is gone (killed or crashed).

    A worker calls this when it starts, and so does every command that runs a job and every door
    that asks for one: a killed import's job no longer says "running" forever. Its uploads are
    deleted; imports write in one transaction, so nothing of it was kept. Jobs of other hosts are
    left to their own workers, and so are resumable jobs (judge runs) where a broker is in use: a
    worker that starts queues them again (:func:`jobs_resume_stale`) instead.
    """
    host = socket.gethostname()
    recovered = []
    for job in Job.objects.filter(status=Job.Status.RUNNING, runner__startswith=f"{host}:"):
        kind = JOB_KINDS.get(job.kind)
        resumable = kind is not None and kind.resumable
        if resumable and not settings.CELERY_TASK_ALWAYS_EAGER:
            continue  # a worker queues it again (jobs_resume_stale) and it resumes where it stopped
        if not _gone(job.runner):
            continue
        pid = job.runner.rsplit(":", 2)[1]
        kept = (
            "What it had done is kept; start it again and it resumes where it stopped."
            if resumable
            else "Nothing of it was kept (imports are written in one transaction); start it again."
        )
        reason = (
            f"The process that ran this job (pid {pid} on {host}) stopped before the job finished: it was killed or "
            f"crashed. {kept}"
        )
        updated = Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING, runner=job.runner).update(
            status=Job.Status.FAILED, error=reason, message="failed", finished_at=timezone.now()
        )
        if updated:
            logger.warning("job %s (%s): %s", job.pk, job.kind, reason)
            if kind is not None:
                try:
                    discard_uploads_of(kind.params(**job.params))
                except TypeError:
                    pass
            cache.delete(_key(job.pk))
            recovered.append(job.pk)
    return recovered
