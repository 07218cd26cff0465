"""The job kinds each app registers: a name, a label, a frozen parameters dataclass and the handler.

No model or service import at run time: the :class:`~evalcore.models.Job` model imports this module for
its kinds' labels, and the runner imports it for their handlers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..models import Job
    from ..services.importing import Progress

#: ``handler(params, job, progress) -> result``: runs a job of its kind by calling the kind's service.
Handler = Callable[[Any, "Job", "Progress"], dict[str, Any]]


@dataclass(frozen=True)
class JobKind:
    """A kind of job: what its parameters are and which service runs it."""

    name: str
    label: str
    params: type
    handler: Handler
    resumable: bool = False


JOB_KINDS: dict[str, JobKind] = {}


def register_job_kind(*, name: str, label: str, params: type, resumable: bool = False) -> Callable[[Handler], Handler]:
    """Register ``handler(params, job, progress) -> result`` as the runner of jobs of kind ``name``.

    ``resumable``: running the handler again after its worker died continues the work (the
    judge jobs read their answered calls back from the cache), so a stale job may be re-queued.
    """
    if not dataclasses.is_dataclass(params):
        raise TypeError(f"the parameters of job kind {name!r} must be a dataclass, got {params!r}")

    def register(handler: Handler) -> Handler:
        JOB_KINDS[name] = JobKind(name, label, params, handler, resumable)
        return handler

    return register


def job_kind(name: str) -> JobKind:
    """The kind registered as ``name``; ValueError naming the known kinds otherwise."""
    try:
        return JOB_KINDS[name]
    except KeyError:
        raise ValueError(f"no job kind {name!r} is registered (known: {', '.join(sorted(JOB_KINDS))})") from None


def job_kind_label(name: str) -> str:
    """The label of kind ``name`` ("Import run"), or the name in words when no app registered it."""
    kind = JOB_KINDS.get(name)
    return kind.label if kind else name.replace("_", " ")


def resumable_kinds() -> list[str]:
    """The names of the kinds whose handler resumes where it stopped."""
    return [name for name, kind in JOB_KINDS.items() if kind.resumable]
