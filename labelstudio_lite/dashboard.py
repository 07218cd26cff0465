"""Reads for the home pages: what each person should do next (no writes; the home page is a GET).

* An annotator sees their campaigns with their progress, the first unfinished one first.
* An eval owner sees what needs attention: campaigns still waiting for labels or for an
  adjudication, judge configs that score runs but were never validated (or were found unfit),
  the latest gate decisions, and imports that failed lately.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import Count, F, Q
from django.utils import timezone

from evalcore.models import Comparison, EvalSet, Job, JudgeConfig, Run
from evalcore.services.judge_fitness import FIT, JudgeValidation, judge_validation
from labelstudio_lite.labelling.models import Campaign, Item
from labelstudio_lite.labelling.selectors import FinalStatus, Share, annotator_share, campaigns_for_annotator
from labelstudio_lite.labelling.selectors import final_label_counts as _final_label_counts

#: How many of each kind the owner's home lists (the newest first); the full lists are one click away.
LISTED = 6


@dataclass(frozen=True)
class AnnotatorCampaign:
    """One of an annotator's campaigns, with their part of it."""

    campaign: Campaign
    share: Share
    percent: int

    @property
    def finished(self) -> bool:
        return self.share.done >= self.share.target or self.share.remaining_in_campaign == 0

    @property
    def left(self) -> int:
        return max(0, self.share.target - self.share.done)


def annotator_campaigns(user: Any) -> list[AnnotatorCampaign]:
    """The annotator's campaigns, unfinished ones first (newest first within each)."""
    out = []
    for campaign in campaigns_for_annotator(user):
        share = annotator_share(campaign=campaign, user=user)
        percent = min(100, int(100 * share.done / share.target)) if share.target else 100
        out.append(AnnotatorCampaign(campaign=campaign, share=share, percent=percent))
    return sorted(out, key=lambda entry: entry.finished)  # stable: keeps newest first


@dataclass(frozen=True)
class CampaignAttention:
    """A campaign that is not finished: items still short of labels, or labels in conflict."""

    campaign: Campaign
    items: int
    complete: int
    conflicts: int

    @property
    def waiting(self) -> int:
        return self.items - self.complete

    @property
    def percent(self) -> int:
        return int(100 * self.complete / self.items) if self.items else 100


@dataclass(frozen=True)
class JudgeAttention:
    """A judge config that scores runs but is not fit to gate (never validated, or found unfit)."""

    config: JudgeConfig
    validation: JudgeValidation
    run: Run  # its newest run: where a validation campaign would start


@dataclass(frozen=True)
class OwnerHome:
    campaigns: list[CampaignAttention]
    judges: list[JudgeAttention]
    comparisons: list[Comparison]
    failed_jobs: list[Job]
    counts: dict[str, int]


def _campaigns_needing_attention() -> list[CampaignAttention]:
    campaigns = Campaign.objects.annotate(
        n_items=Count("items", distinct=True),
        n_complete=Count("items", filter=Q(items__label_count__gte=F("overlap")), distinct=True),
    ).order_by("-created_at")[: 3 * LISTED]
    out = []
    for campaign in campaigns:
        complete_items = Item.objects.filter(campaign=campaign, label_count__gte=F("overlap"))
        conflicts = _final_label_counts(campaign).get(FinalStatus.CONFLICT, 0) if complete_items.exists() else 0
        if campaign.n_complete < campaign.n_items or conflicts:
            out.append(CampaignAttention(campaign, campaign.n_items, campaign.n_complete, conflicts))
    return out[:LISTED]


def _judges_needing_attention() -> list[JudgeAttention]:
    out = []
    for config in JudgeConfig.objects.filter(runs__isnull=False).distinct().order_by("-created_at")[: 3 * LISTED]:
        validation = judge_validation(config)
        if validation.status != FIT:
            newest = config.runs.select_related("version__eval_set").order_by("-created_at").first()
            out.append(JudgeAttention(config=config, validation=validation, run=newest))
    return out[:LISTED]


def owner_home() -> OwnerHome:
    """What an eval owner should look at now, with the counts of everything."""
    since = timezone.now() - timedelta(days=7)
    return OwnerHome(
        campaigns=_campaigns_needing_attention(),
        judges=_judges_needing_attention(),
        comparisons=list(
            Comparison.objects.select_related("base", "candidate").order_by("-created_at", "-id")[:LISTED]
        ),
        failed_jobs=list(Job.objects.filter(status=Job.Status.FAILED, created_at__gte=since)[:LISTED]),
        counts={
            "evalsets": EvalSet.objects.count(),
            "runs": Run.objects.count(),
            "campaigns": Campaign.objects.count(),
            "comparisons": Comparison.objects.count(),
        },
    )
