"""A judge against people on a stratified sample, weighted back to the population it was drawn from.

Labelling campaigns sample by stratum (question type x the judge's verdict) and over-sample the
judge's rare verdict so that the miss rate rests on enough items. Counting the sample as it is
then misstates the judge: with its "unsupported" verdicts over-sampled, the sample holds few of the
unsupported items the judge passed, and the raw miss rate comes out too low. Each stratum's
labelled items stand for the stratum's whole population (weight = population / labelled), so the
population's 2x2 table is the weighted sum of the strata's tables, and kappa, the miss rate and the
false-fail rate are read off it. Kappa's interval resamples each stratum's labels on their own
(a multinomial over the stratum's four cells, each of the judge verdicts it holds smoothed by
half an item: a stratum that shows no miss may still hold some, and the plain percentile bootstrap
of a rare class's kappa covered about 93.5 % instead of 95), which is how the sample was drawn. The two rates
get Wilson intervals at the design's effective sample size, ``R (1 - R) / v(R)`` with ``v`` the
linearised variance of the weighted ratio (see :mod:`._design`; the bootstrap of a rate that is 0
or 1 in the sample is stuck there: 0 of 16 would read "0-0 %"). Kish's effective size, used here
before, assumes the rate does not vary with the weights; under a design stratified by the judge's
verdict it varies completely, and Kish's interval covered a rare class's miss rate only about
80 % of the time (simulated in ``tests/engine/test_planning_simulation.py``). With equal weights
the sample counts as it is: the rates get the sample's own Wilson intervals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ._design import effective_size, smoothed, wilson_bounds
from ._interval import Interval
from ._validation import check_positive_int, check_probability
from .agreement import _kappa_from_tables
from .bootstrap import percentile_positions
from .proportions import z_score


@dataclass(frozen=True)
class StratifiedAgreement:
    """Population estimates of a judge against people, each an :class:`Interval` (NaN where undefined).

    Tables are ``[[people pass & judge pass, people pass & judge fail], [people fail & judge pass,
    people fail & judge fail]]``; "fail" is the failure class (unsupported).

    Parameters
    ----------
    kappa : Interval
        Cohen's kappa of the weighted table.
    miss_rate : Interval
        Share of the items people failed that the judge passed (1 - specificity, pass = positive).
    false_fail_rate : Interval
        Share of the items people passed that the judge failed (1 - sensitivity).
    people_fail_rate, judge_fail_rate : float
        The failure class's share by people and by the judge, weighted.
    agreement : float
        The weighted share of items where the judge and people agree.

    Examples
    --------
    >>> result = stratified_agreement([[[40, 2], [6, 2]]], [1.0], iterations=500)
    >>> round(result.miss_rate.estimate, 2), round(result.people_fail_rate, 2)
    (0.75, 0.16)
    """

    kappa: Interval
    miss_rate: Interval
    false_fail_rate: Interval
    people_fail_rate: float
    judge_fail_rate: float
    agreement: float


def _rates(tables: np.ndarray) -> dict[str, np.ndarray]:
    """Kappa, miss and false-fail rates, prevalences and agreement of weighted tables of shape (..., 2, 2)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa, observed, _ = _kappa_from_tables(tables)
        total = tables.sum(axis=(-2, -1))
        people_pass, people_fail = tables[..., 0, :].sum(axis=-1), tables[..., 1, :].sum(axis=-1)
        return {
            "kappa": kappa,
            "miss": np.where(people_fail > 0, tables[..., 1, 0] / people_fail, np.nan),
            "false_fail": np.where(people_pass > 0, tables[..., 0, 1] / people_pass, np.nan),
            "people_fail": people_fail / total,
            "judge_fail": tables[..., :, 1].sum(axis=-1) / total,
            "agreement": observed,
        }


def stratified_agreement(
    tables: Sequence[Sequence[Sequence[int]]] | np.ndarray,
    weights: Sequence[float] | np.ndarray,
    *,
    iterations: int = 10_000,
    seed: int = 7,
    confidence: float = 0.95,
) -> StratifiedAgreement:
    """Return the judge's population kappa, miss rate and false-fail rate from per-stratum 2x2 tables.

    Parameters
    ----------
    tables : array-like of int, shape (n_strata, 2, 2)
        Per stratum, the labelled items' counts: rows are people's labels (pass, fail), columns
        the judge's verdicts (pass, fail).
    weights : array-like of float, shape (n_strata,)
        Per stratum, how many population items each labelled item stands for (population size /
        labelled items). Equal weights give the unweighted (sample) estimates.
    iterations : int, default 10_000
        Bootstrap resamples (each stratum's labels resampled on their own).
    seed : int, default 7
        Seed of the random generator.
    confidence : float, default 0.95
        Level of the two-sided percentile intervals.

    Returns
    -------
    StratifiedAgreement

    References
    ----------
    Cochran, "Sampling Techniques", 1977 (stratified estimation of a ratio and its linearised
    variance); Korn and Graubard, "Confidence intervals for proportions with small expected
    number of positive counts estimated from survey data", Survey Methodology 1998 (an interval
    for a proportion at the design's effective sample size); Wilson, JASA 1927; Efron and Tibshirani, "An
    Introduction to the Bootstrap", 1993 (percentile interval).

    Examples
    --------
    The judge's rare "fail" verdict sampled at 10 times the rate of its "pass" verdict: the sample
    holds 4 missed failures of 20, the population 40 of 56.

    >>> result = stratified_agreement([[[90, 0], [4, 0]], [[0, 4], [0, 16]]], [10.0, 1.0], iterations=2000)
    >>> round(result.miss_rate.estimate, 3), round(4 / 20, 3)
    (0.714, 0.2)
    """
    iterations = check_positive_int(iterations, "iterations")
    confidence = check_probability(confidence, "confidence")
    counts = np.asarray(tables, dtype=np.int64)
    w = np.asarray(weights, dtype=np.float64)
    if counts.ndim != 3 or counts.shape[1:] != (2, 2) or np.any(counts < 0):
        raise ValueError(f"tables must have shape (n_strata, 2, 2) with counts of 0 or more, got shape {counts.shape}")
    if w.shape != (counts.shape[0],) or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"weights must be one positive number per stratum ({counts.shape[0]}), got {w.tolist()}")
    n = counts.reshape(len(counts), 4).sum(axis=1)
    if not n.sum():
        raise ValueError("tables are empty: there are no labelled items")
    point = _rates(np.einsum("s,sij->ij", w, counts.astype(np.float64)))
    rng = np.random.default_rng(seed)
    resampled = np.zeros((iterations, 2, 2))
    for stratum in np.flatnonzero(n):
        cells = smoothed(counts[stratum]).ravel()
        draws = rng.multinomial(n[stratum], cells / cells.sum(), size=iterations)
        resampled += w[stratum] * draws.reshape(iterations, 2, 2)
    boot = _rates(resampled)

    z = z_score(confidence)

    equal_weights = bool(np.all(w == w[0]))

    def rate(name: str, row: int) -> Interval:
        """Wilson's interval for a weighted rate within one row of people's labels, at the design's effective n."""
        estimate = float(point[name])
        if math.isnan(estimate):
            return Interval(estimate, math.nan, math.nan)
        if equal_weights:
            n_eff = float(counts[:, row, :].sum())
        else:
            n_eff = float(effective_size(counts, w, row=row))
        low, high = wilson_bounds(estimate, n_eff, z)
        return Interval(estimate, float(low), float(high))

    def interval(name: str) -> Interval:
        values = np.sort(boot[name][np.isfinite(boot[name])])
        estimate = float(point[name])
        if values.size == 0 or math.isnan(estimate):
            return Interval(estimate, math.nan, math.nan)
        low, high = percentile_positions(values.size, confidence=confidence)
        # the smoothed resamples can sit off the estimate (a stratum that shows no error is resampled with
        # some): widened to hold it, as Wilson's bounds are, an interval never excludes its own estimate
        return Interval(estimate, min(estimate, float(values[low])), max(estimate, float(values[high])))

    return StratifiedAgreement(
        kappa=interval("kappa"),
        miss_rate=rate("miss", 1),
        false_fail_rate=rate("false_fail", 0),
        people_fail_rate=float(point["people_fail"]),
        judge_fail_rate=float(point["judge_fail"]),
        agreement=float(point["agreement"]),
    )
