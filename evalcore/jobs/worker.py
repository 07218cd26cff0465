"""What a Celery worker does when it starts: fail the jobs a killed worker of this host left "running",
then queue again, on a queue it reads, the judge jobs whose worker died (they resume from the cache).

Imported by evalcore's ``ready()`` and by the worker (``CELERY_IMPORTS``), so the handler is connected
before the worker is ready.
"""

from __future__ import annotations

from celery.signals import worker_ready

from .dispatch import jobs_recover, jobs_resume_stale


@worker_ready.connect
def recover_and_resume_jobs(sender: object = None, **kwargs: object) -> None:
    """Recover abandoned jobs (:func:`jobs_recover`), then resume the stale resumable ones (:func:`jobs_resume_stale`)."""
    jobs_recover()
    queues = getattr(getattr(sender, "task_consumer", None), "queues", None) or []
    jobs_resume_stale(queue=queues[0].name if queues else None)
