"""What the labelling commands look up by name, refused with a :class:`CommandError` that says what is missing."""

from __future__ import annotations

from django.core.management.base import CommandError

from ..models import Campaign, VerdictSet
from ..selectors import campaign_named, verdict_set_in


def campaign_or_fail(name: str) -> Campaign:
    campaign = campaign_named(name)
    if campaign is None:
        raise CommandError(f"there is no campaign named {name!r}")
    return campaign


def verdict_set_or_fail(campaign: Campaign, pk: int | None) -> VerdictSet | None:
    """The campaign's verdict set ``pk`` (``--verdicts``), None when none is asked for."""
    if not pk:
        return None
    verdict_set = verdict_set_in(campaign, pk)
    if verdict_set is None:
        raise CommandError(f"campaign {campaign.name!r} has no verdict set {pk}")
    return verdict_set
