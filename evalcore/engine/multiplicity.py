"""Family-wise error control for the gate's "block" decisions (Holm's step-down).

A gate makes one decision per (metric, slice): 10 metrics over 20 slices and "all" is 210 of
them. Each one-sided test of "no drop" at level α wrongly finds a drop α of the time, and the
report blocks when any cell blocks, so without a correction a harmless change is blocked in
nearly every report. Holm's step-down procedure holds the chance that *any* harmless cell blocks
at α, whatever the dependence between the cells (slices nest inside "all", metrics share
questions), and rejects everything Bonferroni rejects and more.

Why Holm and not another: Hochberg's and Hommel's step-up procedures are a little more powerful
but are only proven under positive dependence of the test statistics, which exact and
randomization p-values of nested, discrete cells do not guarantee; Benjamini–Hochberg controls
the false discovery rate, not the chance of one false "block"; a Westfall–Young max-T procedure
would exploit the correlation between cells but needs one joint resampling of every metric, which
the gate's per-cell exact tests do not share.

The alternative annotator test (:mod:`.alt_test`) corrects its one test per annotator with
Benjamini–Yekutieli instead, as its authors do: its question is the share of annotators the judge
beats, a false discovery rate, under whatever dependence annotators' shared items bring.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

import numpy as np

Correction = Literal["holm", "none"]
#: The corrections the gate offers: Holm's step-down (the default) or none (each cell at level α alone).
CORRECTIONS: tuple[str, ...] = get_args(Correction)


def check_correction(correction: object) -> str:
    """Return ``correction`` after checking it is one of :data:`CORRECTIONS`."""
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {CORRECTIONS}, got {correction!r}")
    return str(correction)


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Return Holm's step-down adjusted p-values, in the order given.

    A hypothesis is rejected at family-wise level α when its adjusted p-value is at most α.
    NaN entries (cells that were not tested) are left out of the family and stay NaN.

    Parameters
    ----------
    p_values : sequence of float
        Raw p-values in [0, 1], NaN for no test.

    Returns
    -------
    numpy.ndarray
        ``max_{j <= i} min(1, (m - j + 1) p_(j))`` for the i-th smallest p-value, where ``m``
        is the number of finite p-values; NaN where the input is NaN.

    References
    ----------
    Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scandinavian
    Journal of Statistics 6(2), 65-70.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03, 0.005]).round(3).tolist()
    [0.03, 0.06, 0.06, 0.02]
    """
    p, adjusted, order = _family(p_values)
    m = order.size
    if m == 0:
        return adjusted
    steps = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted[order] = np.maximum.accumulate(steps)
    return adjusted


def adjust(p_values: Sequence[float] | np.ndarray, *, correction: str = "holm") -> np.ndarray:
    """Return the p-values adjusted by ``correction`` (``"none"`` returns them as given).

    Examples
    --------
    >>> adjust([0.01, 0.04], correction="none").tolist()
    [0.01, 0.04]
    """
    if check_correction(correction) == "none":
        return np.asarray(p_values, dtype=float).copy()
    return holm(p_values)


def benjamini_yekutieli(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Return Benjamini-Yekutieli adjusted p-values, in the order given: false discovery rate under any dependence.

    A hypothesis is rejected at false discovery rate ``q`` when its adjusted p-value is at most
    ``q``, which is the step-up rule "reject the ``k`` smallest, ``k`` the largest ``i`` with
    ``p_(i) <= i q / (m c(m))``", ``c(m) = 1 + 1/2 + ... + 1/m``. NaN entries are left out of the
    family and stay NaN (as in :func:`holm`).

    Parameters
    ----------
    p_values : sequence of float
        Raw p-values in [0, 1], NaN for no test.

    Returns
    -------
    numpy.ndarray
        ``min_{j >= i} min(1, m c(m) p_(j) / j)`` for the i-th smallest p-value; the same as
        statsmodels' ``multipletests(method="fdr_by")``.

    References
    ----------
    Benjamini, Y. and Yekutieli, D. (2001). The control of the false discovery rate in multiple
    testing under dependency. Annals of Statistics 29(4), 1165-1188.

    Examples
    --------
    >>> benjamini_yekutieli([0.01, 0.04, 0.03, 0.005]).round(4).tolist()
    [0.0417, 0.0833, 0.0833, 0.0417]
    """
    p, adjusted, order = _family(p_values)
    m = order.size
    if m == 0:
        return adjusted
    harmonic = float(np.sum(1.0 / np.arange(1, m + 1)))
    steps = np.minimum(1.0, m * harmonic * p[order] / np.arange(1, m + 1))
    adjusted[order] = np.minimum.accumulate(steps[::-1])[::-1]
    return adjusted


def _family(p_values: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The p-values checked, an all-NaN result to fill, and the tested ones' positions from the smallest p up."""
    p = np.asarray(p_values, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"p_values must be one-dimensional, got shape {p.shape}")
    tested = np.flatnonzero(~np.isnan(p))
    if np.any((p[tested] < 0) | (p[tested] > 1)):
        raise ValueError("p_values must lie in [0, 1] (or be NaN for a cell that was not tested)")
    return p, np.full(p.shape, np.nan), tested[np.argsort(p[tested], kind="stable")]
