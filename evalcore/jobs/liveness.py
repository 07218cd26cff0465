"""Which process runs a job, whether it is gone, and failing a job whose process died (:func:`job_reap`).

The process running a job keeps a key alive in the shared cache (:class:`Alive`), so any host can tell
that a job's process is gone (a pool child killed by the OOM killer, a worker killed, a host lost):
:func:`job_reap` marks such a job failed with the reason. It is called by the job's page, the CLI that
follows it, every door that asks for a job, a starting worker and the task itself when the broker
delivers it again (``task_reject_on_worker_lost``). The cache also holds a running job's progress
(:func:`progress_key`): a task may be inside a long transaction, where a row update stays invisible.

The cache being away, or back empty after a restart, is "cannot tell", never "the process died"
(:func:`runner_state`): no job is failed for an outage of Redis, and a job's progress waits for the cache.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from ..models import Job
from ..services.uploads import discard_uploads_of
from .registry import JOB_KINDS

logger = logging.getLogger(__name__)

T = TypeVar("T")


def progress_key(job_id: int) -> str:
    """The cache key of job ``job_id``'s latest progress."""
    return f"job-progress:{job_id}"


def alive_key(job_id: int) -> str:
    """The cache key the process running job ``job_id`` keeps fresh while it lives."""
    return f"job-alive:{job_id}"


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


def _alive_ttl() -> int:
    return 3 * settings.JOB_HEARTBEAT_SECONDS


def _shared_cache() -> bool:
    """Whether every host sees the same cache (Redis): only then does a missing alive key mean anything."""
    backend = settings.CACHES["default"]["BACKEND"]
    return not backend.endswith(("LocMemCache", "DummyCache"))


class Alive:
    """While a job runs, keep its alive key in the cache fresh from a thread (imports hold one long transaction,
    so the job's row cannot say it): the key lapses a few seconds after the process dies, however it died."""

    def __init__(self, job_id: int) -> None:
        self.job_id = job_id
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True, name=f"job-{job_id}-alive")

    def _set(self) -> None:
        try:
            cache.set(alive_key(self.job_id), this_process(), _alive_ttl())
            cache.add(CACHE_BORN_KEY, timezone.now().timestamp(), None)
        except Exception:  # the cache being away must not fail the job (nobody calls it gone: cannot tell)
            logger.warning("job %s: could not refresh its alive key (the cache is away)", self.job_id)

    def _beat(self) -> None:
        while not self.stop.wait(settings.JOB_HEARTBEAT_SECONDS):
            self._set()

    def __enter__(self) -> Alive:
        self._set()
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()  # the key itself is deleted by _finish, once the job's row says how it ended
        self.thread.join(timeout=5)


#: The cache key holding when the cache was first seen holding nothing of ours (it started, restarted or was
#: flushed): kept with no expiry, so its absence means the cache lost its keys.
CACHE_BORN_KEY = "job-cache-born"


def cache_born() -> float | None:
    """When the shared cache was first seen (a timestamp), recording now if it holds no such record; None when the
    cache cannot be reached. A cache that restarted without its keys lost every alive key with them: until the
    processes still alive had one key lifetime to write theirs again, a missing key tells nothing."""
    now = timezone.now().timestamp()
    try:
        if cache.add(CACHE_BORN_KEY, now, None):
            return now
        born = cache.get(CACHE_BORN_KEY)
    except Exception:  # the cache is away (an outage of Redis): cannot tell
        logger.warning("the cache is unavailable, so no job's process can be called gone")
        return None
    return float(born) if born is not None else now


def runner_state(job: Job) -> str:
    """Whether the process running ``job`` still runs it: ``"alive"``, ``"gone"`` or ``"unknown"`` (cannot tell).

    Gone: on this host, the process is not in the process table; on any host, with a shared cache that has
    been up for at least one key lifetime (``3 × JOB_HEARTBEAT_SECONDS``), its alive key lapsed (the process
    died, or its task ended without recording the job's end). Unknown: the cache cannot be reached, or lost its
    keys less than a key lifetime ago (a Redis restarted in an outage), or the cache is per process (no sharing).
    """
    if not job.runner:
        return "unknown"
    if job.runner.startswith(f"{socket.gethostname()}:") and _gone(job.runner):
        return "gone"
    if not _shared_cache() or job.started_at is None:
        return "unknown"
    now = timezone.now()
    if now - job.started_at < timedelta(seconds=_alive_ttl()):
        return "alive"
    try:
        if cache.get(alive_key(job.pk)) is not None:
            return "alive"
    except Exception:
        logger.warning("the cache is unavailable, so job %s's process cannot be called gone", job.pk)
        return "unknown"
    born = cache_born()
    return "unknown" if born is None or now.timestamp() - born < _alive_ttl() else "gone"


def runner_gone(job: Job) -> bool:
    """Whether the process running ``job`` is known to be gone, or no longer to run it (see :func:`runner_state`);
    "cannot tell" is not gone."""
    return runner_state(job) == "gone"


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
    cache_quietly(cache.delete, progress_key(job.pk))
    return True


def cache_quietly(method: Callable[..., T], *args: Any, default: T | None = None, **kwargs: Any) -> T | None:
    """Call a cache ``method`` for a job's progress or alive key; on a cache outage log it and return ``default``.

    A job's work lives in the database: the cache being away (a Redis restart) must neither fail a job nor a page.
    """
    try:
        return method(*args, **kwargs)
    except Exception as error:
        logger.warning("the cache is unavailable (%s: %s): going on without it", method.__name__, error)
        return default
