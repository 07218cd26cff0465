"""Comparisons and their gate decisions: logged, never overwritten."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from evalcore.engine import STATUSES
from evalcore.engine.multiplicity import CORRECTIONS

from .runs import Run

STATUS_CHOICES = [(status, status.title()) for status in STATUSES]


class AppendOnlyQuerySet(models.QuerySet):
    def update(self, **kwargs: Any) -> int:
        raise ValueError("Gate decisions are a log: they are never changed. Run the comparison again.")


class Comparison(models.Model):
    """One paired comparison of a candidate run against a baseline, with its overall gate status."""

    base = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="comparisons_as_base")
    candidate = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="comparisons_as_candidate")
    metrics = models.JSONField(default=list)
    slice_by = models.CharField(max_length=50, blank=True)
    margins = models.JSONField(default=dict, help_text="Margin per metric.")
    iterations = models.PositiveIntegerField()
    seed = models.PositiveIntegerField()
    confidence = models.FloatField(default=0.95)
    overall = models.CharField(max_length=10, choices=STATUS_CHOICES)
    n_paired = models.PositiveIntegerField()
    notes = models.JSONField(default=list, blank=True)
    excluded_metrics = models.JSONField(default=dict, blank=True, help_text="Metric -> why it was not compared.")
    judge_policy = models.CharField(
        max_length=10, default="review", help_text="What an unvalidated or unfit judge did to judge metrics."
    )
    correction = models.CharField(
        max_length=10,
        default="none",
        choices=[(c, c) for c in CORRECTIONS],
        help_text="The family-wise correction of 'block' over every decision (comparisons made before it existed: none).",
    )
    family_size = models.PositiveIntegerField(
        default=0, help_text="Decisions tested together, over which the correction ran (0 before it existed)."
    )
    judge_correction = models.CharField(
        max_length=10,
        default="none",
        help_text="ppi: judge metrics decided on the prediction-powered difference where people labelled both runs' "
        "rows; none: on the judge's raw difference.",
    )
    judge_rates = models.JSONField(
        default=list, blank=True, help_text="Each run's judge pass rate, raw and corrected for the judge's errors."
    )
    changed = models.JSONField(
        default=dict,
        blank=True,
        help_text="Metric -> {count, down, up}: how many questions changed, and the largest drops and rises "
        "(question, both row ids, both scores, delta), kept when the comparison is made so its page reads no whole run.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(overall__in=list(STATUSES)), name="comparison_overall_valid"),
            models.CheckConstraint(
                condition=models.Q(correction__in=list(CORRECTIONS)), name="comparison_correction_valid"
            ),
            models.CheckConstraint(condition=~models.Q(base=models.F("candidate")), name="comparison_two_runs"),
            models.CheckConstraint(
                condition=models.Q(judge_correction__in=["none", "ppi"]), name="comparison_judge_correction_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.base.name} vs {self.candidate.name}: {self.overall}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ValueError("A logged comparison is never changed. Run the comparison again.")
        super().save(*args, **kwargs)


class GateDecisionRecord(models.Model):
    """One logged gate decision for a (metric, slice) of a comparison."""

    comparison = models.ForeignKey(Comparison, on_delete=models.PROTECT, related_name="decisions")
    base = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="+")
    candidate = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="+")
    metric = models.CharField(max_length=100)
    slice = models.CharField(max_length=100, default="all")
    status = models.CharField(max_length=10, choices=STATUS_CHOICES)
    mean = models.FloatField()
    low = models.FloatField(null=True)
    high = models.FloatField(null=True)
    base_mean = models.FloatField(null=True)
    cand_mean = models.FloatField(null=True)
    margin = models.FloatField()
    n = models.PositiveIntegerField()
    p_value = models.FloatField(
        null=True,
        blank=True,
        help_text="One-sided p-value of the paired sign-flip test of 'no drop' (null: not tested).",
    )
    p_adjusted = models.FloatField(
        null=True, blank=True, help_text="The same after the comparison's family-wise correction."
    )
    interval_method = models.CharField(
        max_length=20, blank=True, help_text="tango (pass/fail metrics), expanded or percentile (bootstrap)."
    )
    test_method = models.CharField(max_length=20, blank=True, help_text="exact, monte-carlo or normal.")
    iterations = models.PositiveIntegerField()
    seed = models.PositiveIntegerField()
    confidence = models.FloatField()
    higher_is_better = models.BooleanField(default=True)
    message = models.TextField()
    data_status = models.CharField(
        max_length=10, choices=STATUS_CHOICES, help_text="What the data alone said, before the judge policy."
    )
    judge_validation = models.JSONField(
        null=True, blank=True, help_text="For judge metrics: the judge's validation against people."
    )
    to_settle = models.JSONField(
        null=True,
        blank=True,
        help_text="For review decisions: what would settle it, in words (sentence) and numbers (the planner's).",
    )
    judge_correction = models.JSONField(
        null=True,
        blank=True,
        help_text="Judge metrics under a judge correction: which difference decided (ppi or raw), the labels, what "
        "the judge was worth, the raw judge difference beside it, or why it fell back.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["comparison", "id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(status__in=list(STATUSES)), name="gate_status_valid"),
            models.CheckConstraint(
                condition=models.Q(p_value__isnull=True) | models.Q(p_value__gte=0, p_value__lte=1),
                name="gate_p_value_is_a_probability",
            ),
            models.CheckConstraint(
                condition=models.Q(p_adjusted__isnull=True) | models.Q(p_adjusted__gte=0, p_adjusted__lte=1),
                name="gate_p_adjusted_is_a_probability",
            ),
            models.UniqueConstraint(
                fields=["comparison", "metric", "slice"], name="gate_decision_unique_in_comparison"
            ),
        ]

    def __str__(self) -> str:
        return self.message

    @property
    def corrected_away(self) -> bool:
        """Whether the drop was significant alone but not after the comparison's family-wise correction."""
        if self.p_value is None or self.p_adjusted is None:
            return False
        alpha = (1.0 - self.confidence) / 2.0
        return self.p_value <= alpha < self.p_adjusted

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ValueError("Gate decisions are a log: they are never changed.")
        super().save(*args, **kwargs)
