"""Long work (imports, scoring, gates across slices) tracked as a job with progress.

A Celery task updates its job row as it goes; pages poll it with htmx and the CLI prints it,
so nobody waits on a request and everyone sees how far the work has got.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from ..jobs.registry import job_kind_label


class Job(models.Model):
    """One piece of long work. Its ``kind`` names a job kind an app registered
    (:func:`evalcore.jobs.registry.register_job_kind`), and its label comes from that registry: evalcore does not list the other apps' kinds."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    kind = models.CharField(max_length=32)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    params = models.JSONField(default=dict, blank=True)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(null=True, blank=True)
    message = models.TextField(blank=True)
    result = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    runner = models.CharField(
        max_length=300, blank=True, help_text="host:pid:start of the process running the job (to tell when it died)"
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    cancel_requested_at = models.DateTimeField(null=True, blank=True, help_text="Someone asked to stop it.")
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="The worker running it was last seen alive (a stale one died)."
    )
    starts = models.PositiveIntegerField(
        default=0, help_text="How many times a process took it up (a resumable job again after each lost worker)."
    )
    sent_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the broker accepted its task (empty while not yet, and in the embedded mode).",
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=["queued", "running", "succeeded", "failed", "cancelled"]),
                name="job_status_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind_label} #{self.pk} ({self.status})"

    @property
    def kind_label(self) -> str:
        return job_kind_label(self.kind)

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED, self.Status.CANCELLED)

    @property
    def percent(self) -> int | None:
        if not self.total:
            return None
        return min(100, int(100 * self.done / self.total))
