"""Run a job to the end: claim it, record its progress, then its result, import problems or error; cancel.

One lifecycle for every job, whoever starts it: the Celery task (:mod:`.task`), the embedded mode's
thread and the CLI all call :func:`job_run`, so a job stores the same things whichever door started it.

* a non-resumable job is claimed only while ``queued``: a task delivered twice runs it once;
* a kind registered ``resumable=True`` (its handler picks up where it stopped, from its own records)
  is claimed with a conditional ``UPDATE`` while queued, or running with a dead worker; its row's
  ``heartbeat_at`` is refreshed with every progress report, and it is failed after ``MAX_STARTS``;
* :func:`job_cancel` asks a job to stop: a queued job is cancelled at once, a running one when its
  handler next calls :func:`job_cancel_requested` (between batches) and raises
  :class:`~.errors.JobCancelled`.

Progress is written to the cache at once (a task may be inside a long transaction, where a row
update would stay invisible until commit) and to the job row when the task is not inside one.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.cache import cache
from django.db import InterfaceError, OperationalError, connection
from django.db.models import F, Q
from django.utils import timezone

from ..models import Job
from ..services.importing import Progress, no_progress
from ..services.problems import ImportFailed, UserFacingError
from ..services.uploads import discard_uploads_of, local_files
from .errors import JobCancelled
from .liveness import Alive, alive_key, cache_quietly, job_reap, progress_key, runner_gone, this_process
from .priority import lower_priority
from .registry import job_kind

logger = logging.getLogger(__name__)

PROGRESS_TTL = 24 * 3600

#: What the database raises when it is away or dropped the connection (an outage, not a bug).
DATABASE_ERRORS = (OperationalError, InterfaceError)


#: How many times a resumable job is taken up before a lost worker fails it instead (one that kills its worker,
#: by running out of memory say, would otherwise be resumed and killed forever).
MAX_STARTS = 3


def job_run(job_id: int, *, on_progress: Progress = no_progress, niceness: int = 0) -> Job | None:
    """Run a job to the end, recording its progress and then its result, problems or error.

    ``on_progress`` also receives every progress report (the CLI draws its bar with it). A job
    that is already finished, or gone, is left alone. ``niceness``: the handler runs at that nice value
    (:mod:`.priority`); the doors whose thread runs nothing but jobs pass ``JOB_NICENESS`` (a worker's task,
    the embedded mode's job thread, the CLI), a job run inline in a web request keeps the request's priority.
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
    with Alive(job_id):  # kept alive until the job's end is recorded, however long the database is away
        _finish_despite_outage(job_id, **_outcome(job, spec, progress, niceness))
    return Job.objects.get(pk=job_id)


def _outcome(job: Job, spec: Any, progress: Progress, niceness: int = 0) -> dict[str, Any]:
    """Run a claimed job's handler; return how it ended (what :func:`_finish` records)."""
    params = None
    try:
        params = spec.params(**job.params)
        with local_files(params) as local, lower_priority(niceness):
            result = spec.handler(local, job, progress)
    except JobCancelled:
        return {"result": {"cancelled": True}, "status": Job.Status.CANCELLED}
    except ImportFailed as error:
        return {"error": str(error), "result": {"problems": [p.as_dict() for p in error.problems]}, "params": params}
    except UserFacingError as error:
        return {"error": str(error), "params": params}
    except SoftTimeLimitExceeded:
        limit = settings.CELERY_TASK_SOFT_TIME_LIMIT
        return {
            "error": f"The job ran longer than its time limit ({limit} s, JOB_SOFT_TIME_LIMIT) and was stopped; "
            "nothing of an import was kept. Split the file, or ask the operator to raise the limit.",
            "params": params,
        }
    except DATABASE_ERRORS as error:  # the database went away (or dropped the connection) under the job
        logger.warning("job %s (%s): the database failed under it: %s", job.pk, job.kind, error)
        kept = (
            "What it had done is kept; start it again and it resumes where it stopped."
            if spec.resumable
            else "Nothing of it was kept (imports are written in one transaction); start it again."
        )
        first = (str(error).strip().splitlines() or [""])[0]
        return {
            "error": f"The database became unavailable while this job ran ({type(error).__name__}: {first}). {kept}",
            "params": params,
        }
    except Exception as error:  # a job must record why it failed, whatever failed; the details go to the log only
        logger.exception("job %s (%s) failed", job.pk, job.kind)
        return {
            "error": f"Internal error ({type(error).__name__}) in job {job.pk}; the server log has the details.",
            "params": params,
        }
    return {"result": result, "params": params}


def _finish_despite_outage(job_id: int, **outcome: Any) -> None:
    """Record how the job ended, waiting for the database while it is away (up to ``JOB_OUTAGE_WAIT_SECONDS``):
    a job's end is never lost to an outage, so its page never says "running" for a job nobody runs."""
    deadline = time.monotonic() + settings.JOB_OUTAGE_WAIT_SECONDS
    pause = 0.5
    while True:
        try:
            _finish(job_id, **outcome)
            return
        except DATABASE_ERRORS as error:
            if time.monotonic() > deadline:
                raise
            logger.warning("job %s ended but the database is away (%s); recording it when it is back", job_id, error)
        try:
            connection.close()  # a broken connection: the next query opens a new one
        except Exception:
            logger.debug("closing the broken database connection failed", exc_info=True)
        time.sleep(pause)
        pause = min(pause * 2, 10.0)


def progress_reporter(job_id: int) -> Progress:
    """Return a callback that records progress for the job (cheaply: at most every 0.5 s)."""
    last = [0.0]

    def report(done: int, total: int | None, message: str) -> None:
        now = timezone.now().timestamp()
        if now - last[0] < 0.5 and done != total:
            return
        last[0] = now
        cache_quietly(cache.set, progress_key(job_id), {"done": done, "total": total, "message": message}, PROGRESS_TTL)
        if not connection.in_atomic_block:
            Job.objects.filter(pk=job_id).update(done=done, total=total, message=message, heartbeat_at=timezone.now())

    return report


def _finish(
    job_id: int, *, result: dict[str, Any] | None = None, error: str = "", status: str | None = None, params: Any = None
) -> None:
    if params is not None:
        discard_uploads_of(params)  # a finished job's uploads are of no more use (its rows are in the database)
    progress = cache_quietly(cache.get, progress_key(job_id)) or {}
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
    cache_quietly(cache.delete_many, [progress_key(job_id), alive_key(job_id)])


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
