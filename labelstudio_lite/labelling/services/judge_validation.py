"""What people found of a judge config: the validation evalcore's gate asks for (see
:mod:`evalcore.services.judge_fitness`).

Two kinds of measurement validate a pinned judge config:

* a **judge report**: people's final labels on a campaign over a run scored by that config;
* a **held-out re-measurement**: a new config's verdicts on a campaign's held-out items, compared
  with people's labels there (the config was tuned on the tuning split, so only these count).

Measurements are per judge metric (the campaign's). A measurement counts once it rests on enough
labels (:data:`MIN_ITEMS` labelled items, of which :data:`MIN_FAILURES` people put in the failure
class); the newest one that does is certified (:mod:`.certificates`: stored, append-only) and is
the config's validation on that metric: fit to gate only when the certificate reads ``trusted``
and is not stale. It is stale, in words, when a newer measurement does not count yet (a fresh
held-out sample still being labelled), when the campaign's guideline changed after its labels were
given, or when a newer campaign defines the metric differently (another scale or threshold). A
config with no measurement of its own is told when an earlier config of the same judge (same
name or model) was certified: its prompt or model changed since.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.db.models import Max, Q
from django.urls import reverse

from evalcore.models import JudgeConfig, Run
from evalcore.services.judge_correction import RunLabels
from evalcore.services.judge_fitness import (
    DEFAULT_METRIC,
    FIT,
    INCONCLUSIVE,
    NOT_FIT,
    UNVALIDATED,
    CorrectedPassRate,
    JudgeValidation,
)

from ..bias_selectors import latest_bias_verdict
from ..models import Adjudication, Campaign, Certificate, Item, Label, VerdictSet
from ..selectors import judge_verdicts
from .campaigns import population
from .certificates import (
    Measured,
    certificate_line,
    certificates_of,
    definition_hash,
    failure_words,
    measure,
    record,
)
from .judge_stats import CoreStats, Pair, core_stats, corrected_pass_rate, labelled_pairs, stratum_population, unit_word
from .run_labels import run_labels

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
    measured: Measured | None = None

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


def measurements(config: JudgeConfig, metric: str | None = None) -> Iterator[Measurement]:
    """Every measurement of the config against people (on ``metric``, or any): judge reports, then held-out
    re-measurements."""
    campaigns = Campaign.objects.filter(run__judge_config=config).select_related("run")
    verdict_sets = VerdictSet.objects.filter(judge_config=config).select_related("campaign__run")
    if metric is not None:
        campaigns, verdict_sets = campaigns.filter(metric=metric), verdict_sets.filter(campaign__metric=metric)
    for campaign in campaigns:
        pairs, _ = labelled_pairs(campaign, judge_verdicts(campaign))
        strata = stratum_population(campaign)
        stats = core_stats(pairs, unit_word=unit_word(campaign), seed=campaign.seed, strata=strata)
        scores = judge_scores(campaign)
        yield Measurement(
            campaign,
            "judge report",
            pairs,
            stats,
            _latest_label(campaign),
            reverse("labelling:report", args=[campaign.name]),
            measure(campaign, pairs, stats, strata=strata, judge_scores=scores),
        )
    for verdict_set in verdict_sets:
        campaign = verdict_set.campaign
        pairs, _ = labelled_pairs(campaign, judge_verdicts(campaign, verdict_set), split=Item.Split.HELDOUT)
        strata = stratum_population(campaign)
        stats = core_stats(pairs, unit_word=unit_word(campaign), seed=campaign.seed, strata=strata)
        labelled = _latest_label(campaign, split=Item.Split.HELDOUT)
        measured = max(d for d in (verdict_set.created_at, labelled) if d is not None)
        yield Measurement(
            campaign,
            "held-out re-measurement",
            pairs,
            stats,
            measured,
            reverse("labelling:remeasure", args=[campaign.name]) + f"?verdicts={verdict_set.pk}",
            measure(campaign, pairs, stats, strata=strata, split=Item.Split.HELDOUT),
        )


def judge_scores(campaign: Campaign) -> dict[int, float]:
    """The run's judge's score on the scale of every item of an ordinal campaign (empty on a binary one)."""
    if not campaign.ordinal:
        return {}
    return dict(Item.objects.filter(campaign=campaign, judge_score__isnull=False).values_list("pk", "judge_score"))


def _stale(chosen: Measurement, found: list[Measurement]) -> str:
    """Why the measurement is out of date, in words ("" when it is not); see :func:`_outdated`."""
    return "; ".join(_outdated(chosen, found) + _superseded_soon(chosen, found))


def _outdated(chosen: Measurement, found: list[Measurement]) -> list[str]:
    """What changed since the measurement so that it no longer counts: the guideline, the metric's definition."""
    rests_on = chosen.measured.guideline_version if chosen.measured else 1
    newest = max(found, key=lambda m: m.campaign.created_at).campaign
    return outdated_reasons(chosen.campaign, rests_on=rests_on, newest=newest)


def outdated_reasons(campaign: Campaign, *, rests_on: int, newest: Campaign | None = None) -> list[str]:
    """Why a measurement on ``campaign`` resting on labels given under guideline ``rests_on`` is stale, in words:
    the campaign's guideline changed since, or ``newest`` (the newest campaign of the same judge on the metric)
    defines the metric differently. Empty when it is current."""
    reasons = []
    guideline = campaign.guideline
    if guideline is not None and guideline.version != rests_on:
        reasons.append(
            f"the guideline of campaign {campaign.name} changed (v{rests_on} → v{guideline.version}) after these labels "
            f"were given: label again under v{guideline.version}"
        )
    if newest is not None and definition_hash(newest.definition()) != definition_hash(campaign.definition()):
        changed = sorted(k for k, v in newest.definition().items() if campaign.definition().get(k) != v)
        reasons.append(
            f"the metric's definition changed: campaign {newest.name} defines {campaign.metric} with another "
            f"{', '.join(changed)} than campaign {campaign.name} measured"
        )
    return reasons


def report_staleness(campaign: Campaign, config: JudgeConfig | None, *, rests_on: int) -> str:
    """A judge report's certificate's staleness in words ("" when current), as the gate's validation says it."""
    newest = None
    if config is not None:
        newest = (
            Campaign.objects.filter(metric=campaign.metric)
            .filter(Q(run__judge_config=config) | Q(verdict_sets__judge_config=config))
            .order_by("-created_at", "-pk")
            .first()
        )
    return "; ".join(outdated_reasons(campaign, rests_on=rests_on, newest=newest))


def _superseded_soon(chosen: Measurement, found: list[Measurement]) -> list[str]:
    """A newer measurement that does not count yet: the validation stands, with a note."""
    reasons = []
    newer = [
        m
        for m in found
        if m is not chosen
        and not m.counts
        and m.measured_at
        and chosen.measured_at
        and m.measured_at > chosen.measured_at
    ]
    if newer:
        latest = max(newer, key=lambda m: m.measured_at)
        reasons.append(
            f"a newer {latest.source} on campaign {latest.campaign.name} ({latest.measured_at:%Y-%m-%d}) has only "
            f"{latest.stats.n} labelled {unit_word(latest.campaign)}, {latest.stats.failures} "
            f"{failure_words(latest.campaign).split(' ')[0]}: not enough to count yet"
        )
    return reasons


STATUS_OF = {"trusted": FIT, "untrusted": NOT_FIT, "inconclusive": INCONCLUSIVE}


def _validation(
    config: JudgeConfig, chosen: Measurement, found: list[Measurement], *, store: bool = True
) -> JudgeValidation:
    stats = chosen.stats
    measured = chosen.measured
    overall = slices = None
    if store and measured is not None and measured.overall is not None:
        overall, slices = record(
            config=config,
            campaign=chosen.campaign,
            source=chosen.source,
            measured=measured,
            measured_at=chosen.measured_at,
        )
    cert = measured.overall if measured else None
    status = STATUS_OF[cert.state] if cert else (FIT if chosen.fit else NOT_FIT)
    reasons = tuple(cert.reasons) if cert else ()
    bias = latest_bias_verdict(config, chosen.campaign.metric)
    if bias is not None and bias.blocks_gating:  # swayed by what should not matter: untrusted, whatever people agree
        status, reasons = NOT_FIT, (*reasons, *(f"bias: {words}" for words in bias.findings or (bias.words,)))
    return JudgeValidation(
        status=status,
        judge=str(config),
        metric=chosen.campaign.metric,
        certificate=overall.pk if overall else None,
        guideline_version=measured.guideline_version if measured else None,
        more_failure_labels=cert.more_failure_labels if cert else None,
        reasons=reasons,
        slices=tuple(
            {"slice": name, "state": c.state, "reason": "; ".join(c.reasons), "certificate": slices[name].pk}
            for name, c in sorted(measured.slices.items())
        )
        if measured and slices is not None
        else (),
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
        outdated=bool(_outdated(chosen, found)),
    )


def _chosen(found: list[Measurement]) -> Measurement | None:
    counting = [m for m in found if m.counts]
    return max(counting, key=lambda m: (m.measured_at is not None, m.measured_at or datetime.min)) if counting else None


def _earlier_judge(config: JudgeConfig, metric: str) -> JudgeValidation | None:
    """A config nobody measured, whose judge (same name or model) was certified before under another config."""
    same = JudgeConfig.objects.exclude(pk=config.pk).filter(model=config.model)
    if config.name:
        same = same | JudgeConfig.objects.exclude(pk=config.pk).filter(name=config.name)
    earlier = (
        Certificate.objects.filter(judge_config__in=same, metric=metric, slice="")
        .select_related("judge_config")
        .first()
    )
    if earlier is None:
        return None
    old = earlier.judge_config
    changed = []
    if old.prompt_hash != config.prompt_hash:
        changed.append(f"the prompt changed ({old.prompt_hash[:6]} → {config.prompt_hash[:6]})")
    if (old.model, old.model_version) != (config.model, config.model_version):
        changed.append(f"the model changed ({earlier.model} → {config.model})")
    if not changed:
        changed.append("another setting of the judge changed (temperature, examples, claim splitting)")
    return JudgeValidation(
        status=UNVALIDATED,
        judge=str(config),
        metric=metric,
        config_hash=config.config_hash,
        why_not=f"certificate #{earlier.pk} ({earlier.state}) of {old} is stale for it: {', '.join(changed)}; "
        f"re-measure this judge on labelled items",
        stale=", ".join(changed),
    )


def judge_config_validation(config: JudgeConfig, metric: str = DEFAULT_METRIC) -> JudgeValidation | None:
    """The config's validation by people on ``metric`` (None when no campaign measured it and no earlier config of
    the same judge was certified)."""
    found = list(measurements(config, metric))
    if not found:
        return _earlier_judge(config, metric)
    chosen = _chosen(found)
    if chosen is None:
        most = max(found, key=lambda m: m.stats.n)
        return JudgeValidation(
            status=UNVALIDATED,
            judge=str(config),
            metric=metric,
            config_hash=config.config_hash,
            unit_word=unit_word(most.campaign),
            n=most.stats.n,
            failures=most.stats.failures,
            campaign=most.campaign.name,
            source=most.source,
            url=most.url,
            why_not=(
                f"its largest measurement ({most.source} on campaign {most.campaign.name}) has {most.stats.n} labelled "
                f"{unit_word(most.campaign)}, {most.stats.failures} of them {failure_words(most.campaign)}; a "
                f"validation needs at least {MIN_ITEMS}, {MIN_FAILURES} of them in the failure class"
            ),
        )
    return _validation(config, chosen, found)


def run_corrected_pass_rate(config: JudgeConfig, run: Run) -> CorrectedPassRate | None:
    """The run's judge pass rate corrected for the errors people found in the config's validation."""
    chosen = _chosen(list(measurements(config, DEFAULT_METRIC)))
    if chosen is None:
        return None
    if chosen.source == "judge report" and chosen.campaign.run_id == run.pk:
        # the campaign's own run: its labels were drawn from these rows, so the run's pass count is no source of error
        rate = corrected_pass_rate(chosen.campaign, chosen.pairs)
    else:
        verdicts = [candidate.judge_supported for candidate in population(run, chosen.campaign.unit, chosen.campaign)]
        if not verdicts:
            return None
        rate = corrected_pass_rate(chosen.campaign, chosen.pairs, run_passes=sum(verdicts), run_total=len(verdicts))
    if rate is None:
        return None
    rg = dict(rogan_gladen=rate.corrected, rogan_gladen_low=rate.low, rogan_gladen_high=rate.high)
    rg.update(campaign=chosen.campaign.name, labels=len(chosen.pairs))
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
        same_metric = [f for f in found if f.campaign.metric == m.campaign.metric]
        validation = _validation(config, m, same_metric, store=m.counts)
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

    def validation(self, config: JudgeConfig, metric: str = DEFAULT_METRIC) -> JudgeValidation | None:
        return judge_config_validation(config, metric)

    def corrected_pass_rate(self, config: JudgeConfig, run: Run) -> CorrectedPassRate | None:
        return run_corrected_pass_rate(config, run)

    def validations(self, config: JudgeConfig) -> list[JudgeValidation]:
        return judge_config_measurements(config)

    def run_labels(self, config: JudgeConfig, run: Run, metric: str) -> RunLabels | str:
        """People's labels on the run's rows for the gate's judge correction (see :mod:`.run_labels`)."""
        return run_labels(config, run, metric)

    def certificates(self, config: JudgeConfig) -> list[dict[str, Any]]:
        """The config's stored certificates (every metric it was measured on certified first), newest first."""
        for metric in sorted(set(Campaign.objects.filter(run__judge_config=config).values_list("metric", flat=True))):
            judge_config_validation(config, metric)
        current: set[tuple[str, int, str]] = set()
        out = []
        for cert in certificates_of(config):
            key = (cert.metric, cert.guideline_version, cert.slice)
            out.append(
                {
                    "id": cert.pk,
                    "metric": cert.metric,
                    "slice": cert.slice,
                    "guideline_version": cert.guideline_version,
                    "state": cert.state,
                    "superseded": key in current,
                    "more_failure_labels": cert.more_failure_labels,
                    "campaign": cert.campaign,
                    "created_at": cert.created_at.isoformat(),
                    "line": certificate_line(cert) + (" (superseded)" if key in current else ""),
                }
            )
            current.add(key)
        return out
