"""Users and their role, their API tokens and the one-time links that let them in.

Annotators label, eval owners see judge verdicts, scores and reports. Secrets are never stored:
an API token and a one-time link are kept as the SHA-256 of their text (both are 256 random bits,
so a fast hash is enough; a slow password hash would only slow every API request), shown to their
owner once, when made.
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.db import models
from django.utils import timezone


def secret_digest(secret: str) -> str:
    """The SHA-256 hex digest a token or a link is stored and looked up by."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


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


class ApiTokenQuerySet(models.QuerySet):
    def live(self) -> ApiTokenQuerySet:
        return self.filter(revoked_at__isnull=True)


class ApiToken(models.Model):
    """A token a script or CI sends as ``Authorization: Token <key>``; only its digest is kept."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="What it is for (a CI job, a notebook).")
    digest = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12, help_text="The key's first characters, to tell tokens apart.")
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.CheckConstraint(condition=~models.Q(name=""), name="api_token_named")]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class AccessLink(models.Model):
    """A one-time link with which a person sets their password: an invitation, or a reset by an eval owner."""

    class Purpose(models.TextChoices):
        INVITE = "invite", "Invitation"
        RESET = "reset", "Password reset"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="access_links")
    purpose = models.CharField(max_length=10, choices=Purpose.choices)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True, help_text="Replaced by a newer link, or withdrawn.")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(purpose__in=["invite", "reset"]), name="access_link_purpose"),
            models.CheckConstraint(
                condition=models.Q(used_at__isnull=True) | models.Q(revoked_at__isnull=True),
                name="access_link_used_or_revoked",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_purpose_display()} for {self.user_id}"

    def is_open(self, now=None) -> bool:
        """Usable now: neither used, withdrawn nor expired."""
        now = now or timezone.now()
        return self.used_at is None and self.revoked_at is None and self.expires_at > now
