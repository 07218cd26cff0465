"""Reads of the bias batteries: the latest verdict on a judge config, the judge's certificate as gating reads it
(the bias part wired in), a campaign's batteries, one battery."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from evalcore.models import JudgeConfig
from evalcore.selectors import NotFound

from .models import BiasBattery, Campaign, Certificate


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


@dataclass(frozen=True)
class GatingCertificate:
    """A judge's certificate on a metric as gating reads it: the newest certificate's state, made ``untrusted`` by a
    bias battery that blocks (certificates are append-only: the bias part is combined when read, never written in).

    ``reasons`` are the certificate's own, then one per blocking probe ("bias: flips 12 % of unsupported claims to
    supported when the answer ends with an expert's assurance, CI 7–18 % ...").
    """

    state: str
    certificate: Certificate | None
    bias: BiasVerdict | None
    reasons: tuple[str, ...]

    @property
    def trusted(self) -> bool:
        return self.state == Certificate.State.TRUSTED


def certificate_for_gating(judge_config: JudgeConfig, metric: str = "faithfulness") -> GatingCertificate | None:
    """The newest whole-campaign certificate of ``judge_config`` on ``metric`` with its bias part; None if neither exists.

    With no certificate but a battery, the state is ``inconclusive`` (people have not measured the judge) unless the
    battery blocks, which makes it ``untrusted`` whatever people's labels say.
    """
    certificate = (
        Certificate.objects.filter(config_hash=judge_config.config_hash, metric=metric, slice="")
        .order_by("-created_at", "-id")
        .first()
    )
    bias = latest_bias_verdict(judge_config, metric)
    if certificate is None and bias is None:
        return None
    if certificate is not None:
        state, reasons = certificate.state, [str(r) for r in certificate.reasons or []]
    else:
        state = Certificate.State.INCONCLUSIVE
        reasons = [f"no certificate on {metric} yet: people have not measured this judge"]
    if bias is not None and bias.blocks_gating:
        state = Certificate.State.UNTRUSTED
        reasons += [f"bias: {words}" for words in bias.findings]
    return GatingCertificate(state=str(state), certificate=certificate, bias=bias, reasons=tuple(reasons))
