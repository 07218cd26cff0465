"""Judge certificates: a judge config on one metric under one guideline version, certified on interval bounds.

A measurement (a judge report, or a held-out re-measurement) becomes a certificate through the
engine's :func:`~evalcore.engine.certificates.certify_intervals`, at the campaign's bars (its
minimum kappa and maximum miss rate): ``trusted`` when the interval bounds clear both,
``untrusted`` when a bound shows the judge fails one, else ``inconclusive`` with about how many
more failure-class items would decide. Kappa is Cohen's kappa on pass / fail, or on an ordinal
campaign the linear weighted kappa on the scale (it counts a two-point miss twice a one-point
one; quadratic weights forgive near misses more and are reported beside it). The rates are the
report's: weighted back to the run where the campaign over-sampled a stratum.

Certificates are stored and never rewritten (the database refuses UPDATE and DELETE); recording
the same measurement twice is one row, a newer one supersedes it. The whole campaign gets one,
and so does every slice with enough labels (:data:`SLICE_MIN_ITEMS`, :data:`SLICE_MIN_FAILURES`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction

from evalcore.engine import Interval
from evalcore.engine.certificates import CertificateBars, JudgeCertificate, certify_intervals
from evalcore.models import JudgeConfig

from ..models import Campaign, Certificate, Label
from .judge_agreement import _ordinal  # the one place the scores are gathered
from .judge_stats import CoreStats, Pair, core_stats, fail_phrases, unit_word

SLICE_MIN_ITEMS = 50
SLICE_MIN_FAILURES = 10
#: The weighting of kappa an ordinal campaign is certified on.
ORDINAL_WEIGHTS = "linear"


def definition_hash(definition: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(definition, sort_keys=True).encode()).hexdigest()


def failure_words(campaign: Campaign) -> str:
    """The failure class in words: "unsupported claims", "answers scored 1–2 on answer_relevance"."""
    if campaign.ordinal:
        return f"{unit_word(campaign)} scored {campaign.scale_min}–{campaign.fail_at:g}"
    return f"{campaign.fail_word.lower()} {unit_word(campaign)}"


def bars_of(campaign: Campaign) -> CertificateBars:
    """The campaign's bars (kept strictly inside their ranges, as the engine needs: a 0 or 100 % bar is 0.1 % or 99.9 %)."""
    return CertificateBars(
        max_miss_rate=min(max(campaign.fit_miss_rate, 0.001), 0.999),
        min_kappa=min(max(campaign.fit_kappa, -0.99), 0.99),
    )


def certify_stats(
    campaign: Campaign, stats: CoreStats, *, kappa: tuple[float | None, float | None, float | None] | None = None
) -> JudgeCertificate | None:
    """The certificate of a judge's statistics on a campaign (None with no labelled item).

    ``kappa`` (estimate, low, high) replaces Cohen's kappa: an ordinal campaign's weighted kappa.
    """
    if stats.n == 0:
        return None
    estimate, low, high = kappa if kappa is not None else (stats.kappa, stats.kappa_low, stats.kappa_high)
    nan = float("nan")
    kappa_interval = Interval(
        nan if estimate is None else estimate, nan if low is None else low, nan if high is None else high
    )
    if stats.failures:
        miss = Interval(stats.miss_rate, stats.miss_low, stats.miss_high)
    else:
        miss = Interval(nan, 0.0, 1.0)
    return certify_intervals(
        kappa=kappa_interval,
        miss_rate=miss,
        items=stats.n,
        failure_items=stats.failures,
        missed=stats.missed,
        bars=bars_of(campaign),
        weights=ORDINAL_WEIGHTS if kappa is not None else None,
        failure_label=failure_words(campaign),
    )


def ordinal_kappa(campaign: Campaign, pairs: Sequence[Pair], judge_scores: dict[int, float]) -> tuple | None:
    """The linear weighted kappa (estimate, low, high) of an ordinal campaign's pairs; None on a binary one."""
    if not campaign.ordinal or not judge_scores:
        return None
    line = _ordinal(campaign, pairs, judge_scores).linear
    return (line.estimate, line.low, line.high)


@dataclass(frozen=True)
class Measured:
    """One measurement's certificates: the whole campaign's, and per slice with enough labels."""

    overall: JudgeCertificate | None
    slices: dict[str, JudgeCertificate]
    guideline_version: int


def labels_guideline(campaign: Campaign, *, split: str | None = None) -> int:
    """The guideline version a measurement rests on: the newest any of its labels was given under (1 if none)."""
    labels = Label.objects.filter(item__campaign=campaign)
    if split:
        labels = labels.filter(item__split=split)
    return max(labels.values_list("guideline_version", flat=True).distinct(), default=1)


def measure(
    campaign: Campaign,
    pairs: Sequence[Pair],
    stats: CoreStats,
    *,
    strata: dict[str, tuple[int, bool]] | None,
    judge_scores: dict[int, float] | None = None,
    split: str | None = None,
) -> Measured:
    """Certify the judge on the campaign's pairs, overall and on every slice with enough labels."""
    scores = judge_scores or {}
    overall = certify_stats(campaign, stats, kappa=ordinal_kappa(campaign, pairs, scores))
    slices = {}
    for name in sorted({p.slice for p in pairs}):
        members = [p for p in pairs if p.slice == name]
        sliced = core_stats(
            members, unit_word=unit_word(campaign), seed=campaign.seed, strata=strata, **fail_phrases(campaign)
        )
        if sliced.n >= SLICE_MIN_ITEMS and sliced.failures >= SLICE_MIN_FAILURES:
            cert = certify_stats(campaign, sliced, kappa=ordinal_kappa(campaign, members, scores))
            if cert is not None:
                slices[name] = cert
    return Measured(overall, slices, labels_guideline(campaign, split=split))


def _row(
    *,
    config: JudgeConfig,
    campaign: Campaign,
    source: str,
    cert: JudgeCertificate,
    slice_name: str,
    guideline_version: int,
    measured_at: datetime | None,
) -> Certificate:
    definition = campaign.definition()
    numbers = cert.as_dict()
    fingerprint_of = {
        "config": config.config_hash,
        "metric": campaign.metric,
        "guideline": guideline_version,
        "definition": definition,
        "campaign": campaign.name,
        "source": source,
        "slice": slice_name,
        "certificate": numbers,
    }
    fingerprint = hashlib.sha256(json.dumps(fingerprint_of, sort_keys=True, default=str).encode()).hexdigest()
    existing = Certificate.objects.filter(fingerprint=fingerprint).first()
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            return Certificate.objects.create(
                judge_config=config,
                config_hash=config.config_hash,
                model=config.model + (f"-{config.model_version}" if config.model_version else ""),
                prompt_hash=config.prompt_hash,
                metric=campaign.metric,
                guideline_version=guideline_version,
                definition=definition,
                definition_hash=definition_hash(definition),
                campaign=campaign.name,
                source=source,
                slice=slice_name,
                state=cert.state,
                kappa=numbers["kappa"]["estimate"],
                kappa_low=numbers["kappa"]["low"],
                kappa_high=numbers["kappa"]["high"],
                miss_rate=numbers["miss_rate"]["estimate"],
                miss_low=numbers["miss_rate"]["low"],
                miss_high=numbers["miss_rate"]["high"],
                items=cert.items,
                failure_items=cert.failure_items,
                more_failure_labels=cert.more_failure_labels,
                reasons=list(cert.reasons),
                bars=numbers["bars"],
                fingerprint=fingerprint,
                measured_at=measured_at,
            )
    except IntegrityError:  # the same measurement recorded at the same instant by another request
        return Certificate.objects.get(fingerprint=fingerprint)


def record(
    *, config: JudgeConfig, campaign: Campaign, source: str, measured: Measured, measured_at: datetime | None
) -> tuple[Certificate | None, dict[str, Certificate]]:
    """Store a measurement's certificates (the same measurement again is the row already stored)."""
    common = {
        "config": config,
        "campaign": campaign,
        "source": source,
        "guideline_version": measured.guideline_version,
        "measured_at": measured_at,
    }
    overall = _row(cert=measured.overall, slice_name="", **common) if measured.overall else None
    slices = {name: _row(cert=cert, slice_name=name, **common) for name, cert in measured.slices.items()}
    return overall, slices


def certificates_of(config: JudgeConfig) -> list[Certificate]:
    """Every certificate of a judge config, newest first (superseded ones included)."""
    return list(Certificate.objects.filter(config_hash=config.config_hash).order_by("-created_at", "-id"))


def certificate_line(certificate: Certificate) -> str:
    """A certificate in one line, as ``judge_config show`` lists it."""
    where = f" · slice {certificate.slice}" if certificate.slice else ""
    return (
        f"#{certificate.pk} {certificate.metric}{where} · guideline v{certificate.guideline_version} · "
        f"{certificate.state}: {'; '.join(certificate.reasons)} (campaign {certificate.campaign}, {certificate.source}, "
        f"{certificate.created_at:%Y-%m-%d %H:%M})"
    )
