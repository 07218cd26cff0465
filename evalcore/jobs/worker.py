"""What a Celery worker does: when it starts, fail the jobs a killed worker left "running", send again the
queued ones no worker will run, and queue again (on a queue it reads) the judge jobs whose worker died; then the
same sweep every ``JOB_SWEEP_SECONDS`` from a thread of its main process, for as long as it lives.

The sweep is what makes every outage end: a task the broker forgot (Redis restarted empty), a task consumed while
the database was away, a job whose process died while the cache was away (nobody could tell then) are all found
by the next sweep once the database answers. An outage of the database or the cache makes a sweep fail: it is
logged and the next one tries again.

Imported by evalcore's ``ready()`` and by the worker (``CELERY_IMPORTS``), so the handler is connected
before the worker is ready.
"""

from __future__ import annotations

import logging
import threading

from celery.signals import worker_ready, worker_shutdown
from django.conf import settings
from django.db import connection

from .dispatch import jobs_sweep

logger = logging.getLogger(__name__)

#: One stop event per sweep thread started (a test may start and stop several in-process workers).
_sweeps: list[threading.Event] = []


def sweep_once(queue: str | None, *, starting: bool = False) -> bool:
    """Sweep the jobs (:func:`~.dispatch.jobs_sweep`); return whether it worked (an outage is logged, not raised)."""
    try:
        jobs_sweep(queue=queue, starting=starting)
        return True
    except Exception as error:  # the database or the cache is away: the next sweep tries again
        logger.warning("the periodic job sweep failed (%s: %s); trying again later", type(error).__name__, error)
        return False


def _sweep_forever(queue: str | None, stop: threading.Event) -> None:
    while not stop.wait(settings.JOB_SWEEP_SECONDS):
        sweep_once(queue)
        try:
            connection.close()  # the thread holds no connection between sweeps (and none across a pool fork)
        except Exception:
            logger.debug("closing the sweep's database connection failed", exc_info=True)


@worker_ready.connect
def recover_and_resume_jobs(sender: object = None, **kwargs: object) -> None:
    """Sweep the jobs once now, then every ``JOB_SWEEP_SECONDS`` from a daemon thread of the worker's main process."""
    queues = getattr(getattr(sender, "task_consumer", None), "queues", None) or []
    queue = queues[0].name if queues else None
    sweep_once(queue, starting=True)
    stop = threading.Event()
    _sweeps.append(stop)
    threading.Thread(target=_sweep_forever, args=(queue, stop), daemon=True, name="job-sweep").start()


@worker_shutdown.connect
def stop_sweeping(**kwargs: object) -> None:
    """Stop the sweep threads when the worker stops."""
    while _sweeps:
        _sweeps.pop().set()
