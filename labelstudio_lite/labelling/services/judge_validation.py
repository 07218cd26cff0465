"""What people found of a judge config: the validation evalcore's gate asks for (see
:mod:`evalcore.services.judge_fitness`).

Two kinds of measurement validate a pinned judge config:

* a **judge report**: people's final labels on a campaign over a run scored by that config;
* a **held-out re-measurement**: a new config's verdicts on a campaign's held-out items, compared
  with people's labels there (the config was tuned on the tuning split, so only these count).

A measurement counts once it rests on enough labels (:data:`MIN_ITEMS` labelled items, of which
:data:`MIN_FAILURES` people found unsupported); the newest one that does is the config's
validation, fit when kappa and the miss rate meet that campaign's thresholds. A newer measurement
that does not count yet (a fresh held-out sample still being labelled) makes it stale, and says so.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime

from django.db.models import Max
from django.urls import reverse

from evalcore.models import JudgeConfig, Run
from evalcore.services.judge_fitness import FIT, NOT_FIT, UNVALIDATED, CorrectedPassRate, JudgeValidation

from ..models import Adjudication, Campaign, Item, Label, VerdictSet
from ..selectors import judge_verdicts
from .campaigns import population
from .judge_stats import CoreStats, Pair, core_stats, corrected_pass_rate, labelled_pairs, stratum_population, unit_word

MIN_ITEMS = 50
MIN_FAILURES = 10


@dataclass(frozen=True)
class Measurement:
    """One measurement of a judge config against people."""

    campaign: Campaign
    source: str
    pairs: list[Pair]
    stats: CoreStats
    measured_at: datetime | None
    url: str

    @property
    def counts(self) -> bool:
        return self.stats.n >= MIN_ITEMS and self.stats.failures >= MIN_FAILURES

    @property
    def fit(self) -> bool:
        stats, campaign = self.stats, self.campaign
        return (
            stats.kappa is not None
            and stats.miss_rate is not None
            and (stats.kappa >= campaign.fit_kappa and stats.miss_rate <= campaign.fit_miss_rate)
        )


def _latest_label(campaign: Campaign, *, split: str | None = None) -> datetime | None:
    labels = Label.objects.filter(item__campaign=campaign)
    adjudications = Adjudication.objects.filter(item__campaign=campaign)
    if split:
        labels, adjudications = labels.filter(item__split=split), adjudications.filter(item__split=split)
    dates = [labels.aggregate(d=Max("updated_at"))["d"], adjudications.aggregate(d=Max("decided_at"))["d"]]
    return max((d for d in dates if d is not None), default=None)


def measurements(config: JudgeConfig) -> Iterator[Measurement]:
    """Every measurement of the config against people: judge reports, then held-out re-measurements."""
    for campaign in Campaign.objects.filter(run__judge_config=config).select_related("run"):
        pairs, _ = labelled_pairs(campaign, judge_verdicts(campaign))
        stats = core_stats(
            pairs, unit_word=unit_word(campaign), seed=campaign.seed, strata=stratum_population(campaign)
        )
        yield Measurement(
            campaign,
            "judge report",
            pairs,
            stats,
            _latest_label(campaign),
            reverse("labelling:report", args=[campaign.name]),
        )
    for verdict_set in VerdictSet.objects.filter(judge_config=config).select_related("campaign__run"):
        campaign = verdict_set.campaign
        pairs, _ = labelled_pairs(campaign, judge_verdicts(campaign, verdict_set), split=Item.Split.HELDOUT)
        stats = core_stats(
            pairs, unit_word=unit_word(campaign), seed=campaign.seed, strata=stratum_population(campaign)
        )
        labelled = _latest_label(campaign, split=Item.Split.HELDOUT)
        measured = max(d for d in (verdict_set.created_at, labelled) if d is not None)
        yield Measurement(
            campaign,
            "held-out re-measurement",
            pairs,
            stats,
            measured,
            reverse("labelling:remeasure", args=[campaign.name]) + f"?verdicts={verdict_set.pk}",
        )


def _stale(chosen: Measurement, found: list[Measurement]) -> str:
    newer = [
        m
        for m in found
        if m is not chosen
        and not m.counts
        and m.measured_at
        and chosen.measured_at
        and m.measured_at > chosen.measured_at
    ]
    if not newer:
        return ""
    latest = max(newer, key=lambda m: m.measured_at)
    return (
        f"a newer {latest.source} on campaign {latest.campaign.name} ({latest.measured_at:%Y-%m-%d}) has only "
        f"{latest.stats.n} labelled {unit_word(latest.campaign)}, {latest.stats.failures} unsupported: not enough to count yet"
    )


def _validation(config: JudgeConfig, chosen: Measurement, found: list[Measurement]) -> JudgeValidation:
    stats = chosen.stats
    return JudgeValidation(
        status=FIT if chosen.fit else NOT_FIT,
        judge=str(config),
        config_hash=config.config_hash,
        unit_word=unit_word(chosen.campaign),
        n=stats.n,
        failures=stats.failures,
        missed=stats.missed,
        kappa=stats.kappa,
        kappa_low=stats.kappa_low,
        kappa_high=stats.kappa_high,
        miss_rate=stats.miss_rate,
        miss_low=stats.miss_low,
        miss_high=stats.miss_high,
        fit_kappa=chosen.campaign.fit_kappa,
        fit_miss_rate=chosen.campaign.fit_miss_rate,
        campaign=chosen.campaign.name,
        source=chosen.source,
        validated_at=chosen.measured_at.isoformat() if chosen.measured_at else None,
        url=chosen.url,
        stale=_stale(chosen, found),
    )


def _chosen(found: list[Measurement]) -> Measurement | None:
    counting = [m for m in found if m.counts]
    return max(counting, key=lambda m: (m.measured_at is not None, m.measured_at or datetime.min)) if counting else None


def judge_config_validation(config: JudgeConfig) -> JudgeValidation | None:
    """The config's validation by people (None when no campaign measured it at all)."""
    found = list(measurements(config))
    if not found:
        return None
    chosen = _chosen(found)
    if chosen is None:
        most = max(found, key=lambda m: m.stats.n)
        return JudgeValidation(
            status=UNVALIDATED,
            judge=str(config),
            config_hash=config.config_hash,
            unit_word=unit_word(most.campaign),
            n=most.stats.n,
            failures=most.stats.failures,
            campaign=most.campaign.name,
            source=most.source,
            url=most.url,
            why_not=(
                f"its largest measurement ({most.source} on campaign {most.campaign.name}) has {most.stats.n} labelled "
                f"{unit_word(most.campaign)}, {most.stats.failures} of them unsupported; a validation needs at least "
                f"{MIN_ITEMS}, {MIN_FAILURES} of them unsupported"
            ),
        )
    return _validation(config, chosen, found)


def run_corrected_pass_rate(config: JudgeConfig, run: Run) -> CorrectedPassRate | None:
    """The run's judge pass rate corrected for the errors people found in the config's validation."""
    chosen = _chosen(list(measurements(config)))
    if chosen is None:
        return None
    if chosen.source == "judge report" and chosen.campaign.run_id == run.pk:
        # the campaign's own run: its labels were drawn from these rows, so the run's pass count is no source of error
        rate = corrected_pass_rate(chosen.campaign, chosen.pairs)
    else:
        verdicts = [candidate.judge_supported for candidate in population(run, chosen.campaign.unit)]
        if not verdicts:
            return None
        rate = corrected_pass_rate(chosen.campaign, chosen.pairs, run_passes=sum(verdicts), run_total=len(verdicts))
    if rate is None:
        return None
    rg = dict(rogan_gladen=rate.corrected, rogan_gladen_low=rate.low, rogan_gladen_high=rate.high)
    if rate.ppi is not None:
        ppi = rate.ppi
        return CorrectedPassRate(
            run=run.name,
            raw=rate.raw,
            corrected=ppi.estimate,
            low=ppi.low,
            high=ppi.high,
            items=rate.run_items,
            note=rate.note or "",
            method="prediction-powered",
            labels_only=ppi.labels_estimate,
            labels_only_low=ppi.labels_low,
            labels_only_high=ppi.labels_high,
            worth=ppi.words,
            **rg,
        )
    return CorrectedPassRate(
        run=run.name,
        raw=rate.raw,
        corrected=rate.corrected,
        low=rate.low,
        high=rate.high,
        items=rate.run_items,
        note=rate.note or "",
        **rg,
    )


def judge_config_measurements(config: JudgeConfig) -> list[JudgeValidation]:
    """Every measurement of the config, newest first: fit or not where it counts, unvalidated (with why) where it
    rests on too few labels yet."""
    found = list(measurements(config))
    out = []
    for m in sorted(found, key=lambda m: (m.measured_at is not None, m.measured_at or datetime.min), reverse=True):
        validation = _validation(config, m, found)
        if not m.counts:
            validation = replace(
                validation,
                status=UNVALIDATED,
                why_not=f"{m.stats.n} labelled {unit_word(m.campaign)}, {m.stats.failures} unsupported: a validation "
                f"needs at least {MIN_ITEMS}, {MIN_FAILURES} of them unsupported",
            )
        out.append(validation)
    return out


class CampaignValidations:
    """The labelling app's answer to evalcore's question "has anyone checked this judge?"."""

    def validation(self, config: JudgeConfig) -> JudgeValidation | None:
        return judge_config_validation(config)

    def corrected_pass_rate(self, config: JudgeConfig, run: Run) -> CorrectedPassRate | None:
        return run_corrected_pass_rate(config, run)

    def validations(self, config: JudgeConfig) -> list[JudgeValidation]:
        return judge_config_measurements(config)
