"""Access helpers: an annotator reaches only campaigns they are assigned to (404 otherwise)."""

from __future__ import annotations

from typing import Any

from django.http import Http404

from labelstudio_lite.accounts.access import is_eval_owner

from .models import Campaign, VerdictSet
from .selectors import NotFound, campaign_named, verdict_set_asked


def campaign_for_labelling(user: Any, name: str) -> Campaign:
    """The campaign, if the user is assigned to label it; 404 for everyone else (eval owners too).

    One query (the membership is a join), and the instance remembers whom it was checked for, so
    the assignment services called with it in the same request need not ask again.
    """
    campaign = None
    if getattr(user, "pk", None) is not None:
        campaign = Campaign.objects.select_related("run").filter(name=name, campaignannotator__user=user).first()
    if campaign is None:
        raise Http404(
            f"There is no campaign “{name}” among the ones you are assigned to label. "
            "If you expected to label it, ask its eval owner to add you."
        )
    campaign._annotator_checked = user.pk
    return campaign


def campaign_for_owner(user: Any, name: str) -> Campaign:
    if not is_eval_owner(user):
        raise Http404("No such campaign.")
    campaign = campaign_named(name)
    if campaign is None:
        raise Http404("No such campaign.")
    return campaign


def verdict_set_for(campaign: Campaign, pk: str | None) -> VerdictSet | None:
    """The verdict set a request names (``?verdicts=ID``), or None when it names none; 404 when the campaign has no such set."""
    try:
        return verdict_set_asked(campaign, pk)
    except NotFound:
        raise Http404("No such verdict set in this campaign.") from None
