"""Ask for a job and get its task to a worker: never hang, never run twice (see docs/deploy.md).

* a door asks for work through its kind's request function, which checks what it can up front and
  calls :func:`job_request` (create the job, start it once the transaction commits);
* a job's row stays ``queued`` only once the broker accepted its task: when the broker refuses it, the
  row is deleted and :class:`~.errors.BrokerUnavailable` raised (the door answers 503, the uploads are
  deleted); a job whose sender died before the hand-off (its ``sent_at`` still empty a minute on), or whose
  task no worker claimed ``JOB_RESEND_SECONDS`` after the broker took it (lost in an outage), is sent again
  by the next door that asks for a job, its page, the command following it or a worker's sweep
  (:func:`jobs_send_unsent`, :func:`jobs_sweep`);
* a running job of a resumable kind whose heartbeat is older than ``JOB_STALE_SECONDS`` lost its worker,
  and :func:`jobs_resume_stale` (called when a worker starts) queues it again;
* :func:`jobs_recover` fails the running jobs whose process is gone (:func:`~.liveness.job_reap`).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import close_old_connections, connection, transaction
from django.db.models import Q
from django.utils import timezone

from ..models import Job
from ..services.importing import Progress, no_progress
from .errors import BrokerUnavailable
from .liveness import cache_quietly, job_reap, progress_key, runner_gone
from .registry import job_kind, resumable_kinds
from .runner import DATABASE_ERRORS, job_run
from .task import run_job

logger = logging.getLogger(__name__)


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

    With a broker, the task goes to a Celery worker; if the broker does not accept it the job row
    is deleted and :class:`BrokerUnavailable` raised (no job is left "queued" that nobody will run).
    In the embedded mode (tasks run in-process) a web request must not wait for it, so it runs in a
    background thread of the server process, unless ``EMBEDDED_TASKS_IN_THREAD`` is off (tests),
    where it runs inline.
    """
    if settings.CELERY_TASK_ALWAYS_EAGER and not settings.EMBEDDED_TASKS_IN_THREAD:
        run_job.apply(args=(job.pk,))  # inline: the caller waits, and sees the finished job
        return

    def start() -> None:
        if settings.CELERY_TASK_ALWAYS_EAGER:
            threading.Thread(target=_run_in_thread, args=(job.pk,), daemon=True, name=f"job-{job.pk}").start()
        else:
            job_send(job.pk)

    transaction.on_commit(start)


#: How hard to try to hand a task to the broker before saying it is unavailable (about 2 s in all).
BROKER_RETRY_POLICY = {"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5, "interval_max": 1}


def job_send(job_id: int, *, queue: str | None = None) -> None:
    """Hand job ``job_id``'s task to the broker; if it is refused, delete the still-queued job and raise
    :class:`BrokerUnavailable` (the caller's uploads are deleted by its request function)."""
    try:
        _hand_off(job_id, queue=queue)
    except Exception as error:  # kombu's OperationalError, redis or amqp connection errors: the broker is away
        Job.objects.filter(pk=job_id, status=Job.Status.QUEUED).delete()
        logger.error("the broker did not accept job %s: %s", job_id, error)
        raise BrokerUnavailable(
            f"The job queue (broker) is unavailable, so nothing was started and the upload was not kept: "
            f"{type(error).__name__}: {error}. Try again in a minute; if it lasts, the operator checks the broker "
            f"(CELERY_BROKER_URL) and /readyz."
        ) from None


def _hand_off(job_id: int, *, queue: str | None = None) -> None:
    """Give job ``job_id``'s task to the broker and record that it took it (raises what the broker raises)."""
    run_job.apply_async(args=(job_id,), queue=queue, retry=True, retry_policy=BROKER_RETRY_POLICY)
    Job.objects.filter(pk=job_id).update(sent_at=timezone.now())


def _run_in_thread(job_id: int) -> None:
    try:
        job_run(job_id, niceness=settings.JOB_NICENESS)  # a thread of its own: it yields to the server's
    finally:
        close_old_connections()
        connection.close()


def jobs_resume_stale(*, queue: str | None = None, gone_only: bool = False) -> list[int]:
    """Queue again every running job of a resumable kind whose worker stopped reporting (it died); return their ids.

    ``queue``: where to send them (a starting worker sends them to a queue it reads); Celery's default otherwise.
    ``gone_only``: only those whose process is known to be gone (:func:`~.liveness.runner_gone`), not merely
    silent: the periodic sweep's choice, since a judge run may be silent for a while (the database away, a slow
    call) and must not be resumed under a process that still runs it.
    """
    stale = timezone.now() - timedelta(seconds=settings.JOB_STALE_SECONDS)
    kinds = resumable_kinds()
    found = Job.objects.filter(status=Job.Status.RUNNING, kind__in=kinds).filter(
        Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True, started_at__lt=stale)
    )
    jobs = [job.pk for job in found if not gone_only or runner_gone(job)]
    if jobs and not settings.CELERY_TASK_ALWAYS_EAGER:
        for job_id in jobs:
            logger.warning("job %s lost its worker; queued again to resume from the cache", job_id)
            run_job.apply_async(args=(job_id,), queue=queue, retry=True, retry_policy=BROKER_RETRY_POLICY)
    return jobs


#: How long a queued job's task may take to reach the broker before the process that should send it is taken
#: for dead (sending takes milliseconds, at most a few seconds of retries).
UNSENT_GRACE_SECONDS = 60


def _unsent_filter() -> Q:
    """Queued jobs whose task no worker will run: never handed to the broker though created a minute ago (the
    sender died), or handed over ``JOB_RESEND_SECONDS`` ago and still not claimed (the broker lost it in an
    outage, or a worker consumed it while the database was away and could not give it back)."""
    now = timezone.now()
    late = now - timedelta(seconds=UNSENT_GRACE_SECONDS)
    return Q(status=Job.Status.QUEUED) & (
        Q(sent_at__isnull=True, created_at__lt=late)
        | Q(sent_at__lt=now - timedelta(seconds=settings.JOB_RESEND_SECONDS))
    )


def _unsent(job: Job) -> bool:
    """Whether ``job`` is one :func:`_unsent_filter` selects (read from the row in hand: no query)."""
    if job.status != Job.Status.QUEUED:
        return False
    now = timezone.now()
    if job.sent_at is None:
        return job.created_at < now - timedelta(seconds=UNSENT_GRACE_SECONDS)
    return job.sent_at < now - timedelta(seconds=settings.JOB_RESEND_SECONDS)


def jobs_send_unsent() -> list[int]:
    """Hand to the broker the queued jobs whose task never reached a worker (:func:`_unsent_filter`); return their ids.

    A job's row is committed before its task is sent (the worker must find the row); a web process
    killed between the two left a job "queued" that no worker would ever run, and a broker that restarted
    empty forgets the tasks it held. Sending again is safe: a job is claimed only while queued, so a task
    delivered twice runs it once (a job merely waiting behind long ones gets one extra task per
    ``JOB_RESEND_SECONDS``, skipped in milliseconds). A broker still away leaves the job for the next try.
    """
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return []
    sent = []
    for job_id, sent_at in Job.objects.filter(_unsent_filter()).values_list("pk", "sent_at"):
        try:
            _hand_off(job_id)
        except Exception as error:  # the broker is away: the next door that asks tries again
            logger.warning("job %s never reached a worker, and the broker still refuses it: %s", job_id, error)
            break
        why = "its sender died" if sent_at is None else f"no worker took the task sent at {sent_at:%H:%M:%S}"
        logger.warning("job %s never reached a worker (%s); sent it again", job_id, why)
        sent.append(job_id)
    return sent


def job_snapshot(job: Job) -> Job:
    """Return the job with its latest progress from the cache merged in (failed first if its process is gone;
    sent to the broker if the process that should have sent it died)."""
    if job.status == Job.Status.RUNNING and job_reap(job):
        job.refresh_from_db()
    if _unsent(job) and job.pk in jobs_send_unsent():
        job.refresh_from_db()
    if job.status in (Job.Status.QUEUED, Job.Status.RUNNING):
        progress = cache_quietly(cache.get, progress_key(job.pk))
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
    if settings.CELERY_TASK_ALWAYS_EAGER:
        finished = job_run(job.pk, on_progress=on_progress, niceness=settings.JOB_NICENESS)
        assert finished is not None
        return finished
    job_send(job.pk)
    while True:
        time.sleep(poll_seconds)
        try:
            current = job_snapshot(Job.objects.get(pk=job.pk))
        except DATABASE_ERRORS as error:  # the job goes on without us: wait for the database, then follow it again
            logger.warning("job %s: the database is unavailable (%s); waiting for it", job.pk, error)
            on_progress(0, None, "waiting for the database")
            close_old_connections()
            time.sleep(2)
            continue
        on_progress(current.done, current.total, current.message or current.get_status_display())
        if current.finished:
            return current


def jobs_recover() -> list[int]:
    """Mark failed, with the reason, the running jobs whose process is gone (killed or crashed); return their ids.

    A worker calls this when it starts, and so does every command that runs a job and every door
    that asks for one: a killed import's job no longer says "running" forever (see :func:`job_reap`).
    Jobs of other hosts are judged by their alive keys when the cache is shared (Redis), else left
    to their own workers.
    """
    reaped = [job.pk for job in Job.objects.filter(status=Job.Status.RUNNING) if job_reap(job)]
    jobs_send_unsent()
    return reaped


def jobs_sweep(*, queue: str | None = None, starting: bool = False) -> None:
    """What every worker does every ``JOB_SWEEP_SECONDS`` (:mod:`.worker`), and a starting worker once: fail the
    running jobs whose process is gone, send again the queued ones no worker will run (:func:`jobs_recover`),
    queue again the stale resumable ones whose process is gone (:func:`jobs_resume_stale`; a starting worker
    (``starting``) also those merely silent, as before). With a worker and the database healthy, no
    job stays queued or running for good, whichever outage came before."""
    jobs_recover()
    jobs_resume_stale(queue=queue, gone_only=not starting)
