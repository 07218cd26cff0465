"""The statistics of a judge against people's final labels, shared by the judge report and the re-measurement.

People's final label (majority or adjudicated) and the judge's verdict on the same items make
:class:`Pair`\\ s; :func:`core_stats` turns pairs into agreement, kappa with a bootstrap interval,
the confusion table, each class's prevalence by people and by the judge, and the miss rate on the
failure class (unsupported) with its interval and in words. :func:`corrected_pass_rate` corrects
the run's judge pass rate for the judge's errors (Rogan-Gladen, weighted by the sampling strata).
Numbers that are undefined (an empty class, a constant column) are None, never NaN.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from evalcore.engine import binary_agreement, prediction_powered_mean, proportion_interval, stratified_agreement
from evalcore.engine.judge import Stratum, kappa_bootstrap
from evalcore.engine.judge import corrected_pass_rate as engine_corrected_pass_rate
from evalcore.engine.planning import SELF_WEIGHTING  # strata weights within this ratio: the sample counts as it is
from evalcore.services.judge_rates import labels_alone_half_width
from evalcore.services.summaries import slice_name

from ..models import Campaign, Item
from ..results import Result
from ..selectors import final_labels
from .campaigns import population, stratum_label

ITERATIONS = 10_000
SUPPORTED, UNSUPPORTED = 1, 0


def finite(value: float | None) -> float | None:
    return None if value is None or (isinstance(value, float) and not math.isfinite(value)) else value


def pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f} %"


def unit_word(campaign: Campaign) -> str:
    return "claims" if campaign.unit == Campaign.Unit.CLAIM else "answers"


def fail_phrases(campaign: Campaign) -> dict[str, Any]:
    """The failure class in the campaign's words, for :func:`core_stats`' sentences: what people did to an item of
    it (``failed``: ("found", "unsupported"), ("scored", "1–2")) and what the judge did (``flags``)."""
    if campaign.ordinal:
        points = f"{campaign.scale_min}–{campaign.fail_at:g}"
        return {"failed": ("scored", points), "flags": f"scores {{rate}} at {points}"}
    word = campaign.fail_word.lower()
    return {"failed": ("found", word), "flags": f"flags {{rate}} as {word}"}


@dataclass(frozen=True)
class Pair:
    item_id: int
    row_id: int
    claim_index: int | None
    split: str
    slice: str
    stratum: str
    human: int
    judge: int


def labelled_pairs(
    campaign: Campaign, verdicts: dict[int, bool], *, split: str | None = None
) -> tuple[list[Pair], dict[str, int]]:
    """Items with a final human label and a judge verdict, and how many items each final-label status holds."""
    finals = final_labels(campaign)
    statuses: dict[str, int] = defaultdict(int)
    items = Item.objects.filter(campaign=campaign).values_list(
        "pk", "row_id", "claim_index", "split", "row__question__qtype", "stratum"
    )
    if split:
        items = items.filter(split=split)
    pairs = []
    for pk, row_id, claim_index, item_split, qtype, stratum in items:
        final = finals[pk]
        statuses[final.status] += 1
        if final.value is None or pk not in verdicts:
            continue
        pairs.append(
            Pair(
                pk,
                row_id,
                claim_index,
                item_split,
                slice_name(qtype),  # "(no type)" without one: the name the gate's frame gives that slice
                stratum,
                SUPPORTED if final.value == "supported" else UNSUPPORTED,
                SUPPORTED if verdicts[pk] else UNSUPPORTED,
            )
        )
    return pairs, dict(statuses)


def rollup_to_answers(pairs: Sequence[Pair]) -> list[Pair]:
    """An answer is unsupported if any of its labelled claims is (by people; by the judge)."""
    by_row: dict[int, list[Pair]] = defaultdict(list)
    for p in pairs:
        by_row[p.row_id].append(p)
    out = []
    for row_id, claims in by_row.items():
        first = claims[0]
        out.append(
            Pair(
                first.item_id,
                row_id,
                None,
                first.split,
                first.slice,
                first.stratum,
                SUPPORTED if all(c.human == SUPPORTED for c in claims) else UNSUPPORTED,
                SUPPORTED if all(c.judge == SUPPORTED for c in claims) else UNSUPPORTED,
            )
        )
    return out


@dataclass(frozen=True)
class ConfusionRow(Result):
    judge_supported: int
    judge_unsupported: int


@dataclass(frozen=True)
class Confusion(Result):
    """People's final labels in rows, the judge's verdicts in columns."""

    people_supported: ConfusionRow
    people_unsupported: ConfusionRow


@dataclass(frozen=True)
class CoreStats(Result):
    """The judge against people on a set of items; with no items (``n == 0``) every number is None."""

    n: int
    agreement: float | None = None
    kappa: float | None = None
    kappa_low: float | None = None
    kappa_high: float | None = None
    kappa_undefined: str | None = None
    confusion: Confusion | None = None
    people_unsupported_rate: float | None = None
    judge_unsupported_rate: float | None = None
    failures: int = 0
    caught: int = 0
    missed: int = 0
    miss_rate: float | None = None
    miss_low: float | None = None
    miss_high: float | None = None
    miss_sentence: str = ""
    prevalence_sentence: str = ""
    false_fails: int = 0
    false_fail_rate: float | None = None
    false_fail_low: float | None = None
    false_fail_high: float | None = None
    weighted: bool = (
        False  # rates weighted back to the run (the sample over-sampled some strata); counts are the sample's
    )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready; ``{"n": 0}`` alone when there are no items."""
        return {"n": 0} if self.n == 0 else super().as_dict()


def stratum_population(campaign: Campaign) -> dict[str, tuple[int, bool]]:
    """Per stratum of the campaign's run: how many items it holds, and the judge's verdict on them."""
    if campaign.parent_id is not None:
        # a fresh held-out sample's strata count only the items no earlier campaign took; the run holds them all
        counts = Counter(c.stratum for c in population(campaign.run, campaign.unit, campaign))
        return {stratum_label(key): (n, key[1]) for key, n in counts.items()}
    return {s["stratum"]: (s["available"], s["judge_supported"]) for s in campaign.strata}


def _stratum_weights(pairs: Sequence[Pair], strata: dict[str, tuple[int, bool]] | None) -> dict[str, float] | None:
    """How many run items each labelled item stands for, per stratum; None when the sample weighs itself.

    A sample whose strata were labelled at rates within a quarter of each other (rounding of the
    held-out split, labels still coming in) is counted as it is: weighting it would move the
    estimates less than their intervals are wide.
    """
    if not strata:
        return None
    labelled = Counter(p.stratum for p in pairs)
    if any(name not in strata for name in labelled):
        return None
    weights = {name: strata[name][0] / count for name, count in labelled.items()}
    low, high = min(weights.values()), max(weights.values())
    return weights if high > low * SELF_WEIGHTING else None


def core_stats(
    pairs: Sequence[Pair],
    *,
    unit_word: str,
    seed: int = 7,
    strata: dict[str, tuple[int, bool]] | None = None,
    failed: tuple[str, str] = ("found", "unsupported"),
    flags: str = "flags {rate} as unsupported",
) -> CoreStats:
    """Agreement, kappa (bootstrap interval), confusion, prevalences and the miss rate of the judge on these pairs.

    With ``strata`` (:func:`stratum_population`), a sample that took some strata at a higher rate
    than others (a campaign over-samples the judge's rare verdict) is weighted back to the run:
    the rates, kappa and their intervals are the run's (:func:`~evalcore.engine.stratified_agreement`),
    the counts stay the sample's. A sample that weighs itself gives the same estimates unweighted.
    ``failed`` and ``flags`` put the failure class in the campaign's words (:func:`fail_phrases`).
    """
    n = len(pairs)
    if n == 0:
        return CoreStats(n=0)
    weights = _stratum_weights(pairs, strata)
    if weights is not None:
        words = {"failed": failed, "flags": flags}
        return _weighted(core_stats(pairs, unit_word=unit_word, seed=seed, **words), pairs, weights, seed=seed, **words)
    report = binary_agreement(
        [p.human for p in pairs], [p.judge for p in pairs], failure_class=UNSUPPORTED, labels=(SUPPORTED, UNSUPPORTED)
    )
    table = [
        [report.counts[(SUPPORTED, SUPPORTED)], report.counts[(SUPPORTED, UNSUPPORTED)]],
        [report.counts[(UNSUPPORTED, SUPPORTED)], report.counts[(UNSUPPORTED, UNSUPPORTED)]],
    ]
    kappa = kappa_bootstrap(table, iterations=ITERATIONS, seed=seed)
    miss = report.miss_rate_interval
    people_passed = int(sum(table[0]))
    false_fail = proportion_interval(table[0][1], people_passed) if people_passed else None
    return CoreStats(
        n=n,
        agreement=report.agreement,
        kappa=finite(report.kappa),
        kappa_low=finite(kappa.low),
        kappa_high=finite(kappa.high),
        kappa_undefined=report.kappa_undefined_reason,
        confusion=Confusion(ConfusionRow(table[0][0], table[0][1]), ConfusionRow(table[1][0], table[1][1])),
        people_unsupported_rate=report.reference_rate[UNSUPPORTED],
        judge_unsupported_rate=report.predicted_rate[UNSUPPORTED],
        failures=report.failures,
        caught=report.caught,
        missed=report.missed,
        miss_rate=finite(report.miss_rate),
        miss_low=miss.low if miss else None,
        miss_high=miss.high if miss else None,
        miss_sentence=(
            f"the judge passed {report.missed} of the {report.failures} {unit_word} people {failed[0]} {failed[1]}"
            if report.failures
            else f"people {failed[0]} no {unit_word} {failed[1]}"
        ),
        prevalence_sentence=(
            f"the judge {flags.format(rate=pct(report.predicted_rate[UNSUPPORTED]))} against a true "
            f"{pct(report.reference_rate[UNSUPPORTED])}"
        ),
        false_fails=table[0][1],
        false_fail_rate=(table[0][1] / people_passed) if people_passed else None,
        false_fail_low=false_fail.low if false_fail else None,
        false_fail_high=false_fail.high if false_fail else None,
    )


def _weighted(
    sample: CoreStats,
    pairs: Sequence[Pair],
    weights: dict[str, float],
    *,
    seed: int,
    failed: tuple[str, str],
    flags: str,
) -> CoreStats:
    """The sample's statistics with every rate replaced by its estimate for the run."""
    names = sorted(weights)
    tables = [[[0, 0], [0, 0]] for _ in names]
    index = {name: i for i, name in enumerate(names)}
    for p in pairs:
        tables[index[p.stratum]][0 if p.human == SUPPORTED else 1][0 if p.judge == SUPPORTED else 1] += 1
    run = stratified_agreement(tables, [weights[name] for name in names], iterations=ITERATIONS, seed=seed)
    miss, false_fail = run.miss_rate, run.false_fail_rate
    return replace(
        sample,
        agreement=run.agreement,
        kappa=finite(run.kappa.estimate),
        kappa_low=finite(run.kappa.low),
        kappa_high=finite(run.kappa.high),
        people_unsupported_rate=run.people_fail_rate,
        judge_unsupported_rate=run.judge_fail_rate,
        miss_rate=finite(miss.estimate),
        miss_low=finite(miss.low),
        miss_high=finite(miss.high),
        false_fail_rate=finite(false_fail.estimate),
        false_fail_low=finite(false_fail.low),
        false_fail_high=finite(false_fail.high),
        miss_sentence=(
            f"{sample.miss_sentence} in the sample, which over-samples the judge's rarer verdict; weighted to the run's "
            f"mix, it passes {pct(miss.estimate)} of them"
            if sample.failures
            else sample.miss_sentence
        ),
        prevalence_sentence=(
            f"the judge {flags.format(rate=pct(run.judge_fail_rate) + ' of the run')} against a true "
            f"{pct(run.people_fail_rate)}"
        ),
        weighted=True,
    )


@dataclass(frozen=True)
class PredictionPoweredRate(Result):
    """A run's judge metric estimated from every judge-scored row plus people's labels (PPI++), beside the labels alone.

    ``labels_*`` are the labels alone as people would have them without the judge: the labels' (design-weighted)
    mean with the interval of a simple random sample of as many labels (:func:`labels_alone_half_width`).
    """

    estimate: float
    low: float
    high: float
    labels_estimate: float
    labels_low: float
    labels_high: float
    labels: int
    effective_labels: float | None
    worth: float | None
    words: str
    method: str
    note: str


@dataclass(frozen=True)
class CorrectedPassRate(Result):
    """The run's judge pass rate (``raw``) corrected for the judge's errors, with its interval.

    ``corrected``/``low``/``high`` are Rogan-Gladen's; ``ppi`` the prediction-powered estimate
    (None when the labels were not drawn from this run); ``used`` says which the tool uses.
    """

    raw: float
    corrected: float | None
    low: float | None
    high: float | None
    sensitivity: float | None
    specificity: float | None
    note: str
    run_items: int
    iterations: int
    ppi: PredictionPoweredRate | None = None
    used: str = "Rogan–Gladen"


def prediction_powered_rate(
    pairs: Sequence[Pair],
    judge_rows: Sequence[tuple[str, float]],
    *,
    scores: tuple[Sequence[float], Sequence[float]] | None = None,
    bounds: tuple[float, float] = (0.0, 1.0),
) -> PredictionPoweredRate | str:
    """The prediction-powered estimate of people's mean from labelled pairs and the judge's score on every row.

    ``judge_rows`` holds (stratum, judge score) for every row of the run the pairs were sampled from
    (for a pass/fail metric, 1 or 0); each stratum's labelled pairs must be a random sample of its rows.
    ``scores`` gives (people's, the judge's) score of each pair instead of their classes (a mean score on
    an ordinal scale, whose ``bounds`` clip the interval). Returns why not (a string) when it cannot be computed.
    """
    if not pairs or not judge_rows:
        return "no labelled items"
    people, judge = scores if scores is not None else ([p.human for p in pairs], [p.judge for p in pairs])
    try:
        r = prediction_powered_mean(
            labels=[float(v) for v in people],
            judge_labelled=[float(v) for v in judge],
            judge_rows=[score for _, score in judge_rows],
            labelled_strata=[p.stratum for p in pairs],
            row_strata=[name for name, _ in judge_rows],
            design="run",
        )
    except ValueError as error:
        return str(error)
    clip = lambda v: min(bounds[1], max(bounds[0], v))  # noqa: E731 - a pass rate's (or the scale's) bounds
    alone = labels_alone_half_width(r)
    return PredictionPoweredRate(
        estimate=r.estimate,
        low=clip(r.low),
        high=clip(r.high),
        labels_estimate=r.labels_only.estimate,
        labels_low=clip(r.labels_only.estimate - alone),
        labels_high=clip(r.labels_only.estimate + alone),
        labels=r.labels,
        effective_labels=finite(r.effective_labels),  # infinite when every row is labelled: JSON has no Infinity
        worth=finite(r.worth),
        words=r.in_words(),
        method=r.method,
        note=r.note or "",
    )


def rogan_gladen_strata(pairs: Sequence[Pair], population: dict[str, tuple[int, bool]]) -> list[Stratum]:
    """The labelled pairs as weighted strata of one judge verdict each, for the Rogan-Gladen correction.

    Each campaign stratum's labelled items stand for its run items (weight = population /
    labelled); within it, items are grouped by the judge's verdict (constant for the run's own
    judge, varying for another judge's verdicts on the same items).
    """
    labelled = Counter(p.stratum for p in pairs if p.stratum in population)
    groups: dict[tuple[str, int], list[Pair]] = defaultdict(list)
    for p in pairs:
        if p.stratum in labelled:
            groups[(p.stratum, p.judge)].append(p)
    return [
        Stratum(
            judge_pass=judge == SUPPORTED,
            labelled=len(members),
            human_pass=sum(p.human for p in members),
            weight=population[name][0] / labelled[name],
        )
        for (name, judge), members in sorted(groups.items())
    ]


def corrected_pass_rate(
    campaign: Campaign, pairs: Sequence[Pair], *, run_passes: int | None = None, run_total: int | None = None
) -> CorrectedPassRate | None:
    """A judge pass rate corrected for the judge's errors that these labelled pairs show; None when it cannot be.

    By default the rate is the campaign run's (its strata's judge verdicts); give ``run_passes`` and
    ``run_total`` to correct another run's pass rate scored by the same judge.
    """
    available = stratum_population(campaign)
    if not available:
        return None
    labels_from_run = run_total is None  # the campaign's own run: its judge pass count is no source of error
    if run_total is None:
        run_total = sum(a for a, _ in available.values())
        run_passes = sum(a for a, passed in available.values() if passed)
    strata = rogan_gladen_strata(pairs, available)
    if not strata or not run_total:
        return None
    try:
        rate = engine_corrected_pass_rate(
            run_passes=int(run_passes or 0),
            run_total=run_total,
            strata=strata,
            labels_from_run=labels_from_run,
            iterations=ITERATIONS,
            seed=campaign.seed,
        )
    except ValueError:
        return None
    ppi: PredictionPoweredRate | str | None = None
    if labels_from_run:
        rows = [(name, 1.0 if passed else 0.0) for name, (count, passed) in available.items() for _ in range(count)]
        ppi = prediction_powered_rate([p for p in pairs if p.stratum in available], rows)
    note = rate.note or ""
    if isinstance(ppi, str):
        note = f"{note} No prediction-powered estimate: {ppi}.".strip()
        ppi = None
    return CorrectedPassRate(
        raw=rate.raw,
        corrected=finite(rate.estimate),
        low=finite(rate.low),
        high=finite(rate.high),
        sensitivity=finite(rate.sensitivity),
        specificity=finite(rate.specificity),
        note=note,
        run_items=run_total,
        iterations=rate.iterations,
        ppi=ppi,
        used="prediction-powered" if ppi is not None else "Rogan–Gladen",
    )
