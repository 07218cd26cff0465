"""Plan before you measure: how many labels a campaign needs, and how many paired questions a comparison needs.

**Labels.** A campaign samples a run's items stratified by (question type x judge verdict), gives
each judge verdict at least a quarter of the sample, and the judge report weights the labels back
to the run (:func:`~evalcore.engine.stratified_agreement`). :func:`label_plan` predicts, for a
number of items and assumed judge error rates, the 95 % half-width the report will show for the
judge's miss rate, false-fail rate, kappa and the Rogan-Gladen corrected pass rate, for all the
items and for the held-out split alone; :func:`labels_needed` searches the number of items that
meets a target half-width. The predictions use the report's own estimators: the design's
linearised variance for the two rates (Wilson at the effective sample size), the delta method for
kappa and the corrected rate (whose bootstrap intervals they approximate), the sample counted as
it is when its strata weigh themselves.

**Questions.** The gate passes when the interval's lower end is at least minus the margin, and
blocks when the whole interval is below zero. With a true change ``d`` and per-question
differences of standard deviation ``sd``, the lower end clears ``-margin`` with probability
``power`` once ``n = ((z + z_power) * sd / (d + margin)) ** 2``; when ``d <= -margin`` the gate can
only block, which takes ``n = ((z + z_power) * sd / d) ** 2``. :func:`questions_needed` computes it
from assumptions, :func:`settle_review` from the per-question scores of a comparison that ended
in review. For a pass/fail metric ``sd**2 = discordance - d**2``, with ``discordance`` the share of
questions whose outcome flips.

Every assumption is stated in the result, and the conventions (docs/conventions.md) say when these
predictions are too optimistic.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable
from dataclasses import dataclass, field

import numpy as np

from ._design import (
    SELF_WEIGHTING,
    Design,
    Strata,
    check_strata,
    corrected_sd,
    effective_size,
    kappa_sd,
    ratio_and_variance,
    sample_design,
    stratum_tables,
    wilson_half_width,
)
from ._questions import QuestionsPlan, power_of, questions_needed, settle_review
from ._validation import check_positive_int, check_probability
from .agreement import _kappa_from_tables
from .proportions import z_score

#: Population assumed when none is given: large enough that sampling never exhausts a stratum.
_LARGE_POPULATION = 10**9
_MAX_SEARCH = 10**7
#: Statistics a label plan predicts, and what :func:`labels_needed` can target.
LABEL_STATISTICS = ("miss_rate", "false_fail_rate", "kappa", "corrected_pass_rate")
#: How a plan spreads its sample over the strata (see :func:`label_plan`).
ALLOCATIONS = ("verdict floor", "neyman")


def _pct(value: float, digits: int = 0) -> str:
    """A share in points, as the product writes it ("30 %")."""
    return f"{100 * value:.{digits}f} %"


def _share(value: object, name: str) -> float:
    return check_probability(value, name, open_interval=False)


@dataclass(frozen=True, kw_only=True)
class JudgeAssumptions:
    """What a plan assumes about the judge and the run: the truth it will be measured against.

    Parameters
    ----------
    failure_share : float
        The share of items people would fail (the failure class, unsupported).
    miss_rate : float
        The share of those the judge passes.
    false_fail_rate : float
        The share of the items people would pass that the judge fails.

    Examples
    --------
    >>> a = JudgeAssumptions(failure_share=0.25, miss_rate=0.44, false_fail_rate=0.053)
    >>> round(a.judge_fail_share, 3), round(a.kappa, 2)
    (0.18, 0.56)
    """

    failure_share: float
    miss_rate: float
    false_fail_rate: float

    @property
    def judge_fail_share(self) -> float:
        """The share of items the judge fails: ``failure_share * (1 - miss) + (1 - failure_share) * false_fail``."""
        return self.failure_share * (1 - self.miss_rate) + (1 - self.failure_share) * self.false_fail_rate

    @property
    def kappa(self) -> float:
        """Cohen's kappa between people and the judge on the whole run, under these assumptions."""
        return float(_kappa_from_tables(self.table())[0])

    def table(self) -> np.ndarray:
        """The run's 2x2 table as shares: rows people pass / fail, columns the judge's pass / fail."""
        pi, m, f = self.failure_share, self.miss_rate, self.false_fail_rate
        return np.array([[(1 - pi) * (1 - f), (1 - pi) * f], [pi * m, pi * (1 - m)]])


def judge_assumptions(
    *,
    miss_rate: float = 0.25,
    false_fail_rate: float = 0.05,
    failure_share: float | None = None,
    judge_fail_share: float | None = None,
) -> JudgeAssumptions:
    """Return the assumptions of a plan, from the share people would fail or the share the judge fails.

    A run's judge verdicts give the judge's fail share ``q``; with the assumed error rates, the share
    people would fail is ``(q - false_fail) / (1 - miss - false_fail)``.

    Parameters
    ----------
    miss_rate : float, default 0.25
        The judge's assumed miss rate on the failure class.
    false_fail_rate : float, default 0.05
        The judge's assumed false-fail rate on the items people pass.
    failure_share : float, optional
        The share of items people would fail (typed in).
    judge_fail_share : float, optional
        The share of items the judge fails (read off a run). Give exactly one of the two.

    Returns
    -------
    JudgeAssumptions

    Examples
    --------
    >>> a = judge_assumptions(judge_fail_share=0.18, miss_rate=0.44, false_fail_rate=0.053)
    >>> round(a.failure_share, 3)
    0.25
    """
    miss_rate = _share(miss_rate, "miss_rate")
    false_fail_rate = _share(false_fail_rate, "false_fail_rate")
    if miss_rate + false_fail_rate >= 1:
        raise ValueError(
            f"a judge that misses {_pct(miss_rate)} and false-fails {_pct(false_fail_rate)} carries no information "
            "(the two must add up to less than 1)"
        )
    if (failure_share is None) == (judge_fail_share is None):
        raise ValueError("give exactly one of failure_share (typed in) or judge_fail_share (from a run's verdicts)")
    if judge_fail_share is not None:
        q = _share(judge_fail_share, "judge_fail_share")
        if q in (0.0, 1.0):
            raise ValueError(
                f"the judge {'fails none' if q == 0 else 'fails every one'} of the items: with one verdict only there "
                "is nothing to stratify by and its error rates cannot be planned; type in a failure share instead"
            )
        low, high = false_fail_rate, 1 - miss_rate
        if not low < q < high:
            raise ValueError(
                f"the judge fails {_pct(q, 1)} of the items, which the assumed error rates cannot produce (it would fail "
                f"between {_pct(low, 1)} and {_pct(high, 1)}): lower the assumed false-fail rate or miss rate"
            )
        failure_share = (q - false_fail_rate) / (1 - miss_rate - false_fail_rate)
    failure_share = check_probability(failure_share, "failure_share")
    return JudgeAssumptions(failure_share=failure_share, miss_rate=miss_rate, false_fail_rate=false_fail_rate)


@dataclass(frozen=True, kw_only=True)
class Precision:
    """Predicted 95 % half-widths (plus or minus, in the statistic's units) of a judge report on some items.

    Parameters
    ----------
    items : int
        Labelled items the report rests on.
    miss_rate, false_fail_rate, kappa, corrected_pass_rate : float
        The predicted half-widths (NaN when the statistic would be undefined).
    expected_failures : float
        Items people fail, expected among them.
    expected_misses : float
        Of those, the items the judge passes.

    Examples
    --------
    >>> p = label_plan(240, assumptions=judge_assumptions(failure_share=0.25, miss_rate=0.44)).report
    >>> p.items, round(p.miss_rate, 2), round(p.kappa, 2)
    (240, 0.09, 0.11)
    """

    items: int
    miss_rate: float
    false_fail_rate: float
    kappa: float
    corrected_pass_rate: float
    expected_failures: float
    expected_misses: float

    def half_width(self, statistic: str) -> float:
        """The predicted half-width of one of :data:`LABEL_STATISTICS`."""
        if statistic not in LABEL_STATISTICS:
            raise ValueError(f"statistic must be one of {LABEL_STATISTICS}, got {statistic!r}")
        return float(getattr(self, statistic))


@dataclass(frozen=True, kw_only=True)
class LabelPlan:
    """What a campaign of some size will measure: predicted half-widths for the report and the held-out split.

    Parameters
    ----------
    items : int
        Items sampled (never more than the run holds).
    labels : int
        Labels to collect: items times overlap.
    overlap : int
        Different annotators per item.
    report : Precision
        The judge report on every item.
    heldout : Precision or None
        A re-measurement on the held-out split alone (None when nothing is held out).
    judge_pass_items, judge_fail_items : int
        The sample by the judge's verdict.
    weighted : bool
        Whether the report weights the sample back to the run (False: it weighs itself).
    assumptions : JudgeAssumptions
        The truth assumed.
    population : int or None
        Items in the run (None: a large run assumed).
    confidence : float
        Level of the intervals.
    notes : tuple of str
        Where the prediction is too optimistic or the run too small, in words.

    Examples
    --------
    >>> plan = label_plan(240, assumptions=judge_assumptions(failure_share=0.25), overlap=2)
    >>> plan.labels, plan.judge_fail_items, plan.heldout.items
    (480, 60, 72)
    """

    items: int
    labels: int
    overlap: int
    report: Precision
    heldout: Precision | None
    judge_pass_items: int
    judge_fail_items: int
    weighted: bool
    assumptions: JudgeAssumptions
    population: int | None
    confidence: float
    notes: tuple[str, ...] = field(default_factory=tuple)


def _population_strata(assumptions: JudgeAssumptions, population: int | None) -> dict[tuple[Hashable, bool], int]:
    total = _LARGE_POPULATION if population is None else population
    fail = int(round(total * assumptions.judge_fail_share))
    return {("all", True): total - fail, ("all", False): fail}


def _fail_given_verdict(assumptions: JudgeAssumptions, judge_pass: np.ndarray) -> np.ndarray:
    """The share of a stratum's items people fail, by the stratum's judge verdict."""
    q = assumptions.judge_fail_share
    pi, m = assumptions.failure_share, assumptions.miss_rate
    return np.where(judge_pass, pi * m / (1 - q), pi * (1 - m) / q)


def _precision(design: Design, assumptions: JudgeAssumptions, z: float, weighted: bool) -> Precision:
    fail = _fail_given_verdict(assumptions, design.judge_pass)
    n = design.sampled
    cells = stratum_tables(design, n * fail)
    if weighted:
        # the report's own effective size: on the expected tables, smoothed as it smooths the observed ones
        half = [
            float(
                wilson_half_width(
                    ratio_and_variance(cells, design.weights(), row=row)[0],
                    effective_size(cells, design.weights(), row=row),
                    z,
                )
            )
            for row in (1, 0)
        ]
    else:  # the sample counted as it is: Wilson at the expected count of the rate's row
        pooled = cells.sum(axis=0)
        half = [
            # a row nobody is expected in (a failure share of 0) has no rate to bound: NaN, without a warning
            float(wilson_half_width(pooled[row, col] / pooled[row].sum(), pooled[row].sum(), z))
            if pooled[row].sum() > 0
            else math.nan
            for row, col in ((1, 0), (0, 1))
        ]
    both_verdicts = bool(design.judge_pass.any() and not design.judge_pass.all())
    return Precision(
        items=int(n.sum()),
        miss_rate=half[0],
        false_fail_rate=half[1],
        # a sample of one judge verdict has no kappa worth the name and no specificity to correct with
        kappa=z * kappa_sd(design, fail, weighted) if both_verdicts else math.nan,
        corrected_pass_rate=z * corrected_sd(design, fail) if both_verdicts else math.nan,
        expected_failures=float(cells[..., 1, :].sum()),
        expected_misses=float(cells[..., 1, 0].sum()),
    )


def _notes(report: Precision, items: int, available: int | None) -> tuple[str, ...]:
    notes = []
    if available is not None and items >= available:
        notes.append(f"the run has {available:,} items: this takes every one")
    if report.expected_failures < 30:
        notes.append(
            f"only about {report.expected_failures:.0f} items people fail are expected in the sample: the miss rate "
            "rests on few items"
        )
    if report.expected_misses < 5:
        notes.append(
            f"fewer than 5 missed failures ({report.expected_misses:.1f}) are expected in the sample: the bootstrap "
            "intervals of kappa and the corrected pass rate then cover less than 95 %, so these half-widths are "
            "optimistic"
        )
    return tuple(notes)


def label_plan(
    size: int,
    *,
    assumptions: JudgeAssumptions,
    strata: Strata | None = None,
    population: int | None = None,
    heldout_fraction: float = 0.3,
    overlap: int = 1,
    min_class_share: float = 0.25,
    allocation: str = "verdict floor",
    confidence: float = 0.95,
) -> LabelPlan:
    """Return the half-widths a campaign of ``size`` items will show, for the report and the held-out split.

    Parameters
    ----------
    size : int
        Items to sample (at or above the run's items: every item).
    assumptions : JudgeAssumptions
        The judge's error rates and the failure share assumed (:func:`judge_assumptions`).
    strata : mapping (slice, judge passed) -> int, optional
        The run's items by stratum, as campaigns sample them; by default two strata (the judge's
        verdicts) in the assumed shares of ``population`` items.
    population : int, optional
        Items in the run when ``strata`` is not given (default: a large run).
    heldout_fraction : float, default 0.3
        Share of each stratum's sample kept aside for re-measurement.
    overlap : int, default 1
        Different annotators per item: the labels to collect are ``items * overlap`` (the
        statistics rest on each item's final label, so overlap costs labels, not precision).
    min_class_share : float, default 0.25
        Each judge verdict's least share of the sample (as campaigns sample).
    allocation : {"verdict floor", "neyman"}, default "verdict floor"
        How the sample is spread over the strata: each judge verdict's floor of ``min_class_share``
        (what the judge's miss rate needs), or Neyman's rule on the assumed disagreement with the
        judge in each stratum (what the corrected pass rate needs: labels where the judge is least
        reliable, see :mod:`.allocation`).
    confidence : float, default 0.95
        Level of the intervals.

    Returns
    -------
    LabelPlan

    References
    ----------
    Cochran, "Sampling Techniques", 1977 (stratified ratio estimation); Fleiss, Cohen and Everitt,
    "Large sample standard errors of kappa and weighted kappa", 1969 (the delta method for kappa);
    Rogan and Gladen, 1978.

    Examples
    --------
    The spec's judge (misses 44 % of unsupported answers, a quarter of which are unsupported):

    >>> a = judge_assumptions(failure_share=0.25, miss_rate=0.44, false_fail_rate=0.053)
    >>> plan = label_plan(200, assumptions=a)
    >>> round(plan.report.miss_rate, 2), round(plan.report.kappa, 2), plan.weighted
    (0.1, 0.12, True)
    """
    size = check_positive_int(size, "size")
    confidence = check_probability(confidence, "confidence")
    heldout_fraction = _share(heldout_fraction, "heldout_fraction")
    overlap = check_positive_int(overlap, "overlap")
    if not isinstance(assumptions, JudgeAssumptions):
        raise TypeError("assumptions must be a JudgeAssumptions (see judge_assumptions)")
    if strata is not None:
        population_strata = check_strata(strata)
        run_total: int | None = sum(population_strata.values())
    else:
        if population is not None:
            population = check_positive_int(population, "population")
        population_strata = _population_strata(assumptions, population)
        run_total = population
    if allocation not in ALLOCATIONS:
        raise ValueError(f"allocation must be one of {ALLOCATIONS}, got {allocation!r}")
    spread = None
    if allocation == "neyman":
        keys = list(population_strata)
        fail = _fail_given_verdict(assumptions, np.array([k[1] for k in keys], dtype=bool))
        spread = {k: float(np.sqrt(d * (1 - d))) for k, d in zip(keys, fail)}
    design = sample_design(size, population_strata, run_total, min_class_share, spread)
    weighted = not design.self_weighting()
    z = z_score(confidence)
    report = _precision(design, assumptions, z, weighted)
    held = design.scaled(heldout_fraction)
    heldout = _precision(held, assumptions, z, not held.self_weighting()) if held.sampled.sum() >= 2 else None
    return LabelPlan(
        items=report.items,
        labels=report.items * overlap,
        overlap=overlap,
        report=report,
        heldout=heldout,
        judge_pass_items=int(design.sampled[design.judge_pass].sum()),
        judge_fail_items=int(design.sampled[~design.judge_pass].sum()),
        weighted=weighted,
        assumptions=assumptions,
        population=run_total,
        confidence=confidence,
        notes=_notes(report, report.items, run_total),
    )


@dataclass(frozen=True, kw_only=True)
class LabelsNeeded:
    """The items a target half-width needs, or the best the run allows.

    Parameters
    ----------
    statistic : str
        One of :data:`LABEL_STATISTICS`.
    target : float
        The half-width wanted (0.05 is plus or minus 5 points on a rate).
    items : int or None
        Items needed (None: the run has too few).
    labels : int or None
        Labels to collect for them (items times overlap).
    best : float
        The half-width with ``items`` (or, when unreachable, with every item of the run).
    available : int or None
        Items in the run.
    split : str
        ``"report"`` (every item) or ``"heldout"`` (the held-out split alone).

    Examples
    --------
    >>> a = judge_assumptions(failure_share=0.25, miss_rate=0.44, false_fail_rate=0.053)
    >>> needed = labels_needed(0.05, assumptions=a)
    >>> needed.items, round(needed.best, 3)
    (896, 0.05)
    """

    statistic: str
    target: float
    items: int | None
    labels: int | None
    best: float
    available: int | None
    split: str


def labels_needed(
    target: float,
    *,
    statistic: str = "miss_rate",
    split: str = "report",
    assumptions: JudgeAssumptions,
    strata: Strata | None = None,
    population: int | None = None,
    heldout_fraction: float = 0.3,
    overlap: int = 1,
    min_class_share: float = 0.25,
    allocation: str = "verdict floor",
    confidence: float = 0.95,
) -> LabelsNeeded:
    """Return the fewest items whose predicted half-width of ``statistic`` is at most ``target``.

    Parameters
    ----------
    target : float
        The half-width wanted, in the statistic's units (0.05: plus or minus 5 points).
    statistic : str, default "miss_rate"
        One of :data:`LABEL_STATISTICS`.
    split : {"report", "heldout"}, default "report"
        Plan the report on every item, or a re-measurement on the held-out split alone.
    assumptions, strata, population, heldout_fraction, overlap, min_class_share, allocation, confidence
        As in :func:`label_plan`.

    Returns
    -------
    LabelsNeeded
        ``items`` is None when even every item of the run misses the target.

    Examples
    --------
    >>> a = judge_assumptions(failure_share=0.05, miss_rate=0.2, false_fail_rate=0.02)
    >>> labels_needed(0.1, assumptions=a).items
    1178
    """
    if statistic not in LABEL_STATISTICS:
        raise ValueError(f"statistic must be one of {LABEL_STATISTICS}, got {statistic!r}")
    if split not in ("report", "heldout"):
        raise ValueError(f"split must be 'report' or 'heldout', got {split!r}")
    if isinstance(target, bool) or not isinstance(target, numbers.Real) or not 0 < target < 2:
        raise ValueError(f"target must be a half-width above 0 (0.05 is plus or minus 5 points), got {target!r}")
    options = dict(
        assumptions=assumptions,
        strata=strata,
        population=population,
        heldout_fraction=heldout_fraction,
        overlap=overlap,
        min_class_share=min_class_share,
        allocation=allocation,
        confidence=confidence,
    )

    def width(n: int) -> float:
        plan = label_plan(n, **options)  # type: ignore[arg-type]
        precision = plan.report if split == "report" else plan.heldout
        value = precision.half_width(statistic) if precision is not None else math.nan
        return math.inf if math.isnan(value) else value

    available = sum(check_strata(strata).values()) if strata is not None else population
    high = available if available is not None else _MAX_SEARCH
    best = width(high)
    if best > target:
        return LabelsNeeded(
            statistic=statistic, target=target, items=None, labels=None, best=best, available=available, split=split
        )
    low = 2
    while low < high:  # the half-width shrinks as the sample grows
        middle = (low + high) // 2
        if width(middle) <= target:
            high = middle
        else:
            low = middle + 1
    return LabelsNeeded(
        statistic=statistic,
        target=target,
        items=high,
        labels=high * overlap,
        best=width(high),
        available=available,
        split=split,
    )


__all__ = [
    "ALLOCATIONS",
    "LABEL_STATISTICS",
    "SELF_WEIGHTING",
    "JudgeAssumptions",
    "LabelPlan",
    "LabelsNeeded",
    "Precision",
    "QuestionsPlan",
    "judge_assumptions",
    "label_plan",
    "labels_needed",
    "power_of",
    "questions_needed",
    "settle_review",
]
