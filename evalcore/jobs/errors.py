"""What a job's door or handler raises: the broker refused the task, the job was asked to stop."""

from __future__ import annotations


class BrokerUnavailable(Exception):
    """The broker did not accept a job's task: nothing was queued (answered 503, never a job left "queued")."""


class JobCancelled(Exception):
    """Raised by a handler that found its job was asked to stop (see :func:`evalcore.jobs.runner.job_cancel_requested`)."""
