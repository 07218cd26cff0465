"""Celery tasks: thin wrappers that load a job and call its service."""

from __future__ import annotations

import traceback

from celery import shared_task

from .models import Job
from .services import jobs


@shared_task(name="evalcore.run_job", acks_late=True)
def run_job(job_id: int) -> str:
    """Run one job to the end, recording progress, its result or its error."""
    from .services.dispatch import run_job_handler
    from .services.problems import ImportFailed, UserFacingError

    job = Job.objects.filter(pk=job_id).first()
    if job is None or job.finished:
        return "skipped"
    jobs.job_mark_running(job_id)
    try:
        result = run_job_handler(job, progress=jobs.progress_reporter(job_id))
    except ImportFailed as error:
        jobs.job_mark_finished(job_id, error=str(error), result={"problems": [p.as_dict() for p in error.problems]})
        return "failed"
    except UserFacingError as error:
        jobs.job_mark_finished(job_id, error=str(error))
        return "failed"
    except Exception as error:  # a task must record why it failed, whatever failed
        jobs.job_mark_finished(job_id, error=f"{type(error).__name__}: {error}\n{traceback.format_exc(limit=5)}")
        return "failed"
    jobs.job_mark_finished(job_id, result=result)
    return "succeeded"
