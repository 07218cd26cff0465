"""Run a job from a management command: inline in the embedded mode, on a worker otherwise,
printing a progress bar on standard error either way."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from django.conf import settings
from django.core.management.base import CommandError

from ..models import Job
from ..services import jobs
from ..services.dispatch import run_job_handler
from ..services.problems import UserFacingError


class ProgressBar:
    def __init__(self, stream: TextIO, label: str) -> None:
        self.stream = stream
        self.label = label
        self.tty = stream.isatty()
        self.last_line = ""

    def __call__(self, done: int, total: int | None, message: str) -> None:
        if total:
            share = min(1.0, done / total)
            bar = "#" * int(share * 30)
            line = f"{self.label}: [{bar:<30}] {share:4.0%} {message}"
        else:
            line = f"{self.label}: {done} {message}"
        if line == self.last_line:
            return
        self.last_line = line
        if self.tty:
            self.stream.write("\r" + line.ljust(100)[:100])
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty and self.last_line:
            self.stream.write("\n")


def run_job_cli(*, kind: str, params: dict[str, Any], label: str, stderr: TextIO | None = None, quiet: bool = False) -> dict[str, Any]:
    """Create a job and run it to the end; raise CommandError with the job's error on failure."""
    stream = stderr or sys.stderr
    bar = ProgressBar(stream, label)
    job = jobs.job_create(kind=kind, params=params)
    if settings.CELERY_TASK_ALWAYS_EAGER:
        record = jobs.progress_reporter(job.pk)

        def both(done: int, total: int | None, message: str) -> None:
            record(done, total, message)
            if not quiet:
                bar(done, total, message)

        jobs.job_mark_running(job.pk)
        try:
            result = run_job_handler(job, progress=both)
        except UserFacingError as error:
            jobs.job_mark_finished(job.pk, error=str(error))
            bar.close()
            raise CommandError(str(error)) from None
        except Exception as error:
            jobs.job_mark_finished(job.pk, error=f"{type(error).__name__}: {error}")
            bar.close()
            raise
        jobs.job_mark_finished(job.pk, result=result)
        bar.close()
        return result
    from ..tasks import run_job

    run_job.delay(job.pk)
    while True:
        time.sleep(0.3)
        job = jobs.job_snapshot(Job.objects.get(pk=job.pk))
        if not quiet:
            bar(job.done, job.total, job.message or job.status)
        if job.finished:
            break
    bar.close()
    if job.status == Job.Status.FAILED:
        raise CommandError(job.error.split("\nTraceback")[0])
    return job.result
