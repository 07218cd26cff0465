"""Eval runs: one stored row per question, with the pinned judge config that scored it.

Keep the rows, not just the means: paired comparisons, slicing, re-scoring and debugging all
need them. A run's rows and its score table are written once, by the import service, and then
only read: the models refuse ``save()`` of an existing row or table and ``delete()``, the querysets
refuse ``update()`` and ``delete()``, and database triggers (migration 0012) refuse any UPDATE, and
any DELETE unless the whole run goes with them.

Deleting a whole run stays possible where nothing protects it (no comparison, derived run or
labelling item refers to it): ``Run.delete()`` (or a queryset's) first marks the run ``deleting``
in the deleting transaction, which is the one state in which the triggers let its rows and score
table go. The mark is never unset, and on PostgreSQL a deferred trigger refuses to commit a
transaction that marked a run and left it in place.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models.signals import pre_delete
from django.dispatch import receiver
from django.utils import timezone

from .evalsets import EvalSetVersion, FrozenError, Question
from .judges import JudgeConfig

#: What the triggers (migration 0012) and the models say, each naming its rule.
ROWS_FROZEN = "frozen run rows: a run's rows never change and go only with their run; import a new run instead"
SCORE_TABLE_FROZEN = (
    "frozen score table: a run's score table is written with its rows, never changes and goes only with its run"
)


class Run(models.Model):
    version = models.ForeignKey(EvalSetVersion, on_delete=models.PROTECT, related_name="runs")
    name = models.SlugField(max_length=150, help_text="Unique within the eval set version.")
    description = models.TextField(blank=True)
    system_config = models.JSONField(default=dict, blank=True, help_text="Retriever, reranker, chunking, prompt, ...")
    judge_config = models.ForeignKey(JudgeConfig, null=True, blank=True, on_delete=models.PROTECT, related_name="runs")
    derived_from = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="derived_runs",
        help_text="The run whose rows this one re-scored with another judge config (runs are immutable).",
    )
    k = models.PositiveIntegerField(help_text="Chunks that reach the model after reranking and truncation.")
    gain = models.CharField(max_length=16, default="exponential", choices=[("exponential", "2^g - 1"), ("linear", "g")])
    has_chunk_map = models.BooleanField(default=False)
    source_name = models.CharField(max_length=255, blank=True)
    source_hash = models.CharField(max_length=64, help_text="SHA-256 of the imported file and options.")
    row_count = models.PositiveIntegerField(default=0)
    question_count = models.PositiveIntegerField(default=0, help_text="Questions in the eval set version.")
    summary = models.JSONField(default=dict, blank=True, help_text="Means, intervals and coverage per slice.")
    metadata = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    deleting = models.BooleanField(
        default=False,
        editable=False,
        help_text="Set by a deletion of the run, in its transaction: the only state in which its rows may go.",
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["version", "name"], name="run_name_unique_in_version"),
            models.CheckConstraint(condition=models.Q(k__gte=1), name="run_k_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.version})"

    @property
    def coverage(self) -> float:
        return self.row_count / self.question_count if self.question_count else 0.0

    @property
    def is_partial(self) -> bool:
        return self.row_count < self.question_count


class RunChunk(models.Model):
    """A chunk of the index a run retrieved from: gold spans are matched to these at scoring."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="chunks")
    chunk_id = models.CharField(max_length=255)
    doc = models.CharField(max_length=255)
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "chunk_id"], name="run_chunk_unique"),
            models.CheckConstraint(condition=models.Q(end__gt=models.F("start")), name="run_chunk_nonempty"),
        ]


class FrozenRunQuerySet(models.QuerySet):
    """Rows and score tables are never updated, nor deleted but by deleting their run."""

    frozen_message = ROWS_FROZEN

    def update(self, **kwargs: Any) -> int:
        raise FrozenError(self.frozen_message)

    def delete(self) -> tuple[int, dict[str, int]]:
        raise FrozenError(self.frozen_message)


class ScoreTableQuerySet(FrozenRunQuerySet):
    frozen_message = SCORE_TABLE_FROZEN


class Row(models.Model):
    """One question of one run: what was retrieved, what the model saw and said, and its scores.

    ``claims`` is a list of ``{"text", "supported", "rationale"}``: the judge's verdict per atomic
    claim. ``scores`` maps metric name to value (None where the metric is undefined, such as
    retrieval metrics of unanswerable questions, or faithfulness of a refusal).
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="rows")
    question = models.ForeignKey(Question, on_delete=models.PROTECT, related_name="rows")
    retrieved = models.JSONField(default=list, blank=True)
    context_ids = models.JSONField(default=list, blank=True)
    context = models.TextField(blank=True)
    answer = models.TextField(blank=True)
    declined = models.BooleanField(default=False)
    claims = models.JSONField(default=list, blank=True)
    scores = models.JSONField(default=dict, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    objects = FrozenRunQuerySet.as_manager()

    class Meta:
        ordering = ["run", "id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "question"], name="row_one_per_question"),
        ]

    def __str__(self) -> str:
        return f"{self.run.name}:{self.question.qid}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise FrozenError(ROWS_FROZEN)
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise FrozenError(ROWS_FROZEN)

    @property
    def context_chunks(self) -> list[dict[str, str]]:
        """The context split into the chunks that reached the model (ids beside their text).

        Contexts are imported either as one text or as a list of chunk texts joined by a blank
        line; ``metadata["context_chunks"]`` holds the list when it was given.
        """
        texts = self.metadata.get("context_chunks") if isinstance(self.metadata, dict) else None
        if not texts:
            texts = [part for part in self.context.split("\n\n") if part.strip()] if self.context else []
        ids = list(self.context_ids)
        return [{"id": ids[i] if i < len(ids) else "", "text": text} for i, text in enumerate(texts)]


class RunScoreTable(models.Model):
    """A run's scores again, as one column per metric (Parquet), written with its rows.

    The gate reads every score of both runs; decoding 100,000 rows of JSON took seconds where this
    takes milliseconds. Rows never change after the import, so the table never goes stale; a run
    imported before tables were kept has none and is read from its rows.
    """

    run = models.OneToOneField(Run, on_delete=models.CASCADE, primary_key=True, related_name="score_table")
    row_count = models.PositiveIntegerField()
    data = models.BinaryField(
        help_text="Parquet: question (its id), row (its id), qid, type, then one float column per metric."
    )

    objects = ScoreTableQuerySet.as_manager()

    def __str__(self) -> str:
        return f"scores of {self.run.name}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise FrozenError(SCORE_TABLE_FROZEN)
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise FrozenError(SCORE_TABLE_FROZEN)


@receiver(pre_delete, sender=Run, dispatch_uid="evalcore_run_deleting")
def _mark_run_deleting(sender: type[Run], instance: Run, **kwargs: Any) -> None:
    """Mark a run that is being deleted, in the deleting transaction, so the triggers let its rows go.

    Django sends ``pre_delete`` inside the deletion's transaction, after checking what protects the
    run and before deleting its rows (children first).
    """
    Run.objects.filter(pk=instance.pk).update(deleting=True)
    instance.deleting = True
