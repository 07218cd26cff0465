"""Prediction-powered estimates: the judge's scale with the people's validity.

A judge scores every row of a run; people label a sample. The labels alone estimate the people's
mean without bias but with the width of a small sample; the judge's mean is precise but biased by
its errors. Prediction-powered inference (Angelopoulos et al., Science 2023) keeps the best of both:
the judge's mean over every row, rectified by the mean of the people's disagreement with it on the
labelled rows, ``lam * mean(f) + mean_labelled(y - lam * f)``. Power tuning (PPI++, Angelopoulos,
Duchi and Zrnic, arXiv 2311.01453) picks ``lam`` in [0, 1] to minimise the variance, so a useless
judge costs nothing asymptotically; in finite samples it can (Mani et al., arXiv 2505.20178), so a
guard falls back to the labels alone when the judge's correlation with people is too weak to trust
or the tuned interval is no narrower.

Strata. A campaign samples the run by stratum (slice x judge verdict) at different rates; each
stratum is estimated on its own and weighted by its share of the run's rows (stratified PPI, Fisch
et al. 2024). Within a stratum the labelled rows must be a simple random sample of its rows: the
inclusion probability ``n_h / N_h`` is then known, and weighting by the strata is inverse-probability
weighting. A pass/fail judge is constant within a verdict stratum, so there the estimate is the
post-stratified one: the judge's information is in the strata.

The design is never defaulted: the caller says what the labelled rows are and what is estimated
(:data:`DESIGNS`, described in :mod:`._ppi`). Intervals are normal (Wald) intervals, as ``ppi-python``'s.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from ._interval import Interval
from ._ppi import DESIGNS, TUNINGS, StratumFit, fit_stratum, overlap_covariance, satterthwaite, t_quantile
from ._ppi import correlation_too_weak as _too_weak
from ._validation import check_probability
from .proportions import z_score

ArrayLike = Sequence[float] | np.ndarray
_GUARD_NOTE = (
    "in some strata the judge's correlation with people is too weak to trust (at most 1/sqrt(n - 2)): "
    "there the labels stand alone"
)
_NO_GAIN = "the judge did not narrow the interval: the labels stand alone"


@dataclass(frozen=True, kw_only=True)
class PredictionPowered(Interval):
    """A prediction-powered estimate with its interval, the labels-only one, and what the judge was worth.

    Parameters
    ----------
    estimate, low, high : float
        The estimate the method gives and its normal interval.
    standard_error : float
        Its standard error.
    method : str
        ``"ppi++"`` (power-tuned), ``"ppi"`` (weight 1) or ``"labels"`` (the labels alone, weighted by
        the design: chosen, or the guard's fallback).
    labels_only : Interval
        The labels alone, weighted by the design (every stratum's weight 0).
    judge_raw : float
        The judge's own mean (or difference) over every row, weighted by the strata.
    labels : int
        Labelled rows the estimate rests on.
    effective_labels : float
        How many labels drawn at random, without the judge, would give the same standard error.
    weights : tuple of float
        The weight ``lam`` of the judge in each stratum (a pair per stratum for a difference).
    strata : int
        Strata estimated.
    design : str
        One of :data:`DESIGNS`.
    confidence : float
        Level of the interval.
    note : str, optional
        Why the guard fell back to the labels, when it did.

    Examples
    --------
    >>> r = PredictionPowered(0.75, 0.7, 0.8, standard_error=0.0255, method="ppi++",
    ...     labels_only=Interval(0.74, 0.68, 0.8), judge_raw=0.82, labels=200, effective_labels=360.0,
    ...     weights=(0.6,), strata=1, design="run", confidence=0.95)
    >>> r.worth, r.in_words()
    (1.8, 'the judge was worth 1.8× the labels: 200 labels did the work of 360 random labels alone')
    """

    standard_error: float
    method: str
    labels_only: Interval
    judge_raw: float
    labels: int
    effective_labels: float
    weights: tuple
    strata: int
    design: str
    confidence: float
    note: str | None = None

    @property
    def worth(self) -> float:
        """Effective labels over labels: 1.8 means the judge was worth 1.8x the labels."""
        return self.effective_labels / self.labels if self.labels else math.nan

    def in_words(self) -> str:
        """What the judge was worth, in a sentence."""
        if not math.isfinite(self.worth):
            return "the labels alone leave no uncertainty here"
        return (
            f"the judge was worth {self.worth:.1f}× the labels: {self.labels:,} labels did the work of "
            f"{self.effective_labels:,.0f} random labels alone"
        )


def _array(values: ArrayLike, name: str) -> np.ndarray:
    out = np.asarray(values, dtype=np.float64).ravel()
    if not np.all(np.isfinite(out)):
        bad = int(np.flatnonzero(~np.isfinite(out))[0])
        raise ValueError(f"{name} must be finite numbers, got {float(out[bad])!r} at position {bad}")
    return out


def _keys(strata: Sequence[Hashable] | None, size: int, name: str) -> np.ndarray:
    if strata is None:
        return np.zeros(size, dtype=np.int64)
    keys = np.asarray([str(k) for k in strata], dtype=object) if len(strata) else np.array([], dtype=object)
    if keys.size != size:
        raise ValueError(f"{name} must give one stratum per row: {keys.size} strata for {size} rows")
    return keys


def _check_design(design: str, allowed: Sequence[str] = DESIGNS) -> str:
    if design not in allowed:
        raise ValueError(f"design must be one of {tuple(allowed)} (say what the labelled rows are), got {design!r}")
    return design


def _check_tuning(tuning: str | float) -> str | float:
    if isinstance(tuning, str):
        if tuning not in TUNINGS:
            raise ValueError(f"tuning must be one of {TUNINGS} or a weight in [0, 1], got {tuning!r}")
        return tuning
    return check_probability(tuning, "tuning", open_interval=False)


def _interval(estimate: float, variance: float, z: float) -> tuple[float, float, float]:
    se = math.sqrt(max(variance, 0.0))
    return estimate, estimate - z * se, estimate + z * se


def _effective(labels: int, srs_variance: float, variance: float) -> float:
    if variance <= 0:
        return math.inf if srs_variance > 0 else float(labels)
    return labels * srs_variance / variance


def _weighted_variance(fits: list[StratumFit], shares: np.ndarray, within: list[float]) -> float:
    """The people's variance over the rows, from each stratum's (design-weighted) mean and variance."""
    means = np.array([f.labels_estimate for f in fits])
    mean = float(np.sum(shares * means))
    return float(np.sum(shares * (np.asarray(within) + (means - mean) ** 2)))


def _between(fits: list[StratumFit], shares: np.ndarray) -> float:
    """The variance of the strata's means about the overall one: what estimated shares add, times N."""
    means = np.array([f.estimate for f in fits])
    return float(np.sum(shares * (means - np.sum(shares * means)) ** 2))


def _mean_inputs(labels, judge_labelled, judge_rows, labelled_strata, row_strata):
    """The checked arrays of :func:`prediction_powered_mean` and each row's stratum key."""
    y, f = _array(labels, "labels"), _array(judge_labelled, "judge_labelled")
    rows = _array(judge_rows, "judge_rows")
    if y.size != f.size:
        raise ValueError(f"labels and judge_labelled must have one score per labelled row: {y.size} and {f.size}")
    if y.size < 2 or rows.size == 0:
        raise ValueError(f"need at least 2 labelled rows and some judge-scored rows, got {y.size} and {rows.size}")
    if (labelled_strata is None) != (row_strata is None):
        raise ValueError("give the strata of both the labelled rows and the judge's rows, or of neither")
    lab_keys, row_keys = _keys(labelled_strata, y.size, "labelled_strata"), _keys(row_strata, rows.size, "row_strata")
    missing = sorted(set(lab_keys.tolist()) - set(row_keys.tolist()), key=str)
    if missing:
        raise ValueError(f"labelled rows in strata the run does not hold: {missing[:5]}")
    return y, f, rows, lab_keys, row_keys


def _fit_named(name, y, f, rows, lab_keys, row_keys, *, design, tuning, guard, smooth) -> StratumFit:
    """Fit stratum ``name`` after checking it has labels enough (and, within a run, no more than its rows)."""
    in_lab, in_rows = lab_keys == name, row_keys == name
    n_h, big_n = int(in_lab.sum()), int(in_rows.sum())
    if n_h < 2:
        raise ValueError(f"stratum {name!r} has {big_n} rows but {n_h} labelled: label at least 2 in every stratum")
    if design != "independent" and n_h > big_n:
        raise ValueError(f"stratum {name!r} has {n_h} labelled rows but only {big_n} rows: the labelled rows are "
                         "among the run's rows in this design")  # fmt: skip
    return fit_stratum(y[in_lab], f[in_lab], rows[in_rows], design=design, tuning=tuning, guard=guard, smooth=smooth)


def prediction_powered_mean(
    *,
    labels: ArrayLike,
    judge_labelled: ArrayLike,
    judge_rows: ArrayLike,
    design: str,
    labelled_strata: Sequence[Hashable] | None = None,
    row_strata: Sequence[Hashable] | None = None,
    tuning: str | float = "power",
    guard: bool = True,
    small_sample: bool = True,
    confidence: float = 0.95,
) -> PredictionPowered:
    """Return the prediction-powered estimate of the people's mean (pass rate or mean score).

    Parameters
    ----------
    labels : array-like of float
        People's scores on the labelled rows (1/0 for pass/fail, or a score).
    judge_labelled : array-like of float
        The judge's scores on the same rows, in the same order.
    judge_rows : array-like of float
        The judge's scores on the rows to estimate over: every row of the run, the labelled ones
        included, for the designs ``"run"`` and ``"population"``; the unlabelled rows only for
        ``"independent"``.
    design : {"run", "population", "independent"}
        What the labelled rows are and what is estimated (no default: see :mod:`._ppi`). ``"run"``:
        a random sample of the run's rows within each stratum, estimating the run's own mean (no
        sampling error of the run counted); ``"population"``: the same sample, estimating the mean
        over the questions' population (the run's sampling error counted once); ``"independent"``:
        labelled rows drawn apart from the scored ones (``ppi-python``'s setting).
    labelled_strata, row_strata : sequence of hashable, optional
        The stratum of each labelled row and of each row of ``judge_rows`` (both or neither). Every
        stratum with rows needs labelled rows; each is weighted by its share of the rows.
    tuning : {"power", "none", "labels"} or float, default "power"
        The judge's weight: tuned per stratum (PPI++), 1 (plain PPI), 0 (labels alone), or a fixed one.
    guard : bool, default True
        With ``"power"``: weight 0 in a stratum whose correlation between judge and people is at most
        ``1 / sqrt(n - 2)``, and the labels alone when the tuned interval is no narrower.
    small_sample : bool, default True
        Student's t quantile at the strata's Welch-Satterthwaite degrees of freedom, and half a pass
        and half a fail added to each stratum's pass/fail labels when estimating its variance (a
        stratum of rare disagreements otherwise claims too little). False: the normal interval on
        the plain variances, as ``ppi-python`` computes it.
    confidence : float, default 0.95
        Level of the two-sided interval.

    Returns
    -------
    PredictionPowered

    References
    ----------
    Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, "Prediction-powered inference", Science 2023;
    Angelopoulos, Duchi and Zrnic, "PPI++", arXiv 2311.01453; Fisch et al., "Stratified
    prediction-powered inference", 2024; Mani, Xu, Lipton and Oberst, arXiv 2505.20178.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = (rng.random(2000) < 0.75).astype(float)
    >>> f = np.where(y == 1, rng.random(2000) < 0.95, rng.random(2000) < 0.44).astype(float)
    >>> lab = rng.choice(2000, 200, replace=False)
    >>> r = prediction_powered_mean(labels=y[lab], judge_labelled=f[lab], judge_rows=f, design="run")
    >>> r.method, round(float(r.high - r.estimate), 3), round(float(r.labels_only.high - r.labels_only.estimate), 3)
    ('ppi++', 0.046, 0.058)
    """
    design = _check_design(design)
    tuning = _check_tuning(tuning)
    confidence = check_probability(confidence, "confidence")
    y, f, rows, lab_keys, row_keys = _mean_inputs(labels, judge_labelled, judge_rows, labelled_strata, row_strata)
    names = sorted(set(row_keys.tolist()), key=str)
    fits = [
        _fit_named(name, y, f, rows, lab_keys, row_keys, design=design, tuning=tuning, guard=guard, smooth=small_sample)
        for name in names
    ]
    shares = np.array([fit.rows for fit in fits], dtype=np.float64) / rows.size
    variance = float(np.sum(shares**2 * [fit.variance for fit in fits]))
    labels_variance = float(np.sum(shares**2 * [fit.labels_variance for fit in fits]))
    estimate = float(np.sum(shares * [fit.estimate for fit in fits]))
    labels_estimate = float(np.sum(shares * [fit.labels_estimate for fit in fits]))
    ddof = 0 if design == "independent" else 1
    within = [float(np.var(y[lab_keys == name], ddof=ddof)) for name in names]
    spread = _weighted_variance(fits, shares, within)
    if design == "population":  # the rows' own sampling error, once: the people's variance over the rows / N
        variance, labels_variance = variance + spread / rows.size, labels_variance + spread / rows.size
    elif design == "independent" and len(fits) > 1:  # the strata's shares are themselves estimated from the rows
        between = _between(fits, shares) / rows.size
        variance, labels_variance = variance + between, labels_variance + between
    weights = tuple(fit.lam for fit in fits)
    note = _GUARD_NOTE if any(fit.guarded for fit in fits) else None
    if tuning == "power" and guard and any(weights) and variance >= labels_variance:
        estimate, variance, weights, note = labels_estimate, labels_variance, tuple(0.0 for _ in fits), _NO_GAIN
    method = "labels" if not any(weights) else "ppi" if tuning == "none" else "ppi++"
    z = z_score(confidence)
    if small_sample:
        chosen = [fit.variance if any(weights) else fit.labels_variance for fit in fits]
        z = t_quantile(z, satterthwaite(list(shares**2 * chosen), [fit.labelled for fit in fits]))
    srs = spread / y.size * (max(0.0, 1 - y.size / rows.size) if design == "run" else 1.0)
    return PredictionPowered(
        *_interval(estimate, variance, z),
        standard_error=math.sqrt(max(variance, 0.0)),
        method=method,
        labels_only=Interval(*_interval(labels_estimate, labels_variance, z)),
        judge_raw=float(np.sum(shares * [fit.judge_mean for fit in fits])),
        labels=int(y.size),
        effective_labels=_effective(int(y.size), srs, variance),
        weights=weights,
        strata=len(fits),
        design=design,
        confidence=confidence,
        note=note,
    )


def _difference_weights(ya, yb, fa, fb, has_a, has_b, rows):
    """The PPI++ weights (base, candidate) minimising the variance of the stratum's difference, clipped to [0, 1].

    The variance is a quadratic in the two weights, ``c_a var(y_a - l_a f_a) + c_b var(y_b - l_b f_b)
    - 2 c_ab cov(...)`` with ``c_a = 1/n_a - 1/N``, ``c_b = 1/n_b - 1/N`` and ``c_ab = m/(n_a n_b) - 1/N``
    (``m`` rows labelled on both runs): its minimum solves a 2x2 system.
    """
    both = has_a & has_b
    n_a, n_b, m = int(has_a.sum()), int(has_b.sum()), int(both.sum())
    c_a, c_b = 1 / n_a - 1 / rows, 1 / n_b - 1 / rows
    c_ab = m / (n_a * n_b) - 1 / rows  # multiplies only covariances over the m rows: 0 when m < 2

    def cov(x, y, mask):
        return float(np.cov(x[mask], y[mask])[0, 1]) if mask.sum() >= 2 else 0.0

    hessian = np.array(
        [[c_a * cov(fa, fa, has_a), -c_ab * cov(fa, fb, both)], [-c_ab * cov(fa, fb, both), c_b * cov(fb, fb, has_b)]]
    )
    gradient = np.array(
        [c_a * cov(ya, fa, has_a) - c_ab * cov(fa, yb, both), c_b * cov(yb, fb, has_b) - c_ab * cov(ya, fb, both)]
    )
    if np.linalg.det(hessian) <= 1e-15:
        diag = np.diag(hessian)
        lams = np.where(diag > 0, gradient / np.where(diag > 0, diag, 1.0), 0.0)
    else:
        lams = np.linalg.solve(hessian, gradient)
    return tuple(float(v) for v in np.clip(lams, 0.0, 1.0))


def _difference_stratum(ya, yb, fa, fb, has_a, has_b, tuning, guard, rows):
    """One stratum of a paired difference: the tuned and the labels-only (estimate, variance, weights, guarded)."""
    both = has_a & has_b
    n_a, n_b = int(has_a.sum()), int(has_b.sum())
    if tuning == "power":
        tuned = list(_difference_weights(ya, yb, fa, fb, has_a, has_b, rows))
    elif tuning == "none":
        tuned = [1.0, 1.0]
    elif tuning == "labels":
        tuned = [0.0, 0.0]
    else:
        tuned = [float(tuning), float(tuning)]
    guarded = False
    if tuning == "power" and guard:
        for k, (y, f, has) in enumerate(((ya, fa, has_a), (yb, fb, has_b))):
            if tuned[k] > 0 and _too_weak(y[has], f[has]):
                tuned[k], guarded = 0.0, True
    out = []
    for lams in (tuple(tuned), (0.0, 0.0)):
        ra, rb = ya - lams[0] * fa, yb - lams[1] * fb
        est = lams[1] * fb.mean() + rb[has_b].mean() - lams[0] * fa.mean() - ra[has_a].mean()
        var = (1 / n_a - 1 / rows) * np.var(ra[has_a], ddof=1) + (1 / n_b - 1 / rows) * np.var(rb[has_b], ddof=1)
        var -= 2 * overlap_covariance(ra[both], rb[both], n_a, n_b, rows)
        out.append((float(est), max(float(var), 0.0), lams, guarded))
    return out


def _random_labels_variance(ya: np.ndarray, yb: np.ndarray, design: str) -> float:
    """The variance of the difference of the two runs' labelled means: random labels alone, no judge, no strata."""
    has_a, has_b = ~np.isnan(ya), ~np.isnan(yb)
    both = has_a & has_b
    n_a, n_b, m, rows = int(has_a.sum()), int(has_b.sum()), int(both.sum()), ya.size
    s_a, s_b = float(np.var(ya[has_a], ddof=1)), float(np.var(yb[has_b], ddof=1))
    s_ab = float(np.cov(ya[both], yb[both])[0, 1]) if m >= 2 else 0.0
    variance = s_a / n_a + s_b / n_b - 2 * s_ab * m / (n_a * n_b)
    if design == "run":  # without the questions' own sampling error
        variance -= (s_a + s_b - 2 * s_ab) / rows
    return max(variance, 0.0)


def prediction_powered_difference(
    *,
    base_judge: ArrayLike,
    candidate_judge: ArrayLike,
    base_labels: ArrayLike,
    candidate_labels: ArrayLike,
    design: str,
    strata: Sequence[Hashable] | None = None,
    tuning: str | float = "power",
    guard: bool = True,
    confidence: float = 0.95,
) -> PredictionPowered:
    """Return the prediction-powered estimate of the paired difference, candidate minus base, of people's means.

    Both runs answered the same questions; row ``i`` of every array is question ``i``. People
    labelled some rows of either or both runs (NaN where a row is unlabelled): the rows labelled on
    both give the two rectifiers' covariance, so labelling the same questions on both runs pays.

    Parameters
    ----------
    base_judge, candidate_judge : array-like of float
        The judge's scores on each question's row in each run.
    base_labels, candidate_labels : array-like of float
        People's scores on the same rows, NaN where unlabelled; each run needs at least 2 labelled
        rows in every stratum.
    design : {"run", "population"}
        ``"run"``: the difference over these questions; ``"population"``: over the population of
        questions they were drawn from (what a gate decides), counting the questions' sampling once.
        Within a stratum, each run's labelled rows must be a random sample of its rows.
    strata : sequence of hashable, optional
        Each question's stratum (say slice x base verdict x candidate verdict, the common refinement
        of two campaigns' strata); strata are weighted by their share of the questions.
    tuning, guard, confidence
        As in :func:`prediction_powered_mean` (each run's weight tuned on its own labelled rows).

    Returns
    -------
    PredictionPowered
        ``weights`` holds a (base, candidate) pair per stratum; ``labels`` counts labelled rows of
        both runs.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> ya = (rng.random(2000) < 0.75).astype(float); yb = np.where(rng.random(2000) < 0.9, ya, 1 - ya)
    >>> judge = lambda y: np.where(y == 1, rng.random(y.size) < 0.95, rng.random(y.size) < 0.44).astype(float)
    >>> fa, fb = judge(ya), judge(yb)
    >>> lab = np.zeros(2000, bool); lab[rng.choice(2000, 300, replace=False)] = True
    >>> r = prediction_powered_difference(base_judge=fa, candidate_judge=fb, base_labels=np.where(lab, ya, np.nan),
    ...     candidate_labels=np.where(lab, yb, np.nan), design="population")
    >>> r.method, bool(r.low < yb.mean() - ya.mean() < r.high)
    ('ppi++', True)
    """
    design = _check_design(design, ("run", "population"))
    tuning = _check_tuning(tuning)
    confidence = check_probability(confidence, "confidence")
    fa, fb = _array(base_judge, "base_judge"), _array(candidate_judge, "candidate_judge")
    ya = np.asarray(base_labels, dtype=np.float64).ravel()
    yb = np.asarray(candidate_labels, dtype=np.float64).ravel()
    if not fa.size == fb.size == ya.size == yb.size:
        raise ValueError(f"every array holds one value per question: got {fa.size}, {fb.size}, {ya.size}, {yb.size}")
    if fa.size == 0:
        raise ValueError("every array is empty: there are no questions to compare")
    if np.isinf(ya).any() or np.isinf(yb).any():
        raise ValueError("labels must be finite numbers or NaN (unlabelled)")
    keys = _keys(strata, fa.size, "strata")
    names = sorted(set(keys.tolist()), key=str)
    z = z_score(confidence)
    fits, shares, spreads, labels_means = [], [], [], []
    for name in names:
        s = keys == name
        has_a, has_b = ~np.isnan(ya[s]), ~np.isnan(yb[s])
        if has_a.sum() < 2 or has_b.sum() < 2:
            raise ValueError(
                f"stratum {name!r}: {int(has_a.sum())} base and {int(has_b.sum())} candidate rows labelled; each run "
                "needs at least 2 in every stratum (label the same questions on both runs where you can)"
            )
        a, b = np.nan_to_num(ya[s]), np.nan_to_num(yb[s])
        fits.append(_difference_stratum(a, b, fa[s], fb[s], has_a, has_b, tuning, guard, int(s.sum())))
        shares.append(s.sum() / fa.size)
        both = has_a & has_b
        cov = float(np.cov(a[both], b[both])[0, 1]) if both.sum() >= 2 else 0.0
        spreads.append(float(np.var(a[has_a], ddof=1) + np.var(b[has_b], ddof=1) - 2 * cov))
        labels_means.append(fits[-1][1][0])
    w = np.asarray(shares)
    est = float(np.sum(w * [fit[0][0] for fit in fits]))
    var = float(np.sum(w**2 * [fit[0][1] for fit in fits]))
    lab_est = float(np.sum(w * [fit[1][0] for fit in fits]))
    lab_var = float(np.sum(w**2 * [fit[1][1] for fit in fits]))
    weights = tuple(fit[0][2] for fit in fits)
    guarded = any(fit[0][3] for fit in fits)
    between = float(np.sum(w * (np.asarray(labels_means) - lab_est) ** 2))
    spread = float(np.sum(w * spreads)) + between
    if design == "population":  # the questions' own sampling error, once
        var, lab_var = var + spread / fa.size, lab_var + spread / fa.size
    note = None
    if guarded:
        note = "in some strata the judge's correlation with people is too weak to trust: there the labels stand alone"
    if tuning == "power" and guard and any(any(p) for p in weights) and var >= lab_var:
        est, var, weights = lab_est, lab_var, tuple((0.0, 0.0) for _ in fits)
        note = "the judge did not narrow the interval: the labels stand alone"
    srs = _random_labels_variance(ya, yb, design)
    labelled = int((~np.isnan(ya)).sum() + (~np.isnan(yb)).sum())
    any_weight = any(any(p) for p in weights)
    method = "labels" if not any_weight else "ppi" if tuning == "none" else "ppi++"
    return PredictionPowered(
        *_interval(est, var, z),
        standard_error=math.sqrt(max(var, 0.0)),
        method=method,
        labels_only=Interval(*_interval(lab_est, lab_var, z)),
        judge_raw=float(fb.mean() - fa.mean()),
        labels=labelled,
        effective_labels=_effective(labelled, srs, var),
        weights=weights,
        strata=len(fits),
        design=design,
        confidence=confidence,
        note=note,
    )
