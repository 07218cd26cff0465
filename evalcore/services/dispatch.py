"""Route a job to its service by kind. Apps register a handler per job kind.

Paths in params are files the job owns (uploads saved under MEDIA_ROOT, or files named on the CLI).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..models import Job, Run
from .comparisons import compare_runs
from .evalsets import evalset_import
from .runs import run_import

Progress = Callable[[int, int | None, str], None]
Handler = Callable[[Job, Progress], dict[str, Any]]
HANDLERS: dict[str, Handler] = {}


def job_handler(kind: str) -> Callable[[Handler], Handler]:
    """Register the function that runs jobs of ``kind``."""

    def register(func: Handler) -> Handler:
        HANDLERS[kind] = func
        return func

    return register


def _user(job: Job) -> Any:
    return job.created_by


def _optional_path(value: str | None) -> Path | None:
    return Path(value) if value else None


def run_job_handler(job: Job, *, progress: Progress) -> dict[str, Any]:
    handler = HANDLERS.get(job.kind)
    if handler is None:
        raise ValueError(f"no handler is registered for job kind {job.kind!r}")
    return handler(job, progress)


@job_handler(Job.Kind.IMPORT_EVALSET)
def _import_evalset(job: Job, progress: Progress) -> dict[str, Any]:
    params = job.params
    result = evalset_import(
        path=Path(params["path"]),
        name=params["name"],
        fmt=params.get("format") or None,
        display_name=params.get("display_name"),
        mode=params.get("mode", "replace"),
        base_version=params.get("base_version"),
        topics_path=_optional_path(params.get("topics_path")),
        description=params.get("description", ""),
        user=_user(job),
        progress=progress,
    )
    return {
        "created": result.created,
        "message": result.message,
        "version_id": result.version.pk,
        "eval_set": result.version.eval_set.name,
        "version": result.version.number,
    }


@job_handler(Job.Kind.IMPORT_RUN)
def _import_run(job: Job, progress: Progress) -> dict[str, Any]:
    params = job.params
    result = run_import(
        path=Path(params["path"]),
        evalset=params["evalset"],
        name=params["name"],
        fmt=params.get("format") or None,
        display_name=params.get("display_name"),
        k=params.get("k"),
        gain=params.get("gain", "exponential"),
        judge_config=params.get("judge_config"),
        system_config=params.get("system_config"),
        chunks_path=_optional_path(params.get("chunks_path")),
        description=params.get("description", ""),
        user=_user(job),
        progress=progress,
    )
    return {"created": result.created, "message": result.message, "run_id": result.run.pk}


@job_handler(Job.Kind.GATE)
def _gate(job: Job, progress: Progress) -> dict[str, Any]:
    params = job.params
    outcome = compare_runs(
        base=Run.objects.get(pk=params["base"]),
        candidate=Run.objects.get(pk=params["candidate"]),
        metrics=params.get("metrics") or None,
        slice_by=params.get("slice_by", "type") or None,
        margin=params.get("margin"),
        margins=params.get("margins") or None,
        lower_is_better=params.get("lower_is_better") or (),
        user=_user(job),
        progress=progress,
    )
    return {"comparison_id": outcome.comparison.pk, "overall": outcome.report.overall}
