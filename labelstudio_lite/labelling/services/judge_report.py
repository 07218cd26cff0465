"""The judge error report: can this judge be trusted on this metric, and why (not).

Compares the final human labels (majority or adjudicated) with the judge's verdicts on the same
items (:mod:`.judge_stats`): overall and per slice, warnings where the numbers cannot carry
weight (too few items or failures, conflicts, labels in progress, leakage, a spent held-out split),
and the run's pass rate corrected for the judge's errors. One :class:`JudgeReport` feeds the page
(attribute access), the API and ``judge_report --json`` (:meth:`JudgeReport.as_dict`), so they
always agree.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalcore.engine import next_labels
from evalcore.engine._design import SMOOTHING
from evalcore.services.planning import about, plan_labels, spread
from evalcore.services.problems import UserFacingError

from ..models import Campaign, VerdictSet
from ..results import Result
from ..selectors import FinalStatus, judge_verdicts
from .campaigns import population, stratum_label
from .certificates import failure_words, measure, ordinal_kappa
from .exports import HeldoutSpent, Leakage, heldout_spent, leakage
from .judge_agreement import Agreement, agreement, human_scores
from .judge_stats import (
    CoreStats,
    CorrectedPassRate,
    Pair,
    PredictionPoweredRate,
    core_stats,
    corrected_pass_rate,
    fail_phrases,
    labelled_pairs,
    pct,
    prediction_powered_rate,
    rollup_to_answers,
    stratum_population,
    unit_word,
)
from .judge_validation import judge_scores, report_staleness  # judge_validation builds on this module's neighbours

MIN_ITEMS = 200
MIN_FAILURES = 30


@dataclass(frozen=True)
class JudgeInfo(Result):
    model: str | None
    model_version: str | None
    prompt_hash: str | None
    config_hash: str | None
    source: str


@dataclass(frozen=True)
class Thresholds(Result):
    kappa: float
    miss_rate: float


@dataclass(frozen=True)
class VerdictLine(Result):
    """Fit to gate (True / False), or None when there are not enough labels to say; and the line that says it."""

    fit: bool | None
    line: str


@dataclass(frozen=True)
class SliceStats(Result):
    slice: str
    stats: CoreStats

    def as_dict(self) -> dict[str, Any]:
        """The slice's name beside its statistics, in one flat dict (as the JSON report always gave it)."""
        return {"slice": self.slice, **self.stats.as_dict()}


@dataclass(frozen=True)
class JudgeReport(Result):
    campaign: str
    run: str
    eval_set: str
    unit: str
    unit_word: str
    question: str
    metric: str
    judge: JudgeInfo
    thresholds: Thresholds
    verdict: VerdictLine
    warnings: tuple[str, ...]
    statuses: dict[str, int]
    overall: CoreStats
    slices: tuple[SliceStats, ...]
    oversampled: bool
    leakage: Leakage
    heldout_spent: HeldoutSpent | None
    corrected: CorrectedPassRate | None
    more_labels: str | None = None  # the planner at the judge's measured error rates: what a target would take
    next_labels: str | None = None  # where more labels shrink the corrected pass rate's interval most
    answers: CoreStats | None = None  # claim campaigns: the same rolled up to whole answers
    label_set: dict[str, Any] | None = None  # the metric's label set: binary words, or the scale and threshold
    guideline_version: int = 1
    agreement: Agreement | None = None  # weighted kappa, the human ceiling, the chance baseline, the alt test
    certificate: dict[str, Any] | None = None  # trusted / untrusted / inconclusive on the interval bounds
    slice_certificates: dict[str, dict[str, Any]] | None = None  # per slice with enough labels
    failure: str = "unsupported answers"  # the failure class in the campaign's words
    stale: str = ""  # why the certificate no longer counts, in words ("" when it is current)
    mean_score: PredictionPoweredRate | None = None  # ordinal campaigns: people's mean score on the scale (PPI++)
    mean_score_note: str = ""  # why there is no mean-score estimate, on an ordinal campaign

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (the API and ``judge_report --json``); ``answers`` only for claim campaigns."""
        out = super().as_dict()
        if self.answers is None:
            del out["answers"]
        return out


def verdict_line(
    stats: CoreStats,
    *,
    fit_kappa: float,
    fit_miss_rate: float,
    failure: str = "unsupported answers",
    weighted_kappa: tuple[float | None, float | None, float | None] | None = None,
) -> VerdictLine:
    """The report's verdict; ``failure`` is the failure class in the campaign's words (:func:`.certificates.failure_words`).

    ``weighted_kappa`` (estimate, low, high) is an ordinal campaign's linear weighted kappa, judged instead of
    Cohen's kappa on pass / fail (as its certificate is)."""
    if stats.n == 0 or not stats.failures:
        why = "no labelled items yet" if stats.n == 0 else f"{stats.miss_sentence}, so the miss rate is unknown"
        return VerdictLine(None, f"VERDICT: not enough labels to judge: {why}")
    kappa, low, high = weighted_kappa or (stats.kappa, stats.kappa_low, stats.kappa_high)
    miss = stats.miss_rate
    fit = kappa is not None and kappa >= fit_kappa and miss <= fit_miss_rate
    sample = (
        f"{stats.missed} of {stats.failures} in the sample, weighted to the run"
        if stats.weighted
        else f"{stats.missed} of {stats.failures}"
    )
    reasons = (
        f"misses {pct(miss)} of {failure} ({sample}; 95 % CI "
        f"{pct(stats.miss_low)[:-2]}–{pct(stats.miss_high)}); {'weighted kappa (linear)' if weighted_kappa else 'kappa'} "
        + (f"{kappa:.2f} ({low:.2f}–{high:.2f})" if kappa is not None and low is not None else "undefined")
    )
    head = "fit to gate" if fit else "not fit to gate"
    return VerdictLine(fit, f"VERDICT: {head}: {reasons}")


def _warnings(
    stats: CoreStats,
    statuses: dict[str, int],
    leaked: Leakage,
    spent: HeldoutSpent | None,
    *,
    unit_word: str,
    failed: tuple[str, str] = ("found", "unsupported"),
) -> list[str]:
    """What makes the numbers weaker than they look, in the order the report shows it."""
    warnings = []
    total_items = sum(statuses.values())
    if stats.n < MIN_ITEMS:
        warnings.append(
            f"Only {stats.n} labelled {unit_word}: the spec asks for at least {MIN_ITEMS} per judge metric, so the intervals are wide."
        )
    if stats.n and stats.failures < MIN_FAILURES:
        warnings.append(
            f"Only {stats.failures} {unit_word} that people {failed[0]} {failed[1]}: the miss rate rests on few items "
            f"(95 % CI {pct(stats.miss_low)}–{pct(stats.miss_high)})."
        )
    conflicts = statuses.get(FinalStatus.CONFLICT, 0)
    if conflicts:
        many = " (many)" if total_items and conflicts / total_items > 0.05 else ""
        warnings.append(f"{conflicts} {unit_word} have conflicting labels{many} and are left out until adjudicated.")
    pending = statuses.get(FinalStatus.IN_PROGRESS, 0) + statuses.get(FinalStatus.UNLABELLED, 0)
    if pending:
        warnings.append(
            f"Labels still in progress: {pending} of {total_items} {unit_word} have no final label yet and are left out."
        )
    if leaked.leaked_items:
        versions = ", ".join(f"v{e.version}" for e in leaked.leaked_exports)
        warnings.append(
            f"Leakage: {leaked.leaked_items} held-out {unit_word} were exported ({versions}); a re-measurement on the held-out split is no longer clean."
        )
    if spent:
        warnings.append(spent.message)
    return warnings


def _oversampled(campaign: Campaign) -> bool:
    """Whether the strata were sampled at different rates (so the raw rates need the sampling weights)."""
    if not campaign.strata:
        return False
    first = campaign.strata[0]["sampled"] / campaign.strata[0]["available"]
    return any(abs(s["sampled"] / s["available"] - first) > 0.01 for s in campaign.strata if s["available"])


NEXT_LABELS = 50  # the batch the judge report advises on


def next_labels_advice(pairs: Sequence[Pair], strata: dict[str, tuple[int, bool]], *, unit_word: str) -> str | None:
    """Where the next labels shrink the corrected pass rate's interval most, in words (None when nothing is left).

    Each stratum's spread is that of people's disagreement with the judge among its labelled items,
    smoothed by half an item (a stratum that shows no disagreement yet may still hold some), and the
    next :data:`NEXT_LABELS` labels go one at a time where the stratified variance falls most
    (:func:`evalcore.engine.next_labels`). Strata nobody labelled yet are left to the campaign's sampler.
    """
    labelled = Counter(p.stratum for p in pairs if p.stratum in strata)
    if not labelled:
        return None
    disagree = Counter(p.stratum for p in pairs if p.stratum in strata and p.human != p.judge)
    spread = {}
    for name, n in labelled.items():
        d = (disagree[name] + SMOOTHING) / (n + 2 * SMOOTHING)
        spread[name] = math.sqrt(d * (1 - d))
    sizes = {name: strata[name][0] for name in labelled}
    advice = next_labels(sizes, labelled=dict(labelled), spread=spread, extra=NEXT_LABELS)
    if not advice.extra:
        return None
    names = {name: f"in {name}" for name in sizes}
    return advice.in_words(unit=unit_word, names=names)


def more_labels(stats: CoreStats, strata: dict[str, tuple[int, bool]], *, unit_word: str) -> str | None:
    """What more labels would buy, planned at the error rates these labels show (None where they show too little).

    "With these 180 labelled answers the miss rate is ± 11 points; for ± 5 points on the miss rate you
    need about 1,150 items (970 more)": the campaign's own design, the judge's measured miss and
    false-fail rates and the failure share people found, weighted to the run.
    """
    rates = (stats.miss_rate, stats.false_fail_rate, stats.people_unsupported_rate)
    if stats.n < 2 or not strata or any(r is None or not 0 < r < 1 for r in rates):
        return None
    try:
        planned = plan_labels(
            size=stats.n,
            miss_rate=stats.miss_rate,
            false_fail_rate=stats.false_fail_rate,
            strata={(name, passed): count for name, (count, passed) in strata.items()},
        )
    except UserFacingError:  # the measured rates and the run's verdicts disagree: nothing to plan from
        return None
    needed = planned.needed
    now = f"with these {stats.n:,} labelled {unit_word} the miss rate is {spread('miss_rate', planned.plan.report.miss_rate)}"
    if needed.items is None:
        return f"{now}; {planned.target_sentence}"
    if needed.items <= stats.n:
        return f"{now}: within the {spread('miss_rate', needed.target)} planned for"
    return f"{now}; {planned.target_sentence} ({about(needed.items - stats.n)} more), at the error rates measured here"


def mean_score(
    campaign: Campaign, pairs: Sequence[Pair], judge_scores: dict[int, float]
) -> PredictionPoweredRate | str:
    """People's mean score on an ordinal campaign's scale over its run: the judge's score on the scale of every
    answer, rectified by people's final scores on the labelled ones, stratum by stratum (PPI++ with the guard).

    Within a verdict stratum the judge's score still varies (a 4 and a 5 both pass), so here the judge is
    worth more than its strata. The campaign's own run only (a fresh held-out sample's strata are not the run's).
    """
    if campaign.parent_id is not None:
        return "a fresh held-out sample: its items are not a random sample of the run's strata"
    people = human_scores(campaign)
    scored = [p for p in pairs if p.item_id in people and p.item_id in judge_scores]
    rows = [
        (stratum_label(c.stratum), float(c.judge_score))
        for c in population(campaign.run, campaign.unit, campaign)
        if c.judge_score is not None
    ]
    found = prediction_powered_rate(
        scored,
        rows,
        scores=([people[p.item_id] for p in scored], [judge_scores[p.item_id] for p in scored]),
        bounds=(float(campaign.scale_min), float(campaign.scale_max)),
    )
    return found


def judge_report(campaign: Campaign, *, verdict_set: VerdictSet | None = None, anonymous: bool = False) -> JudgeReport:
    """Build the whole report: of the run's judge, or of an imported verdict set (a new judge config); ``anonymous``
    names annotators "annotator 1", "annotator 2" (a published report's names) instead of their usernames."""
    word, phrases, failure = unit_word(campaign), fail_phrases(campaign), failure_words(campaign)
    pairs, statuses = labelled_pairs(campaign, judge_verdicts(campaign, verdict_set))
    strata = stratum_population(campaign)
    stats = core_stats(pairs, unit_word=word, seed=campaign.seed, strata=strata, **phrases)
    judge = verdict_set.judge_config if verdict_set else campaign.run.judge_config
    scores = judge_scores(campaign) if verdict_set is None else {}
    measured = measure(campaign, pairs, stats, strata=strata, judge_scores=scores)
    score = mean_score(campaign, pairs, scores) if campaign.ordinal and verdict_set is None else None
    slices = tuple(
        SliceStats(
            name,
            core_stats(
                [p for p in pairs if p.slice == name], unit_word=word, seed=campaign.seed, strata=strata, **phrases
            ),
        )
        for name in sorted({p.slice for p in pairs})
    )
    leaked, spent = leakage(campaign), heldout_spent(campaign)
    return JudgeReport(
        campaign=campaign.name,
        run=campaign.run.name,
        eval_set=campaign.run.version.label,
        unit=campaign.unit,
        unit_word=word,
        question=campaign.judge_question,
        metric=campaign.metric,
        judge=JudgeInfo(
            model=judge.model if judge else None,
            model_version=judge.model_version if judge else None,
            prompt_hash=judge.prompt_hash if judge else None,
            config_hash=judge.config_hash if judge else None,
            source="imported verdicts" if verdict_set else "the run's judge",
        ),
        thresholds=Thresholds(kappa=campaign.fit_kappa, miss_rate=campaign.fit_miss_rate),
        verdict=verdict_line(
            stats,
            fit_kappa=campaign.fit_kappa,
            fit_miss_rate=campaign.fit_miss_rate,
            failure=failure,
            weighted_kappa=ordinal_kappa(campaign, pairs, scores),
        ),
        warnings=tuple(_warnings(stats, statuses, leaked, spent, unit_word=word, failed=phrases["failed"])),
        statuses=statuses,
        overall=stats,
        slices=slices,
        oversampled=_oversampled(campaign),
        leakage=leaked,
        heldout_spent=spent,
        corrected=corrected_pass_rate(campaign, pairs) if verdict_set is None else None,
        more_labels=more_labels(stats, strata, unit_word=word) if verdict_set is None else None,
        next_labels=next_labels_advice(pairs, strata, unit_word=word) if verdict_set is None else None,
        answers=(
            core_stats(rollup_to_answers(pairs), unit_word="answers", seed=campaign.seed, **phrases)
            if campaign.unit == Campaign.Unit.CLAIM
            else None
        ),
        label_set={
            "scale": campaign.scale,
            "pass": campaign.pass_word,
            "fail": campaign.fail_word,
            "scale_min": campaign.scale_min,
            "scale_max": campaign.scale_max,
            "fail_at": campaign.fail_at,
            "words": campaign.scale_words,
            "shows": campaign.shows,
        },
        guideline_version=measured.guideline_version,
        agreement=agreement(campaign, pairs, scores, anonymous=anonymous),
        certificate=measured.overall.as_dict() if measured.overall else None,
        slice_certificates={name: cert.as_dict() for name, cert in measured.slices.items()},
        failure=failure,
        stale=report_staleness(campaign, judge, rests_on=measured.guideline_version) if measured.overall else "",
        mean_score=score if isinstance(score, PredictionPoweredRate) else None,
        mean_score_note=f"No prediction-powered mean score: {score}." if isinstance(score, str) else "",
    )
