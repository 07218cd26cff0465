"""Users and their role: annotators label, eval owners see judge verdicts, scores and reports."""

from django.contrib.auth.models import AbstractUser
from django.db import models


class User(AbstractUser):
    class Role(models.TextChoices):
        ANNOTATOR = "annotator", "Annotator"
        EVAL_OWNER = "eval_owner", "Eval owner"

    role = models.CharField(max_length=20, choices=Role.choices, default=Role.ANNOTATOR)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=models.Q(role__in=["annotator", "eval_owner"]), name="user_role_valid"),
        ]

    def __str__(self) -> str:
        return self.username

    @property
    def is_eval_owner(self) -> bool:
        """Eval owners (and superusers) see runs, judge verdicts, reports and everyone's labels."""
        return self.is_active and (self.role == self.Role.EVAL_OWNER or self.is_superuser)
