"""What the labelling commands look up by name, refused with a :class:`CommandError` that says what is missing."""

from __future__ import annotations

from django.core.management.base import CommandError

from ..models import Campaign, VerdictSet
from ..selectors import NotFound, campaign_get, verdict_set_asked


def campaign_or_fail(name: str) -> Campaign:
    try:
        return campaign_get(name)
    except NotFound as error:
        raise CommandError(str(error)) from None


def verdict_set_or_fail(campaign: Campaign, pk: int | None) -> VerdictSet | None:
    """The campaign's verdict set ``pk`` (``--verdicts``), None when none is asked for."""
    try:
        return verdict_set_asked(campaign, pk)
    except NotFound as error:
        raise CommandError(str(error)) from None
