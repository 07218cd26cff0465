"""Reads of the bias batteries: the latest verdict on a judge config (what the judge certificate reads), a
campaign's batteries, one battery."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from evalcore.models import JudgeConfig
from evalcore.selectors import NotFound

from .models import BiasBattery, Campaign


@dataclass(frozen=True)
class BiasVerdict:
    """The bias part of a judge's record: whether its latest battery on a metric keeps it from gating, in words.

    ``blocks_gating`` is True when a probe's flip rate beyond the placebo was significant (after Holm's
    correction across probes) and above the owner's bar; ``words`` says which and by how much
    ("flips 12 % of unsupported claims to supported when the answer ends with an expert's assurance, CI 7–18 %").
    """

    blocks_gating: bool
    words: str
    battery_id: int
    campaign: str
    judge_config: str
    metric: str
    bar: float
    claims: int
    created_at: datetime
    findings: tuple[str, ...]  # each blocking (probe, direction) in words, the dangerous direction first

    def as_dict(self) -> dict[str, Any]:
        return {
            "blocks_gating": self.blocks_gating,
            "words": self.words,
            "battery": self.battery_id,
            "campaign": self.campaign,
            "judge_config": self.judge_config,
            "metric": self.metric,
            "bar": self.bar,
            "claims": self.claims,
            "created_at": self.created_at.isoformat(),
            "findings": list(self.findings),
        }


def bias_verdict_of(battery: BiasBattery) -> BiasVerdict:
    blocking = sorted(
        (f for f in battery.findings if f["blocks"]),
        key=lambda f: (f["direction"] != "to_supported", -(f["estimate"] or 0)),
    )
    return BiasVerdict(
        blocks_gating=battery.blocks_gating,
        words=battery.verdict,
        battery_id=battery.pk,
        campaign=battery.campaign.name,
        judge_config=battery.judge_config.label,
        metric=battery.metric,
        bar=battery.bar,
        claims=battery.claims,
        created_at=battery.created_at,
        findings=tuple(f["words"] for f in blocking),
    )


def latest_bias_verdict(judge_config: JudgeConfig, metric: str = "faithfulness") -> BiasVerdict | None:
    """The verdict of the latest bias battery run with ``judge_config`` on ``metric`` (any campaign); None if none ran."""
    battery = (
        BiasBattery.objects.filter(judge_config=judge_config, metric=metric)
        .select_related("campaign", "judge_config")
        .order_by("-created_at", "-id")
        .first()
    )
    return None if battery is None else bias_verdict_of(battery)


def campaign_batteries(campaign: Campaign) -> QuerySet[BiasBattery]:
    return BiasBattery.objects.filter(campaign=campaign).select_related("judge_config").order_by("-created_at", "-id")


def campaign_battery(campaign: Campaign, pk: Any) -> BiasBattery:
    try:
        battery = campaign_batteries(campaign).filter(pk=int(pk)).first()
    except (TypeError, ValueError):
        battery = None
    if battery is None:
        raise NotFound(f"campaign {campaign.name} has no bias battery {pk!r}", field="battery")
    return battery
