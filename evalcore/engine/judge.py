"""Judge validation statistics: kappa's bootstrap interval and the pass rate corrected for the judge.

A judge's raw pass rate is biased by its errors: a judge that passes 44 % of unsupported answers
overstates faithfulness. Knowing its sensitivity and specificity from people's labels, the
Rogan-Gladen estimator recovers the true rate, ``(p + Sp - 1) / (Se + Sp - 1)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ._design import SMOOTHING
from ._interval import Interval
from ._validation import check_positive_int, check_probability
from .agreement import _kappa_from_tables
from .bootstrap import percentile_positions


@dataclass(frozen=True, kw_only=True)
class KappaBootstrap(Interval):
    """Kappa of a 2x2 table with a percentile bootstrap interval over items.

    Parameters
    ----------
    estimate : float
        Kappa of the table; NaN when undefined.
    low, high : float
        Bounds of the percentile interval; NaN when no resample has a defined kappa.
    iterations : int
        Number of bootstrap resamples drawn.
    seed : int
        Seed of the random generator.
    confidence : float, default 0.95
        Level of the two-sided interval.

    Examples
    --------
    >>> kappa, low, high = kappa_bootstrap([[142, 8], [22, 28]], iterations=2000)
    >>> round(kappa, 3), round(low, 2), round(high, 2)
    (0.559, 0.42, 0.69)
    """

    iterations: int
    seed: int
    confidence: float = 0.95


def kappa_bootstrap(
    table: Sequence[Sequence[int]] | np.ndarray,
    *,
    iterations: int = 10_000,
    seed: int = 7,
    confidence: float = 0.95,
) -> KappaBootstrap:
    """Return kappa of a 2x2 count table with a percentile bootstrap interval over items.

    Resampling items with replacement only changes how many fall in each cell, so the cell counts
    are drawn from a multinomial: exact, and fast at any n. Resamples where kappa is undefined
    (every item in one row and column) are dropped.

    Parameters
    ----------
    table : array-like of int, shape (2, 2)
        Counts ``[[a, b], [c, d]]``: rows are the first rater's labels, columns the second's.
    iterations : int, default 10_000
        Number of bootstrap resamples.
    seed : int, default 7
        Seed of the random generator.
    confidence : float, default 0.95
        Level of the two-sided interval.

    Returns
    -------
    KappaBootstrap
        ``estimate`` is the table's kappa (NaN if undefined); ``low`` and ``high`` the percentile
        bounds over the resamples where kappa is defined (NaN if there is none).

    References
    ----------
    Efron and Tibshirani, "An Introduction to the Bootstrap", 1993 (percentile interval).

    Examples
    --------
    >>> est = kappa_bootstrap([[142, 8], [22, 28]])
    >>> round(est.estimate, 3), round(est.low, 2), round(est.high, 2)
    (0.559, 0.41, 0.69)
    """
    iterations = check_positive_int(iterations, "iterations")
    confidence = check_probability(confidence, "confidence")
    cells = np.asarray(table, dtype=np.int64)
    if cells.shape != (2, 2) or np.any(cells < 0):
        raise ValueError(f"table must be a 2x2 table of non-negative counts, got {cells.tolist()}")
    n = int(cells.sum())
    if n == 0:
        raise ValueError("table is empty: there are no labelled items")
    flat = cells.ravel()
    estimate = float(_kappa_from_tables(cells)[0])
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, flat / n, size=iterations)
    kappas = _kappa_from_tables(draws.reshape(iterations, 2, 2))[0]
    kappas = np.sort(kappas[np.isfinite(kappas)])
    if kappas.size == 0:
        return KappaBootstrap(estimate, math.nan, math.nan, iterations=iterations, seed=seed, confidence=confidence)
    low_pos, high_pos = percentile_positions(kappas.size, confidence=confidence)
    return KappaBootstrap(
        estimate,
        float(kappas[low_pos]),
        float(kappas[high_pos]),
        iterations=iterations,
        seed=seed,
        confidence=confidence,
    )


def rogan_gladen(observed: float, sensitivity: float, specificity: float) -> float:
    """Return the true prevalence behind an observed rate from an imperfect classifier.

    ``(observed + specificity - 1) / (sensitivity + specificity - 1)``, clipped to [0, 1]. NaN when
    ``sensitivity + specificity <= 1``: such a judge carries no information about the truth.

    Parameters
    ----------
    observed : float
        The rate the judge reports (say its pass rate), in [0, 1].
    sensitivity, specificity : float
        The judge's rates against people, in [0, 1] (pass = positive).

    Returns
    -------
    float
        The corrected rate, in [0, 1], or NaN.

    References
    ----------
    Rogan and Gladen, "Estimating prevalence from the results of a screening test", 1978.

    Examples
    --------
    >>> round(rogan_gladen(0.82, 0.95, 0.56), 3)
    0.745
    """
    for value, name in ((observed, "observed"), (sensitivity, "sensitivity"), (specificity, "specificity")):
        check_probability(value, name, open_interval=False)
    youden = sensitivity + specificity - 1.0
    if youden <= 0:
        return math.nan
    return min(1.0, max(0.0, (observed + specificity - 1.0) / youden))


@dataclass(frozen=True)
class Stratum:
    """One sampling stratum of labelled items, all with the same judge verdict.

    Parameters
    ----------
    judge_pass : bool
        The judge's verdict on every item of the stratum.
    labelled : int
        Items people labelled in it.
    human_pass : int
        Of those, the items people passed.
    weight : float
        Sampling weight: the stratum's population over ``labelled`` (no default: for a simple random
        sample of the whole run, every stratum's weight is run items over labelled items; a weight of
        1 would say the run holds only the labelled items). :meth:`of` computes it from the stratum's
        population.

    Examples
    --------
    >>> Stratum(judge_pass=False, labelled=50, human_pass=22, weight=3.6)
    Stratum(judge_pass=False, labelled=50, human_pass=22, weight=3.6)
    """

    judge_pass: bool
    labelled: int
    human_pass: int
    weight: float

    @classmethod
    def of(cls, *, judge_pass: bool, labelled: int, human_pass: int, population: int) -> Stratum:
        """Return the stratum whose ``labelled`` items were drawn at random from its ``population`` run items.

        Parameters
        ----------
        judge_pass : bool
            The judge's verdict on every item of the stratum.
        labelled, human_pass : int
            Items people labelled in it, and of those the items they passed.
        population : int
            The stratum's items in the run (at least ``labelled``).

        Returns
        -------
        Stratum
            With ``weight = population / labelled``.

        Examples
        --------
        >>> Stratum.of(judge_pass=False, labelled=50, human_pass=22, population=180).weight
        3.6
        """
        labelled = check_positive_int(labelled, "labelled")
        if population < labelled:
            raise ValueError(f"a stratum of {population} items cannot have {labelled} labelled")
        return cls(judge_pass, labelled, human_pass, population / labelled)


@dataclass(frozen=True, kw_only=True)
class CorrectedRate(Interval):
    """A run's pass rate corrected for the judge's errors, with a bootstrap interval.

    Parameters
    ----------
    estimate : float
        The corrected pass rate (Rogan-Gladen), in [0, 1]; NaN when the judge carries no
        information or its sensitivity or specificity is unknown.
    low, high : float
        Bounds of the percentile bootstrap interval (NaN when undefined).
    raw : float
        The judge's raw pass rate on the run.
    sensitivity, specificity : float
        The judge's weighted sensitivity and specificity against people (pass = positive).
    iterations : int
        Number of bootstrap resamples.
    seed : int
        Seed of the random generator.
    confidence : float
        Level of the two-sided interval.
    note : str, optional
        Why the estimate or interval is undefined, when it is.

    Examples
    --------
    >>> rate = CorrectedRate(0.75, 0.7, 0.8, raw=0.82, sensitivity=0.95, specificity=0.56,
    ...                      iterations=10_000, seed=7, confidence=0.95)
    >>> corrected, low, high = rate
    >>> corrected, rate.raw
    (0.75, 0.82)
    """

    raw: float
    sensitivity: float
    specificity: float
    iterations: int
    seed: int
    confidence: float
    note: str | None = None


def _se_sp(strata: Sequence[Stratum], human_pass: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weighted sensitivity and specificity (pass = positive) for arrays of human-pass counts."""
    tp = fn = tn = fp = 0.0
    for s, h in zip(strata, human_pass):
        if s.judge_pass:
            tp = tp + s.weight * h
            fp = fp + s.weight * (s.labelled - h)
        else:
            fn = fn + s.weight * h
            tn = tn + s.weight * (s.labelled - h)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(tp / (tp + fn)), np.asarray(tn / (tn + fp))


def corrected_pass_rate(
    *,
    run_passes: int,
    run_total: int,
    strata: Sequence[Stratum],
    labels_from_run: bool,
    iterations: int = 10_000,
    seed: int = 7,
    confidence: float = 0.95,
) -> CorrectedRate:
    """Return the run's pass rate corrected for the judge's errors, with a bootstrap interval.

    Each source of uncertainty is counted once. When the labels were sampled from this very run
    (``labels_from_run``: a campaign correcting its own run), the estimand is the run's own pass rate
    and the run's judge pass count is known exactly: only the labelled items vary (each stratum's
    count of passes resampled, shrunk by the finite-population correction ``1 - labelled /
    population``). The corrected rate is then the post-stratified estimate (Rogan-Gladen with the
    strata's own weights reduces to it). When the labels come from another run scored by the same
    judge, the correction is transported and the run's pass count is resampled too (binomial): the
    judge's errors on this run are a fresh draw. Sensitivity and specificity are weighted by each stratum's sampling weight, so a
    sample that oversampled the judge's rare verdict still estimates the population's rates.

    Parameters
    ----------
    run_passes, run_total : int
        Items the judge passed in the whole run, out of all items.
    strata : sequence of Stratum
        The labelled sample by stratum: the judge's verdict, how many items people labelled and
        how many of those they passed, and the weight (stratum population / labelled).
    labels_from_run : bool
        Whether the labelled items were drawn from this run (no default: say which).
    iterations, seed, confidence : int, int, float, default 10_000, 7 and 0.95
        As in :func:`kappa_bootstrap`: the number of bootstrap resamples, the seed of the random
        generator and the level of the two-sided interval.

    Returns
    -------
    CorrectedRate
        ``estimate`` is the corrected rate (Rogan-Gladen), ``raw`` the judge's own; ``note`` says
        why the estimate or interval is NaN when it is.

    References
    ----------
    Rogan and Gladen, 1978 (the correction); Efron and Tibshirani, 1993 (percentile interval).

    Examples
    --------
    >>> strata = [Stratum(True, 40, 36, weight=82 / 40), Stratum(False, 20, 4, weight=18 / 20)]
    >>> rate = corrected_pass_rate(run_passes=82, run_total=100, strata=strata, labels_from_run=True, iterations=2000)
    >>> rate.raw, round(rate.estimate, 3), round(rate.sensitivity, 3), round(rate.specificity, 3)
    (0.82, 0.774, 0.953, 0.637)
    """
    run_total = check_positive_int(run_total, "run_total")
    if not 0 <= run_passes <= run_total:
        raise ValueError(f"run_passes must be between 0 and run_total={run_total}, got {run_passes}")
    iterations = check_positive_int(iterations, "iterations")
    confidence = check_probability(confidence, "confidence")
    strata = [s for s in strata if s.labelled > 0]
    if not strata:
        raise ValueError("no labelled items: label some before correcting the pass rate")
    raw = run_passes / run_total
    se, sp = _se_sp(strata, np.array([s.human_pass for s in strata], dtype=float))
    se, sp = float(se), float(sp)

    def result(estimate: float, low: float, high: float, note: str | None) -> CorrectedRate:
        return CorrectedRate(estimate, low, high, raw=raw, sensitivity=se, specificity=sp, iterations=iterations,
                             seed=seed, confidence=confidence, note=note)  # fmt: skip

    note = None
    if not (math.isfinite(se) and math.isfinite(sp)):
        note = "people's labels hold only one class, so the judge's sensitivity or specificity is unknown"
        return result(math.nan, math.nan, math.nan, note)
    corrected = rogan_gladen(raw, se, sp)
    if math.isnan(corrected):
        note = "the judge's sensitivity + specificity is at most 1: its verdicts carry no information"
    if not isinstance(labels_from_run, bool):
        raise TypeError("labels_from_run must be True or False: were the labelled items drawn from this run?")
    rng = np.random.default_rng(seed)
    if labels_from_run:
        passes = np.full(iterations, raw)
    else:
        passes = rng.binomial(run_total, raw, size=iterations) / run_total
    # each stratum's pass rate resampled from its count smoothed by half an item either way (as the stratified
    # kappa is): a stratum that shows no failure may still hold some; unsmoothed, the interval of a rare failure
    # class's corrected rate covered about 93.5 % instead of 95
    human = np.stack(
        [
            rng.binomial(s.labelled, (s.human_pass + SMOOTHING) / (s.labelled + 2 * SMOOTHING), size=iterations)
            for s in strata
        ]
    ).astype(float)
    if labels_from_run:  # a sample without replacement from the stratum's items: the finite-population correction
        centre = np.array([[s.human_pass] for s in strata], dtype=float)
        shrink = np.sqrt(np.clip([[1.0 - 1.0 / s.weight] for s in strata], 0.0, 1.0))
        human = centre + shrink * (human - centre)
    se_b, sp_b = _se_sp(strata, human)
    youden = se_b + sp_b - 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = np.clip((passes + sp_b - 1.0) / youden, 0.0, 1.0)
    draws = np.sort(draws[np.isfinite(draws) & (youden > 0)])
    if draws.size == 0:
        return result(corrected, math.nan, math.nan, note)
    low_pos, high_pos = percentile_positions(draws.size, confidence=confidence)
    low, high = float(draws[low_pos]), float(draws[high_pos])
    if math.isfinite(corrected):  # the smoothed resamples can sit off the estimate: the interval holds it
        low, high = min(low, corrected), max(high, corrected)
    return result(corrected, low, high, note)
