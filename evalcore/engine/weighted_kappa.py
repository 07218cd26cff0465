"""Weighted kappa for ordinal labels (a 1-5 relevance scale): agreement that counts near misses.

On an ordinal scale a judge that says 4 where people said 5 is closer than one that says 1.
Weighted kappa gives each pair of labels a partial credit ``w_ij = 1 - d_ij / d_max``, with the
distance ``d_ij`` between the labels' positions on the declared scale linear (``|i - j|``) or
quadratic (``(i - j) ** 2``), and corrects the weighted agreement for chance as Cohen's kappa does.
Positions, not the labels' values, are what count (as in scikit-learn's ``cohen_kappa_score``),
and every label of the scale counts even if nobody used it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Literal

import numpy as np

from ._validation import check_probability
from .agreement import KAPPA_UNDEFINED_REASON, KappaEstimate, UndefinedMetricWarning, _count_table, _labels_pair
from .proportions import z_score

KappaWeights = Literal["linear", "quadratic"]
#: The weightings of weighted kappa.
KAPPA_WEIGHTS = ("linear", "quadratic")


def agreement_weights(m: int, *, weights: KappaWeights) -> np.ndarray:
    """Return the ``m x m`` agreement weights of weighted kappa: 1 on the diagonal, 0 at the scale's ends.

    Parameters
    ----------
    m : int
        Labels on the scale (at least 2).
    weights : {"linear", "quadratic"}
        ``1 - |i - j| / (m - 1)`` or ``1 - (i - j) ** 2 / (m - 1) ** 2``.

    Returns
    -------
    numpy.ndarray of shape (m, m)

    Examples
    --------
    >>> agreement_weights(3, weights="linear").tolist()
    [[1.0, 0.5, 0.0], [0.5, 1.0, 0.5], [0.0, 0.5, 1.0]]
    """
    if weights not in KAPPA_WEIGHTS:
        raise ValueError(f"weights must be 'linear' or 'quadratic', got {weights!r}")
    if m < 2:
        raise ValueError(f"a scale needs at least two labels for weighted kappa, got {m}")
    i = np.arange(m, dtype=np.float64)
    distance = np.abs(i[:, None] - i[None, :])
    if weights == "quadratic":
        distance = distance**2
    return 1.0 - distance / distance.max()


def _scale_table(a: Sequence, b: Sequence, labels: Sequence | None) -> np.ndarray:
    a_arr, b_arr = _labels_pair(a, b, ("a", "b"))
    if labels is not None:
        labels = list(labels)
        if len(set(labels)) != len(labels) or len(labels) < 2:
            raise ValueError(f"labels must list each label of the scale once, at least two, got {labels}")
    else:
        labels = sorted(set(a_arr.tolist()) | set(b_arr.tolist()))
    if len(labels) < 2:
        labels = labels + [object()]  # one label used throughout: kappa is undefined, said below
    table, _ = _count_table(a_arr, b_arr, labels)
    return table.astype(np.float64)


def _weighted_kappa_and_se(table: np.ndarray, weights: KappaWeights) -> tuple[float, float]:
    """Weighted kappa of a count table and its large-sample standard error (Fleiss, Cohen and Everitt, 1969)."""
    n = table.sum()
    w = agreement_weights(table.shape[0], weights=weights)
    p = table / n
    row, col = p.sum(axis=1), p.sum(axis=0)
    observed = float((w * p).sum())
    expected = float(row @ w @ col)
    if math.isclose(expected, 1.0, abs_tol=1e-12):
        return math.nan, math.nan
    kappa = (observed - expected) / (1.0 - expected)
    w_row = w @ col  # the mean weight of row i over the second rater's margin
    w_col = row @ w  # the mean weight of column j over the first rater's margin
    spread = (w - (w_row[:, None] + w_col[None, :]) * (1.0 - kappa)) ** 2
    variance = (float((p * spread).sum()) - (kappa - expected * (1.0 - kappa)) ** 2) / (n * (1.0 - expected) ** 2)
    return float(kappa), math.sqrt(max(variance, 0.0))


def weighted_kappa(a: Sequence, b: Sequence, *, weights: KappaWeights, labels: Sequence | None = None) -> float:
    """Return weighted kappa, the chance-corrected agreement of two raters on an ordinal scale.

    Parameters
    ----------
    a, b : sequences of labels, same length
        Labels of the same items by two raters, in the same order.
    weights : {"linear", "quadratic"}
        How partial credit falls with the distance between two labels' positions on the scale.
    labels : sequence, optional
        The scale, in order (``[1, 2, 3, 4, 5]``); a label nobody used still counts. By default
        the labels seen, sorted.

    Returns
    -------
    float
        ``(p_o - p_e) / (1 - p_e)`` on weighted agreement. NaN, with an
        :class:`~evalcore.engine.UndefinedMetricWarning`, when both raters used one and the same label.

    References
    ----------
    Cohen, "Weighted kappa", Psychological Bulletin, 1968.

    Examples
    --------
    >>> people = [5, 4, 4, 2, 1, 3, 5, 2]
    >>> judge = [5, 5, 4, 2, 2, 3, 4, 1]
    >>> round(weighted_kappa(people, judge, weights="linear", labels=[1, 2, 3, 4, 5]), 3)
    0.68
    >>> round(weighted_kappa(people, judge, weights="quadratic", labels=[1, 2, 3, 4, 5]), 3)
    0.871
    """
    table = _scale_table(a, b, labels)
    kappa, _ = _weighted_kappa_and_se(table, weights)
    if math.isnan(kappa):
        warnings.warn(KAPPA_UNDEFINED_REASON, UndefinedMetricWarning, stacklevel=2)
    return kappa


def weighted_kappa_interval(
    a: Sequence,
    b: Sequence,
    *,
    weights: KappaWeights,
    labels: Sequence | None = None,
    confidence: float = 0.95,
) -> KappaEstimate:
    """Return weighted kappa with a Wald interval from its large-sample standard error.

    Parameters
    ----------
    a, b : sequences of labels, same length
        Labels of the same items by two raters, in the same order.
    weights : {"linear", "quadratic"}
        As in :func:`weighted_kappa`.
    labels : sequence, optional
        The scale, in order; by default the labels seen, sorted.
    confidence : float, default 0.95
        Level of the two-sided interval.

    Returns
    -------
    KappaEstimate
        ``estimate -/+ z * se``, with ``se`` the large-sample standard error of Fleiss, Cohen and
        Everitt (1969), the same as statsmodels' ``cohens_kappa(table, wt=...)``. Every field is
        NaN, with ``undefined_reason`` set, when kappa is undefined.

    References
    ----------
    Fleiss, Cohen and Everitt, "Large sample standard errors of kappa and weighted kappa",
    Psychological Bulletin, 1969.

    Examples
    --------
    >>> people = [5, 4, 4, 2, 1, 3, 5, 2] * 10
    >>> judge = [5, 5, 4, 2, 2, 3, 4, 1] * 10
    >>> est = weighted_kappa_interval(people, judge, weights="quadratic", labels=[1, 2, 3, 4, 5])
    >>> round(est.estimate, 3), round(est.se, 3), round(est.low, 3)
    (0.871, 0.012, 0.847)
    """
    confidence = check_probability(confidence, "confidence")
    table = _scale_table(a, b, labels)
    kappa, se = _weighted_kappa_and_se(table, weights)
    if math.isnan(kappa):
        nan = math.nan
        return KappaEstimate(nan, nan, nan, se=nan, confidence=confidence, undefined_reason=KAPPA_UNDEFINED_REASON)
    z = z_score(confidence)
    return KappaEstimate(kappa, kappa - z * se, kappa + z * se, se=se, confidence=confidence)
