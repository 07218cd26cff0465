"""The judge certificates: append-only, one per measurement (see :mod:`.services.certificates`)."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils import timezone


class CertificateQuerySet(models.QuerySet):
    def update(self, **kwargs: Any) -> int:
        raise ValueError("A judge certificate is never rewritten: a newer measurement supersedes it.")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise ValueError("A judge certificate is never deleted: a newer measurement supersedes it.")


class Certificate(models.Model):
    """A judge config's certificate on one metric under one guideline version: append-only.

    ``state`` is ``trusted`` when the interval bounds clear the bars, ``untrusted`` when a bound
    shows the judge fails them, else ``inconclusive`` (with ``more_failure_labels``: about how many
    more failure-class items would decide). ``slice`` is empty for the whole campaign, else the
    question type it measures. The newest row per (config hash, metric, guideline version, slice)
    is the current one; database triggers refuse every UPDATE and DELETE (migration 0009).
    """

    class State(models.TextChoices):
        TRUSTED = "trusted", "Trusted"
        UNTRUSTED = "untrusted", "Untrusted"
        INCONCLUSIVE = "inconclusive", "Inconclusive"

    judge_config = models.ForeignKey("evalcore.JudgeConfig", on_delete=models.PROTECT, related_name="certificates")
    config_hash = models.CharField(max_length=64)
    model = models.CharField(max_length=200, help_text="The judge's model as pinned (for staleness in words).")
    prompt_hash = models.CharField(max_length=64)
    metric = models.CharField(max_length=100)
    guideline_version = models.PositiveIntegerField()
    definition = models.JSONField(help_text="The metric as the campaign defined it (scale, threshold, question).")
    definition_hash = models.CharField(max_length=64)
    campaign = models.CharField(max_length=100, help_text="The campaign measured (kept if it is deleted).")
    source = models.CharField(max_length=40, help_text="judge report, or held-out re-measurement")
    slice = models.CharField(max_length=200, blank=True, default="")
    state = models.CharField(max_length=12, choices=State.choices)
    kappa = models.FloatField(null=True, blank=True)
    kappa_low = models.FloatField(null=True, blank=True)
    kappa_high = models.FloatField(null=True, blank=True)
    miss_rate = models.FloatField(null=True, blank=True)
    miss_low = models.FloatField(null=True, blank=True)
    miss_high = models.FloatField(null=True, blank=True)
    items = models.PositiveIntegerField()
    failure_items = models.PositiveIntegerField()
    more_failure_labels = models.PositiveIntegerField(null=True, blank=True)
    reasons = models.JSONField(default=list)
    bars = models.JSONField(default=dict)
    fingerprint = models.CharField(max_length=64, help_text="Hash of what was measured: the same twice is one row.")
    measured_at = models.DateTimeField(null=True, blank=True, help_text="The newest label or verdict it rests on.")
    created_at = models.DateTimeField(default=timezone.now)

    objects = CertificateQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["fingerprint"], name="certificate_fingerprint_unique"),
            models.CheckConstraint(
                condition=models.Q(state__in=["trusted", "untrusted", "inconclusive"]), name="certificate_state_valid"
            ),
        ]
        indexes = [models.Index(fields=["config_hash", "metric", "slice"], name="certificate_key_idx")]

    def __str__(self) -> str:
        where = f" · {self.slice}" if self.slice else ""
        return f"{self.config_hash[:8]} · {self.metric}{where} · guideline v{self.guideline_version}: {self.state}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ValueError("A judge certificate is never rewritten: a newer measurement supersedes it.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise ValueError("A judge certificate is never deleted: a newer measurement supersedes it.")
