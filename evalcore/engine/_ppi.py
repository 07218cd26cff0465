"""Kernels of prediction-powered estimation: one stratum's tuned rectifier and its variance.

Within a stratum of ``N`` rows the judge scored and ``n`` of them people labelled, the
prediction-powered estimate of the people's mean is ``lam * mean_N(f) + mean_n(y - lam * f)``: the
judge's mean over every row, rectified by the mean of the people's disagreement on the labelled
rows. ``lam`` in [0, 1] is the power-tuning weight (PPI++): 0 is the labels alone, 1 is plain PPI.
What the variance holds depends on the design the caller states:

``"run"``
    The labelled rows are a simple random sample (without replacement) of the ``N`` rows, and the
    estimand is the people's mean over those very rows (a campaign correcting its own run). The
    judge's mean over the rows is then known exactly; the variance is that of the rectifier alone,
    ``(1 - n / N) * S2(y - lam f) / n``, and the best ``lam`` is the regression slope of ``y`` on ``f``.
``"population"``
    The same sample, but the estimand is the mean over the population of questions the rows were
    drawn from (a gate deciding whether a change helps in general): the variance adds the rows' own
    sampling error once, ``S2(y) / N``.
``"independent"``
    The labelled rows and the judge-scored rows are independent draws from one population (the
    setting of ``ppi-python``'s ``ppi_mean_ci``, reproduced to the formula: population
    variances, ``lam = cov(y, f) / ((1 + n / N) var(f))`` clipped to [0, 1], the judge's variance
    pooled over both sets).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, stdtrit

from ._design import SMOOTHING

DESIGNS = ("run", "population", "independent")
TUNINGS = ("power", "none", "labels")


@dataclass(frozen=True)
class StratumFit:
    """One stratum's estimate, its variance, the labels-only variance and the weight used."""

    estimate: float
    variance: float
    labels_estimate: float
    labels_variance: float
    lam: float
    labelled: int
    rows: int
    judge_mean: float
    guarded: bool


def _var(x: np.ndarray, ddof: int) -> float:
    return float(np.var(x, ddof=ddof)) if x.size > ddof else 0.0


def _cov(x: np.ndarray, y: np.ndarray, ddof: int) -> float:
    if x.size <= ddof:
        return 0.0
    return float(np.sum((x - x.mean()) * (y - y.mean())) / (x.size - ddof))


def power_weight(y: np.ndarray, f: np.ndarray, f_rows: np.ndarray, *, design: str) -> float:
    """The PPI++ weight minimising the stratum's variance, clipped to [0, 1] (0 when the judge is constant)."""
    n, big_n = y.size, f_rows.size
    if design == "independent":
        # ppi-python's _calc_lam_glm for the mean: (1/n) * 2 * sum of centred products, over
        # 2 (1 + n / N) times the judge's variance pooled over both sets (numpy.cov, ddof 1)
        num = float(np.sum((y - y.mean()) * (f - f.mean())) / n)
        pooled = np.concatenate([f, f_rows])
        denom = (1 + n / big_n) * (float(np.var(pooled, ddof=1)) if pooled.size > 1 else 0.0)
    else:
        num, denom = _cov(y, f, 1), _var(f, 1)
    if denom <= 0 or not math.isfinite(num / denom):
        return 0.0
    return float(np.clip(num / denom, 0.0, 1.0))


def correlation_too_weak(y: np.ndarray, f: np.ndarray) -> bool:
    """The finite-sample guard: whether the labelled rows' correlation is at most ``1 / sqrt(n - 2)``.

    Mani, Xu, Lipton and Oberst (arXiv 2505.20178) show that PPI++'s single-sample estimate has a
    larger error than the labels alone unless the correlation between the judge and people exceeds a
    threshold of this order (exactly ``1 / sqrt(n - 2)`` for Gaussian data, similar for binary labels);
    below it, the tuned weight is noise and the interval is optimistic.
    """
    n = y.size
    if n < 4:
        return True
    sy, sf = _var(y, 1), _var(f, 1)
    if sy <= 0 or sf <= 0:
        return sf > 0  # a judge that varies while people agree on every row: no evidence it helps
    rho = _cov(y, f, 1) / math.sqrt(sy * sf)
    return rho <= 1.0 / math.sqrt(n - 2)


def _residual_variance(y: np.ndarray, f: np.ndarray, lam: float, ddof: int, smooth: bool) -> float:
    """The variance of ``y - lam f``; with ``smooth`` and pass/fail labels, with half a pass and half a fail added.

    The half-label pseudo-counts (Jeffreys', as :data:`._design.SMOOTHING` elsewhere in the engine)
    keep a stratum whose labels show few or no disagreements from claiming a near-zero variance: the
    normal interval of a rare class's rate otherwise covers about 93.5 % instead of 95.
    """
    r = y - lam * f
    if not smooth or not np.all((y == 0) | (y == 1)):
        return _var(r, ddof)
    centre = lam * float(f.mean())
    r = np.concatenate([r, [1.0 - centre, -centre]])
    w = np.concatenate([np.ones(y.size), [SMOOTHING, SMOOTHING]])
    mean = float(np.sum(w * r) / w.sum())
    return float(np.sum(w * (r - mean) ** 2) / (w.sum() - ddof))


def _moments(
    y: np.ndarray, f: np.ndarray, f_rows: np.ndarray, lam: float, design: str, smooth: bool
) -> tuple[float, float]:
    n, big_n = y.size, f_rows.size
    estimate = lam * float(f_rows.mean()) + float(np.mean(y - lam * f))
    if design == "independent":  # ppi-python: population standard deviations
        variance = _var(lam * f_rows, 0) / big_n + _residual_variance(y, f, lam, 0, smooth) / n
    else:
        # the population design's own term, the rows' sampling error, is added once over every stratum
        variance = max(0.0, 1.0 - n / big_n) * _residual_variance(y, f, lam, 1, smooth) / n
    return estimate, variance


def fit_stratum(
    y: np.ndarray, f: np.ndarray, f_rows: np.ndarray, *, design: str, tuning: str | float, guard: bool, smooth: bool
) -> StratumFit:
    """Fit one stratum: its tuned estimate and variance, and the labels-only ones beside them."""
    guarded = False
    if isinstance(tuning, str):
        lam = {"power": None, "none": 1.0, "labels": 0.0}[tuning]
    else:
        lam = float(tuning)
    if lam is None:
        lam = power_weight(y, f, f_rows, design=design)
        if guard and lam > 0 and correlation_too_weak(y, f):
            lam, guarded = 0.0, True
    estimate, variance = _moments(y, f, f_rows, lam, design, smooth)
    labels_estimate, labels_variance = _moments(y, f, f_rows, 0.0, design, smooth)
    return StratumFit(
        estimate=estimate,
        variance=variance,
        labels_estimate=labels_estimate,
        labels_variance=labels_variance,
        lam=lam,
        labelled=int(y.size),
        rows=int(f_rows.size),
        judge_mean=float(f_rows.mean()),
        guarded=guarded,
    )


def overlap_covariance(ra: np.ndarray, rb: np.ndarray, n_a: int, n_b: int, rows: int) -> float:
    """Covariance of two simple-random-sample means of one stratum's rows whose samples share ``both`` rows.

    For samples of ``n_a`` and ``n_b`` of ``rows`` items sharing ``m`` items,
    ``cov = S_ab * (m / (n_a * n_b) - 1 / rows)`` (sampling on two occasions, Cochran 1977, 12.2),
    with ``S_ab`` estimated on the shared rows (``ra`` and ``rb``, aligned); 0 when fewer than two.
    """
    m = ra.size
    if m < 2:
        return 0.0
    return _cov(ra, rb, 1) * (m / (n_a * n_b) - 1.0 / rows)


def t_quantile(z: float, df: float) -> float:
    """Student's t quantile at the normal quantile ``z``'s level, for fractional (Satterthwaite) degrees of freedom.

    Exact (``scipy.special.stdtrit``): a two-term Cornish-Fisher expansion is 0.003 short at 10 df and 0.007
    at the 99 % level, an interval too narrow where labels are few. Fewer than 3 df count as 3 (one or two
    labelled rows a stratum would give a quantile in the tens); none usable (inf, 0, NaN) is the normal one.
    """
    if not math.isfinite(df) or df <= 0:
        return z
    return float(stdtrit(max(df, 3.0), ndtr(z)))


def satterthwaite(contributions: list[float], labelled: list[int]) -> float:
    """Welch-Satterthwaite degrees of freedom of a sum of strata's variances, ``(sum v)^2 / sum v^2 / (n - 1)``."""
    num = sum(contributions) ** 2
    den = sum(v * v / (n - 1) for v, n in zip(contributions, labelled) if n > 1)
    return num / den if den > 0 else math.inf
