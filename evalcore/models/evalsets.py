"""Eval sets: named, versioned, frozen collections of questions with gold labels.

A version is frozen the moment it is created: the import service inserts its questions and seals
it in one transaction. After that its questions and gold never change: the model refuses saves
and deletes, the querysets refuse ``update()``, ``delete()`` and inserts into a sealed version,
and database triggers refuse any UPDATE of a question, any INSERT into a sealed version and any
change to a sealed version's content fields, so no door (ORM, admin, API, raw SQL) can edit it.
New questions make a new version, derived from an older one, with its lineage and a content hash.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone


class FrozenError(Exception):
    """Raised on any attempt to change a frozen eval set version or its questions."""

    def __init__(self, message: str = "") -> None:
        super().__init__(
            message
            or "Eval set versions are frozen: their questions and gold never change. "
            "Import the changed questions as a new version instead."
        )


class EvalSet(models.Model):
    name = models.SlugField(max_length=100, unique=True, help_text="Letters, digits, - and _.")
    description = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def latest_version(self) -> EvalSetVersion | None:
        return self.versions.order_by("-number").first()


class QuestionQuerySet(models.QuerySet):
    """Questions cannot be updated or deleted, nor added to a sealed version."""

    def update(self, **kwargs: Any) -> int:
        raise FrozenError()

    def delete(self) -> tuple[int, dict[str, int]]:
        raise FrozenError()

    def bulk_create(self, objs: Any, *args: Any, **kwargs: Any) -> list:
        objs = list(objs)
        version_ids = {obj.version_id for obj in objs}
        if EvalSetVersion.objects.filter(pk__in=version_ids, sealed=True).exists():
            raise FrozenError()
        return super().bulk_create(objs, *args, **kwargs)


class EvalSetVersionQuerySet(models.QuerySet):
    def update(self, **kwargs: Any) -> int:
        if set(kwargs) - EvalSetVersion.MUTABLE_FIELDS and self.filter(sealed=True).exists():
            raise FrozenError()
        return super().update(**kwargs)

    def delete(self) -> tuple[int, dict[str, int]]:
        raise FrozenError()


class EvalSetVersion(models.Model):
    #: The only fields that may change once a version is sealed (bookkeeping, not content).
    MUTABLE_FIELDS = frozenset({"archived", "note"})

    eval_set = models.ForeignKey(EvalSet, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="children")
    content_hash = models.CharField(
        max_length=64, help_text="SHA-256 of the questions and gold, canonically serialized."
    )
    question_count = models.PositiveIntegerField(default=0)
    source_name = models.CharField(max_length=255, blank=True)
    note = models.TextField(blank=True)
    archived = models.BooleanField(default=False)
    sealed = models.BooleanField(default=False, help_text="Set once its questions are in; never unset.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = EvalSetVersionQuerySet.as_manager()

    class Meta:
        ordering = ["eval_set__name", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["eval_set", "number"], name="evalset_version_number_unique"),
            models.UniqueConstraint(fields=["eval_set", "content_hash"], name="evalset_version_content_unique"),
            models.CheckConstraint(condition=models.Q(number__gte=1), name="evalset_version_number_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.eval_set.name}@{self.number}"

    @property
    def label(self) -> str:
        return f"{self.eval_set.name} v{self.number}"

    @classmethod
    def from_db(cls, db: Any, field_names: Any, values: Any) -> EvalSetVersion:
        instance = super().from_db(db, field_names, values)
        instance._sealed_in_db = instance.sealed
        return instance

    def save(self, *args: Any, **kwargs: Any) -> None:
        if getattr(self, "_sealed_in_db", False):
            update_fields = kwargs.get("update_fields")
            if update_fields is None or set(update_fields) - self.MUTABLE_FIELDS:
                raise FrozenError()
        super().save(*args, **kwargs)
        self._sealed_in_db = self.sealed

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise FrozenError()


class Question(models.Model):
    version = models.ForeignKey(EvalSetVersion, on_delete=models.PROTECT, related_name="questions")
    qid = models.CharField("question id", max_length=200)
    text = models.TextField()
    qtype = models.CharField("question type", max_length=100, blank=True, db_index=True, help_text="The slice.")
    tags = models.JSONField(default=list, blank=True)
    answerable = models.BooleanField(default=True)
    reference_answer = models.TextField(blank=True)
    gold = models.JSONField(default=list, blank=True, help_text='[{"doc", "grade", "start"?, "end"?}]')
    metadata = models.JSONField(default=dict, blank=True)

    objects = QuestionQuerySet.as_manager()

    class Meta:
        ordering = ["version", "id"]
        constraints = [
            models.UniqueConstraint(fields=["version", "qid"], name="question_id_unique_in_version"),
        ]

    def __str__(self) -> str:
        return self.qid

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding or EvalSetVersion.objects.filter(pk=self.version_id, sealed=True).exists():
            raise FrozenError()
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise FrozenError()

    @property
    def has_spans(self) -> bool:
        return any(entry.get("start") is not None for entry in self.gold)
