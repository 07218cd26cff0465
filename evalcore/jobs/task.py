"""The Celery task that runs a job: thin, it calls :func:`evalcore.jobs.runner.job_run`.

Its registered name ``evalcore.run_job`` is what the broker's messages carry: keep it (workers and
messages in flight across a deploy use it).
"""

from __future__ import annotations

from celery import shared_task

from ..models import Job
from .runner import job_run


@shared_task(name="evalcore.run_job", acks_late=True, reject_on_worker_lost=True)
def run_job(job_id: int) -> str:
    """Run one job to the end (see :func:`evalcore.jobs.runner.job_run`); return its status.

    Delivered again after its worker process died, it finds the job running with a dead process and
    fails it with the reason (a judge run resumes instead); a job that is still running is left alone.
    """
    if not Job.objects.filter(pk=job_id, status__in=[Job.Status.QUEUED, Job.Status.RUNNING]).exists():
        return "skipped"
    job = job_run(job_id)
    return job.status if job else "skipped"
