"""Run a job from a management command through the one job lifecycle: inline in the embedded mode,
on a worker otherwise, printing a progress bar on standard error either way."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ..jobs.dispatch import job_follow, jobs_recover
from ..jobs.errors import BrokerUnavailable
from ..models import Job
from ..selectors import run_by_ref
from ..services.problems import ImportFailed, UserFacingError
from ..services.tools.huggingface import dataset_file
from ..services.uploads import check_file_size, discard_uploads_of, store_local_files


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


def run_job_cli(
    request: Callable[..., Job], *, params: Any, label: str, stderr: TextIO | None = None, quiet: bool = False
) -> dict[str, Any]:
    """Ask for a job through its kind's request function, follow it to the end and return its result.

    It runs here in the embedded mode and on a worker otherwise; either way the job row ends as
    a page-started job's would. Refusals and failures become a :class:`CommandError` with the message.
    """
    bar = ProgressBar(stderr or sys.stderr, label)
    jobs_recover()
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        params = store_local_files(params)  # the worker may be on another host: it gets the files, not paths
    try:
        job = request(params=params, start=False)
        job = job_follow(job, on_progress=(lambda *args: None) if quiet else bar)
    except UserFacingError as error:
        raise CommandError(str(error)) from None
    except BrokerUnavailable as error:
        discard_uploads_of(params)
        raise CommandError(str(error)) from None
    bar.close()
    if job.status == Job.Status.FAILED:
        raise CommandError(job.error)
    return job.result


def existing_file(path: Path, what: str = "") -> str:
    """Return the absolute path of a file named on the command line; CommandError if there is no such file.

    ``what`` names the option in the message (``"chunk map"``: ``PATH: no such file (chunk map)``). A folder
    that a Hugging Face dataset was saved to (``save_to_disk``) names its Arrow file. A file over
    ``UPLOAD_MAX_BYTES`` is refused as an upload of it would be.
    """
    if path.is_dir() and not what:
        try:
            path = dataset_file(path)
        except ImportFailed as error:
            raise CommandError(str(error)) from None
    if not path.is_file():
        raise CommandError(f"{path}: no such file" + (f" ({what})" if what else ""))
    try:
        check_file_size(path.name, path.stat().st_size)  # the upload limit: the same file through the page is refused
    except ImportFailed as error:
        raise CommandError(str(error)) from None
    return str(path.resolve())


def run_import_cli(
    command: BaseCommand, request: Callable[..., Job], *, params: Any, path: Path, quiet: bool
) -> dict[str, Any]:
    """Run an import job of the file at ``path`` as :func:`run_job_cli` does, print its message and return its result."""
    result = run_job_cli(request, params=params, label=f"import {path.name}", stderr=command.stderr, quiet=quiet)
    command.stdout.write(result["message"])
    return result


def base_and_candidate(options: dict[str, Any]) -> tuple[Any, Any]:
    """The runs ``--base`` and ``--candidate`` name (within ``--evalset`` when given); CommandError if either is unknown."""
    try:
        base = run_by_ref(options["base"], evalset=options["evalset"])
        candidate = run_by_ref(options["candidate"], evalset=options["evalset"])
    except UserFacingError as error:
        raise CommandError(str(error)) from None
    return base, candidate
