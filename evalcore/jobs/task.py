"""The Celery task that runs a job: thin, it calls :func:`evalcore.jobs.runner.job_run`.

Its registered name ``evalcore.run_job`` is what the broker's messages carry: keep it (workers and
messages in flight across a deploy use it).
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.conf import settings

from ..models import Job
from .runner import DATABASE_ERRORS, job_run

logger = logging.getLogger(__name__)

#: The longest pause between two tries of a task that found the database away (seconds; doubling from 1).
RETRY_PAUSE_MAX = 30


@shared_task(name="evalcore.run_job", bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def run_job(self: Any, job_id: int) -> str:
    """Run one job to the end (see :func:`evalcore.jobs.runner.job_run`); return its status.

    Delivered again after its worker process died, it finds the job running with a dead process and
    fails it with the reason (a judge run resumes instead); a job that is still running is left alone.
    A task that finds the database away (a worker that started during an outage of PostgreSQL) is given
    back to the broker and tried again, every 1, 2, 4... up to 30 s, for as long as it takes: it is never
    consumed without running its job (if the broker is away too, the periodic sweep sends it again later,
    see :func:`evalcore.jobs.dispatch.jobs_send_unsent`).
    """
    try:
        if not Job.objects.filter(pk=job_id, status__in=[Job.Status.QUEUED, Job.Status.RUNNING]).exists():
            return "skipped"
        # a worker's pool process runs nothing but jobs; run inline (eager, in a request) it keeps the caller's priority
        job = job_run(job_id, niceness=0 if self.request.is_eager else settings.JOB_NICENESS)
    except DATABASE_ERRORS as error:
        if self.request.is_eager:  # in-process (embedded mode): the caller sees the error
            raise
        pause = min(RETRY_PAUSE_MAX, 2 ** min(self.request.retries, 5))
        logger.warning("job %s: the database is unavailable (%s); trying again in %s s", job_id, error, pause)
        raise self.retry(exc=error, countdown=pause) from None
    return job.status if job else "skipped"
