"""Kernels for rates estimated from a stratified sample: the linearised variance of a weighted ratio,
Wilson's interval at an effective sample size, and the campaign design the planner predicts for
(the delta-method variances of kappa and of the corrected pass rate). Shared by the judge report's estimator
(:mod:`.stratified`) and the planner (:mod:`.planning`), so that what the planner predicts is what
the report computes.

A judge's miss rate on a stratified sample is a ratio of weighted counts: the weighted items that
people failed and the judge passed, over the weighted items that people failed. Under a design
stratified by the judge's verdict the two counts come from different strata, so the variance of the
ratio is not that of a simple random sample of the failures, nor the one Kish's effective sample
size implies (which assumes the rate does not vary with the weights: here it varies completely).
The linearised (Taylor) variance of the ratio estimator is (Cochran 1977, 6.11)

    v(R) = sum_h w_h**2 * n_h * var_h(u) / X**2,   u = y - R * x,

where ``x`` marks an item of the rate's row (people failed it), ``y`` an item of its numerator cell
(people failed it and the judge passed it), and ``X = sum_h w_h * x_h``. The interval is Wilson's at
the design's effective size ``R * (1 - R) / v(R)``: the variance the design gives, with Wilson's
good behaviour near 0 and 1.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass

import numpy as np

from ._validation import check_positive_int
from .agreement import _kappa_from_tables
from .allocation import neyman_allocation
from .sampling import stratified_allocation

#: A sample whose strata were taken at rates within this ratio of each other is counted as it is
#: (the judge report's rule: weighting it would move the estimates less than their intervals are wide).
SELF_WEIGHTING = 1.25

#: Half an item added to each cell of a stratum's observed table before its variance is estimated
#: (Jeffreys' prior): a stratum that shows no miss still has some chance of one, so a rate of 0 in
#: the sample keeps an upper bound, and a handful of misses does not make the interval too short.
SMOOTHING = 0.5


def ratio_and_variance(cells: np.ndarray, weights: np.ndarray, *, row: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the weighted ratio and its linearised variance for rates within one row of 2x2 tables.

    ``cells`` has shape ``(..., n_strata, 2, 2)`` (counts, or expected counts; rows people's label
    pass / fail, columns the judge's verdict pass / fail) and ``weights`` shape ``(n_strata,)`` or
    ``(..., n_strata)``. For ``row=1`` the ratio is the miss rate (people fail, judge pass); for
    ``row=0`` the false-fail rate (people pass, judge fail). NaN where the row is empty.
    """
    cells = np.asarray(cells, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    numerator_col = 0 if row == 1 else 1
    y = cells[..., row, numerator_col]
    other = cells[..., row, 1 - numerator_col]
    n = cells.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        big_x = np.sum(w * (y + other), axis=-1)
        ratio = np.sum(w * y, axis=-1) / big_x
        r = ratio[..., None]
        p_y, p_other = np.where(n > 0, y / n, 0.0), np.where(n > 0, other / n, 0.0)
        mean_u = p_y * (1 - r) - p_other * r
        var_u = p_y * (1 - r) ** 2 + p_other * r**2 - mean_u**2
        variance = np.sum(w**2 * n * var_u, axis=-1) / big_x**2
    return ratio, variance


def smoothed(cells: np.ndarray) -> np.ndarray:
    """Return observed tables with :data:`SMOOTHING` added to each cell of every judge verdict a stratum holds."""
    cells = np.asarray(cells, dtype=np.float64)
    present = cells.sum(axis=-2, keepdims=True) > 0
    return cells + SMOOTHING * np.broadcast_to(present, cells.shape)


def effective_size(cells: np.ndarray, weights: np.ndarray, *, row: int) -> np.ndarray:
    """Return the design's effective sample size for a rate, ``R (1 - R) / v(R)`` on the smoothed tables."""
    ratio, variance = ratio_and_variance(smoothed(cells), weights, row=row)
    with np.errstate(invalid="ignore", divide="ignore"):
        return ratio * (1 - ratio) / variance


def wilson_bounds(p: np.ndarray | float, n: np.ndarray | float, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Return Wilson's bounds for a proportion ``p`` at (effective) size ``n``; they always contain ``p``."""
    p = np.asarray(p, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        denom = 1 + z * z / n
        centre = (p + z * z / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return np.maximum(0.0, np.minimum(p, centre - half)), np.minimum(1.0, np.maximum(p, centre + half))


def wilson_half_width(p: np.ndarray | float, n: np.ndarray | float, z: float) -> np.ndarray:
    """Return half the width of Wilson's interval, unclipped: what the planner quotes as "plus or minus"."""
    p = np.asarray(p, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)


@dataclass(frozen=True)
class Design:
    """A stratified sample of labelled items: per stratum, items sampled, the stratum's size and its verdict."""

    sampled: np.ndarray  # (S,) items labelled
    size: np.ndarray  # (S,) items in the run
    judge_pass: np.ndarray  # (S,) bool
    run_total: int | None  # items in the run (None: large)

    def weights(self) -> np.ndarray:
        """How many run items each labelled item of a stratum stands for."""
        return self.size / self.sampled

    def self_weighting(self) -> bool:
        """Whether the report counts the sample as it is (:data:`SELF_WEIGHTING`)."""
        w = self.weights()
        return bool(w.max() <= w.min() * SELF_WEIGHTING)

    def scaled(self, fraction: float) -> Design:
        """The held-out split: each stratum's sample times ``fraction`` (rounded as campaigns round it)."""
        sampled = np.round(self.sampled * fraction)
        keep = sampled > 0
        return Design(sampled[keep], self.size[keep], self.judge_pass[keep], self.run_total)


Strata = Mapping[tuple[Hashable, bool], int]


def check_strata(strata: Strata) -> dict[tuple[Hashable, bool], int]:
    """Return the run's strata, ``(slice, judge passed) -> items``, after checking them."""
    out = {}
    for key, count in strata.items():
        if not isinstance(key, tuple) or len(key) != 2 or not isinstance(key[1], (bool, np.bool_)):
            raise ValueError(f"strata keys are (slice, judge passed) pairs, got {key!r}")
        out[(key[0], bool(key[1]))] = check_positive_int(count, f"size of stratum {key!r}", allow_zero=True)
    if not sum(out.values()):
        raise ValueError("the strata hold no items")
    return out


def sample_design(
    size: int,
    strata: Mapping[tuple[Hashable, bool], int],
    run_total: int | None,
    min_class_share: float,
    spread: Mapping[tuple[Hashable, bool], float] | None = None,
) -> Design:
    """Return the sample a campaign of ``size`` items takes from these strata (only the strata it samples).

    With ``spread`` (each stratum's spread of people's disagreement with the judge) the sample is
    allocated by Neyman's rule (:func:`~evalcore.engine.allocation.neyman_allocation`), else with each
    judge verdict's floor of ``min_class_share``.
    """
    if spread is not None:
        allocation = neyman_allocation(strata, size, spread=spread)
    else:
        allocation = stratified_allocation(strata, size, min_class_share=min_class_share)
    keys = [k for k in strata if allocation[k] > 0]
    return Design(
        np.array([allocation[k] for k in keys], dtype=np.float64),
        np.array([strata[k] for k in keys], dtype=np.float64),
        np.array([k[1] for k in keys], dtype=bool),
        run_total,
    )


def stratum_tables(design: Design, fail_counts: np.ndarray) -> np.ndarray:
    """Per-stratum 2x2 tables (..., S, 2, 2) from the count of items people fail in each stratum."""
    fail_counts = np.asarray(fail_counts, dtype=np.float64)
    tables = np.zeros(fail_counts.shape + (2, 2))
    col = np.where(design.judge_pass, 0, 1)
    s = np.arange(design.sampled.size)
    tables[..., s, 0, col] = design.sampled - fail_counts
    tables[..., s, 1, col] = fail_counts
    return tables


def _gradient(function: Callable[[np.ndarray], np.ndarray], point: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Central differences of ``function`` (vectorised over a leading axis) at ``point``, one coordinate at a time.

    NaN where the statistic is undefined (a sample that holds one judge verdict has no specificity).
    """
    step = 1e-5 * np.maximum(scale, 1.0)
    eye = np.eye(point.size) * step
    with np.errstate(divide="ignore", invalid="ignore"):
        return (function(point + eye) - function(point - eye)) / (2 * step)


def kappa_sd(design: Design, fail: np.ndarray, weighted: bool) -> float:
    """The delta-method standard error of the report's kappa (weighted strata, or the pooled sample)."""
    n = design.sampled
    if weighted:
        w = design.weights()
        grad = _gradient(
            lambda x: _kappa_from_tables(np.einsum("s,ksij->kij", w, stratum_tables(design, x)))[0], n * fail, n
        )
        return float(np.sqrt(np.sum(grad**2 * n * fail * (1 - fail))))
    cells = stratum_tables(design, n * fail).sum(axis=0).ravel()
    total = cells.sum()
    p = cells / total
    grad = _gradient(lambda c: _kappa_from_tables(c.reshape(-1, 2, 2))[0], cells, np.full(4, total))
    cov = total * (np.diag(p) - np.outer(p, p))
    return float(np.sqrt(grad @ cov @ grad))


def corrected_sd(design: Design, fail: np.ndarray) -> float:
    """The standard error of the corrected pass rate a campaign reports on its own run.

    With the strata's own weights, Rogan-Gladen on the campaign's run is the post-stratified
    estimate ``sum_h W_h * pass_h`` (and so is the prediction-powered estimate of a pass/fail judge
    stratified by its verdicts), whose variance is ``sum_h W_h**2 (1 - n_h / N_h) p_h (1 - p_h) / n_h``:
    the labels' sampling error only, with the finite-population correction. The run's judge pass
    count is known, not a second source of error (counting it was what made the interval 1.3-2.4x
    too wide on small runs).
    """
    n, size = design.sampled, design.size
    shares = size / size.sum()
    fpc = np.clip(1.0 - n / size, 0.0, 1.0) if design.run_total is not None else np.ones_like(n)
    return float(np.sqrt(np.sum(shares**2 * fpc * fail * (1 - fail) / n)))
