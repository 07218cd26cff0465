"""What several of the labelling app's tables share (kept apart so that tables in other modules can use it)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class Authored(models.Model):
    """Who made a record (None from the command line or once the user is deleted), and when."""

    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        abstract = True
