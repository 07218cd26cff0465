"""Bias batteries and owners' bias probes: frozen once written (the database refuses updates, migration 0010).

Imported by :mod:`.models`, so Django finds them in the labelling app.
"""

from __future__ import annotations

from typing import Any

from django.db import models

from .model_bases import Authored


class BiasProbe(Authored):
    """An owner's own bias probe, pinned: a changed text is a new version (the database refuses updates).

    The built-in probes live in code (:data:`evalcore.judging.probes.BUILT_IN`); these are the owners'.
    """

    name = models.SlugField(max_length=100)
    version = models.PositiveIntegerField()
    kind = models.CharField(max_length=20, help_text="append or prepend")
    field = models.CharField(max_length=20, help_text="answer, claim, question or context")
    text = models.TextField(help_text="What the probe adds, shown to the owner.")
    describes = models.CharField(max_length=300, help_text="In a verdict's words: 'when the answer ...'.")
    spec_hash = models.CharField(max_length=64)

    class Meta:
        ordering = ["name", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="bias_probe_version_unique"),
            models.CheckConstraint(condition=models.Q(kind__in=["append", "prepend"]), name="bias_probe_kind_valid"),
            models.CheckConstraint(
                condition=models.Q(field__in=["answer", "claim", "question", "context"]), name="bias_probe_field_valid"
            ),
            models.CheckConstraint(condition=models.Q(version__gte=1), name="bias_probe_version_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.name}@v{self.version}"

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise ValueError("bias probes are kept: a battery that ran one must stay readable")


class BiasBattery(Authored):
    """One battery of bias probes run on a campaign's tuning items with one judge config: its findings, frozen.

    Never rewritten (a database trigger refuses updates; the model refuses deletes): running it again
    with the same inputs finds this row, and a changed battery (other probes, bar or judge) is a new row.
    """

    campaign = models.ForeignKey("labelling.Campaign", on_delete=models.PROTECT, related_name="bias_batteries")
    judge_config = models.ForeignKey("evalcore.JudgeConfig", on_delete=models.PROTECT, related_name="bias_batteries")
    metric = models.CharField(max_length=100, default="faithfulness")
    probes = models.JSONField(help_text="The probe specs run, as pinned (the placebo included).")
    bar = models.FloatField(help_text="A probe blocks when its flip rate beyond the placebo is significant and above.")
    alpha = models.FloatField(default=0.05)
    correction = models.CharField(max_length=10, default="holm")
    confidence = models.FloatField(default=0.95)
    items = models.PositiveIntegerField(help_text="Tuning items probed (the clusters).")
    claims = models.PositiveIntegerField(help_text="Claims judged under every probe.")
    findings = models.JSONField(help_text="Per probe and direction: flips, interval, p-values, decision.")
    blocks_gating = models.BooleanField()
    verdict = models.TextField(help_text="The battery's verdict in words.")
    totals = models.JSONField(default=dict, blank=True, help_text="Calls, cache hits, tokens and cost.")
    source_hash = models.CharField(max_length=64, unique=True, help_text="Campaign, judge, probes and options.")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(bar__gte=0) & models.Q(bar__lt=1), name="bias_battery_bar_range"),
            models.CheckConstraint(
                condition=models.Q(alpha__gt=0) & models.Q(alpha__lt=1), name="bias_battery_alpha_range"
            ),
            models.CheckConstraint(condition=models.Q(correction__in=["holm", "none"]), name="bias_battery_correction"),
        ]

    def __str__(self) -> str:
        return f"bias battery #{self.pk} on {self.campaign.name} ({'blocks' if self.blocks_gating else 'clear'})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ValueError("a bias battery's findings are frozen: run the battery again for new ones")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise ValueError("a bias battery's findings are kept: they are part of the judge's record")
