"""Celery tasks: thin wrappers that run a job through the one job lifecycle."""

from __future__ import annotations

from celery import shared_task
from celery.signals import worker_ready


@shared_task(name="evalcore.run_job", acks_late=True, reject_on_worker_lost=True)
def run_job(job_id: int) -> str:
    """Run one job to the end (see :func:`evalcore.services.jobs.job_run`); return its status.

    Delivered again after its worker process died, it finds the job running with a dead process and
    fails it with the reason (a judge run resumes instead); a job that is still running is left alone.
    """
    from .models import Job
    from .services.jobs import job_run

    if not Job.objects.filter(pk=job_id, status__in=[Job.Status.QUEUED, Job.Status.RUNNING]).exists():
        return "skipped"
    job = job_run(job_id)
    return job.status if job else "skipped"


@worker_ready.connect
def resume_stale_jobs(sender: object = None, **kwargs: object) -> None:
    """A worker that starts queues again, on a queue it reads, the judge jobs whose worker died (they resume
    from the cache)."""
    from .services.jobs import jobs_resume_stale

    queues = getattr(getattr(sender, "task_consumer", None), "queues", None) or []
    jobs_resume_stale(queue=queues[0].name if queues else None)
