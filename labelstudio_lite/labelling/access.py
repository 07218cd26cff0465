"""Access helpers: an annotator reaches only campaigns they are assigned to (404 otherwise)."""

from __future__ import annotations

from typing import Any

from django.http import Http404

from labelstudio_lite.accounts.access import is_eval_owner

from .models import Campaign, CampaignAnnotator


def campaign_for_labelling(user: Any, name: str) -> Campaign:
    """The campaign, if the user is assigned to label it; 404 for everyone else (eval owners too)."""
    campaign = Campaign.objects.select_related("run").filter(name=name).first()
    if campaign is None or not CampaignAnnotator.objects.filter(campaign=campaign, user=user).exists():
        raise Http404("No such campaign among yours.")
    return campaign


def campaign_for_owner(user: Any, name: str) -> Campaign:
    if not is_eval_owner(user):
        raise Http404("No such campaign.")
    campaign = Campaign.objects.select_related("run__version__eval_set", "run__judge_config").filter(name=name).first()
    if campaign is None:
        raise Http404("No such campaign.")
    return campaign
