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

Never hang, never run twice (see docs/deploy.md):

* a job's row stays ``queued`` only once the broker accepted its task: when the broker refuses it, the
  row is deleted and :class:`BrokerUnavailable` raised (the door answers 503, the uploads are deleted);
  a job whose sender died before the hand-off (its ``sent_at`` still empty a minute on) is sent by the
  next door that asks for a job, its page or a starting worker (:func:`jobs_send_unsent`);
* the process running a job keeps a key alive in the shared cache (:class:`_Alive`), so any host
  can tell that a job's process is gone (a pool child killed by the OOM killer, a worker killed, a
  host lost): :func:`job_reap` marks such a job failed with the reason, and it is called by the
  job's page, the CLI that follows it, every door that asks for a job, a starting worker and the
  task itself when the broker delivers it again (``task_reject_on_worker_lost``);
* a non-resumable job is claimed only while ``queued``: a task delivered twice runs it once.
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

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.cache import cache
from django.db import close_old_connections, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from ..models import Job
from .importing import Progress, no_progress
from .problems import ImportFailed, UserFacingError
from .uploads import discard_uploads_of, local_files

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


class BrokerUnavailable(Exception):
    """The broker did not accept a job's task: nothing was queued (answered 503, never a job left "queued")."""


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

    With a broker, the task goes to a Celery worker; if the broker does not accept it the job row
    is deleted and :class:`BrokerUnavailable` raised (no job is left "queued" that nobody will run).
    In the embedded mode (tasks run in-process) a web request must not wait for it, so it runs in a
    background thread of the server process, unless ``EMBEDDED_TASKS_IN_THREAD`` is off (tests),
    where it runs inline.
    """
    from ..tasks import run_job

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
    from ..tasks import run_job

    run_job.apply_async(args=(job_id,), queue=queue, retry=True, retry_policy=BROKER_RETRY_POLICY)
    Job.objects.filter(pk=job_id).update(sent_at=timezone.now())


def _run_in_thread(job_id: int) -> None:
    try:
        job_run(job_id)
    finally:
        close_old_connections()
        connection.close()


#: How many times a resumable job is taken up before a lost worker fails it instead (one that kills its worker,
#: by running out of memory say, would otherwise be resumed and killed forever).
MAX_STARTS = 3


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
        if job.status == Job.Status.RUNNING and runner_gone(job):  # e.g. its pool child was killed: resume now
            claimable |= Q(status=Job.Status.RUNNING, runner=job.runner)
        resumed = job.status == Job.Status.RUNNING
        if resumed and Job.objects.filter(claimable, pk=job_id, starts__gte=MAX_STARTS).update(
            status=Job.Status.FAILED,
            message="failed",
            finished_at=now,
            error=f"The process running this job stopped {job.starts} times before it finished (killed, for example "
            "by the out-of-memory killer or a time limit), so it is not resumed again by itself. What it had done is "
            "kept: start it again and it resumes where it stopped; if it stops again, give the worker more memory.",
        ):
            return Job.objects.get(pk=job_id)
        claimed = Job.objects.filter(claimable, pk=job_id).update(
            status=Job.Status.RUNNING,
            started_at=job.started_at or now,
            heartbeat_at=now,
            message="resuming from the cache" if resumed else "starting",
            runner=this_process(),
            starts=F("starts") + 1,
        )
    else:  # claimed once: a task the broker delivers again finds it running (or failed by the reaper)
        claimed = Job.objects.filter(pk=job_id, status=Job.Status.QUEUED).update(
            status=Job.Status.RUNNING, started_at=now, message="starting", runner=this_process(), starts=F("starts") + 1
        )
    if not claimed:
        job_reap(job)
        return Job.objects.filter(pk=job_id).first()
    params = None
    try:
        params = spec.params(**job.params)
        with _Alive(job_id), local_files(params) as local:
            result = spec.handler(local, job, progress)
    except JobCancelled:
        _finish(job_id, result={"cancelled": True}, status=Job.Status.CANCELLED)
    except ImportFailed as error:
        _finish(job_id, error=str(error), result={"problems": [p.as_dict() for p in error.problems]}, params=params)
    except UserFacingError as error:
        _finish(job_id, error=str(error), params=params)
    except SoftTimeLimitExceeded:
        limit = settings.CELERY_TASK_SOFT_TIME_LIMIT
        _finish(
            job_id,
            error=f"The job ran longer than its time limit ({limit} s, JOB_SOFT_TIME_LIMIT) and was stopped; nothing "
            "of an import was kept. Split the file, or ask the operator to raise the limit.",
            params=params,
        )
    except Exception as error:  # a job must record why it failed, whatever failed; the details go to the log only
        logger.exception("job %s (%s) failed", job_id, job.kind)
        _finish(
            job_id,
            error=f"Internal error ({type(error).__name__}) in job {job_id}; the server log has the details.",
            params=params,
        )
    else:
        _finish(job_id, result=result, params=params)
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
    if params is not None:
        discard_uploads_of(params)  # a finished job's uploads are of no more use (its rows are in the database)
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
    cache.delete_many([_key(job_id), _alive_key(job_id)])


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
            run_job.apply_async(args=(job_id,), queue=queue, retry=True, retry_policy=BROKER_RETRY_POLICY)
    return jobs


#: How long a queued job's task may take to reach the broker before the process that should send it is taken
#: for dead (sending takes milliseconds, at most a few seconds of retries).
UNSENT_GRACE_SECONDS = 60


def jobs_send_unsent() -> list[int]:
    """Hand to the broker the queued jobs whose task never reached it; return their ids.

    A job's row is committed before its task is sent (the worker must find the row); a web process
    killed between the two left a job "queued" that no worker would ever run. Sending it again is
    safe: a job is claimed only while queued, so a task delivered twice runs it once. A broker still
    away leaves the job for the next try.
    """
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return []
    late = timezone.now() - timedelta(seconds=UNSENT_GRACE_SECONDS)
    sent = []
    for job_id in Job.objects.filter(status=Job.Status.QUEUED, sent_at__isnull=True, created_at__lt=late).values_list(
        "pk", flat=True
    ):
        try:
            _hand_off(job_id)
        except Exception as error:  # the broker is away: the next door that asks tries again
            logger.warning("job %s never reached the broker, which still refuses it: %s", job_id, error)
            break
        logger.warning("job %s never reached the broker (its sender died); sent it now", job_id)
        sent.append(job_id)
    return sent


def job_snapshot(job: Job) -> Job:
    """Return the job with its latest progress from the cache merged in (failed first if its process is gone;
    sent to the broker if the process that should have sent it died)."""
    if job.status == Job.Status.RUNNING and job_reap(job):
        job.refresh_from_db()
    if job.status == Job.Status.QUEUED and job.sent_at is None and job.pk in jobs_send_unsent():
        job.refresh_from_db()
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
    job_send(job.pk)
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
    if _state(pid) == "Z":  # killed, and not yet reaped by its parent (a pool child of a busy worker)
        return True
    return bool(started) and _started(pid) not in ("", started)


def _state(pid: int) -> str:
    """Process ``pid``'s state letter (``R``, ``S``, ``Z``...) on Linux; "" where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0].decode()
    except (OSError, IndexError):
        return ""


def _alive_key(job_id: int) -> str:
    return f"job-alive:{job_id}"


def _alive_ttl() -> int:
    return 3 * settings.JOB_HEARTBEAT_SECONDS


def _shared_cache() -> bool:
    """Whether every host sees the same cache (Redis): only then does a missing alive key mean anything."""
    backend = settings.CACHES["default"]["BACKEND"]
    return not backend.endswith(("LocMemCache", "DummyCache"))


class _Alive:
    """While a job runs, keep its alive key in the cache fresh from a thread (imports hold one long transaction,
    so the job's row cannot say it): the key lapses a few seconds after the process dies, however it died."""

    def __init__(self, job_id: int) -> None:
        self.job_id = job_id
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True, name=f"job-{job_id}-alive")

    def _set(self) -> None:
        try:
            cache.set(_alive_key(self.job_id), this_process(), _alive_ttl())
        except Exception:  # the cache being away must not fail the job; its page may then call it gone
            logger.warning("job %s: could not refresh its alive key", self.job_id, exc_info=True)

    def _beat(self) -> None:
        while not self.stop.wait(settings.JOB_HEARTBEAT_SECONDS):
            self._set()

    def __enter__(self) -> _Alive:
        self._set()
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()  # the key itself is deleted by _finish, once the job's row says how it ended
        self.thread.join(timeout=5)


def runner_gone(job: Job) -> bool:
    """Whether the process running ``job`` is gone, or no longer runs it: on this host from the process table;
    on any host, with a shared cache, from its alive key (lapsed for ``3 × JOB_HEARTBEAT_SECONDS``: the process
    died, or its task ended without recording the job's end, e.g. while the database was away)."""
    if not job.runner:
        return False
    if job.runner.startswith(f"{socket.gethostname()}:") and _gone(job.runner):
        return True
    if not _shared_cache() or job.started_at is None:
        return False
    if timezone.now() - job.started_at < timedelta(seconds=_alive_ttl()):
        return False
    return cache.get(_alive_key(job.pk)) is None


def job_reap(job: Job) -> bool:
    """Mark ``job`` failed, with the reason, if it is running and its process is gone; return whether it was.

    Its uploads are deleted; imports write in one transaction, so nothing of it was kept. A resumable
    job (a judge run) is left running where a broker is in use: a worker queues it again
    (:func:`jobs_resume_stale`, or the task delivered again) and it resumes where it stopped.
    """
    if job.status != Job.Status.RUNNING or not runner_gone(job):
        return False
    kind = JOB_KINDS.get(job.kind)
    resumable = kind is not None and kind.resumable
    if resumable and not settings.CELERY_TASK_ALWAYS_EAGER:
        return False
    host, pid = job.runner.rsplit(":", 2)[:2]
    kept = (
        "What it had done is kept; start it again and it resumes where it stopped."
        if resumable
        else "Nothing of it was kept (imports are written in one transaction); start it again."
    )
    reason = (
        f"The process that ran this job (pid {pid} on {host}) stopped before the job finished: it was killed or "
        f"crashed (for example by the out-of-memory killer, a time limit or a restart). {kept}"
    )
    updated = Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING, runner=job.runner).update(
        status=Job.Status.FAILED, error=reason, message="failed", finished_at=timezone.now()
    )
    if not updated:
        return False
    logger.warning("job %s (%s): %s", job.pk, job.kind, reason)
    if kind is not None:
        try:
            discard_uploads_of(kind.params(**job.params))
        except TypeError:
            pass
    cache.delete(_key(job.pk))
    return True


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
