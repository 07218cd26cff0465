"""Agreement among several annotators: Krippendorff's alpha (with a bootstrap interval) and pairwise Cohen's kappa.

Annotators label overlapping items; before their labels become the reference the judge is
measured against, check they agree with each other: the human ceiling the judge is compared
with. Raw agreement sits next to its chance baseline, the agreement of always answering the
majority label (:func:`majority_baseline`).
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

import numpy as np

from ._interval import Interval
from ._percentiles import percentile_positions
from ._validation import check_positive_int, check_probability
from .agreement import UndefinedMetricWarning, cohen_kappa

AlphaLevel = Literal["nominal", "ordinal", "interval"]
#: The levels of measurement Krippendorff's alpha is computed at.
ALPHA_LEVELS = ("nominal", "ordinal", "interval")
ALPHA_UNDEFINED_REASON = (
    "Krippendorff's alpha is undefined: it needs items labelled at least twice and at least two label values"
)
#: Bootstrap resamples computed at once (bounds the memory of the unit weights).
_CHUNK = 256


def krippendorff_alpha(units: Sequence[Sequence[Hashable]]) -> float:
    """Return Krippendorff's alpha for nominal labels.

    Parameters
    ----------
    units : sequence of sequences
        For each item, the labels it received (any number of annotators; missing labels are
        simply absent). Items with fewer than two labels carry no information and are skipped.

    Returns
    -------
    float
        1 is perfect agreement, 0 agreement at chance level. NaN (with an
        :class:`UndefinedMetricWarning`) when there is no pairable item or only one label value.

    References
    ----------
    Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011.

    Examples
    --------
    >>> round(krippendorff_alpha([["a", "a"], ["b", "b"], ["a", "b"], ["a", "a", "a"]]), 3)
    0.556
    """
    pairable = [list(u) for u in units if len(u) >= 2]
    values = sorted({v for u in pairable for v in u}, key=lambda v: (str(type(v)), v))
    if not pairable or len(values) < 2:
        warnings.warn(
            "Krippendorff's alpha is undefined: it needs items labelled at least twice and at least two label values",
            UndefinedMetricWarning,
            stacklevel=2,
        )
        return math.nan
    index = {v: i for i, v in enumerate(values)}
    m = len(values)
    coincidence = np.zeros((m, m))
    for unit in pairable:
        counts = np.bincount([index[v] for v in unit], minlength=m).astype(float)
        # pairs of different annotators' labels within the unit, weighted by 1 / (m_u - 1)
        coincidence += (np.outer(counts, counts) - np.diag(counts)) / (len(unit) - 1)
    n_c = coincidence.sum(axis=1)
    n = n_c.sum()
    observed = coincidence.sum() - np.trace(coincidence)
    expected = (n_c.sum() ** 2 - (n_c**2).sum()) / (n - 1)
    if expected == 0:
        warnings.warn(
            "Krippendorff's alpha is undefined: every label has the same value", UndefinedMetricWarning, stacklevel=2
        )
        return math.nan
    return float(1.0 - observed / expected)


def pairwise_kappa(labels: Mapping[Hashable, Mapping[Hashable, Hashable]], *, min_items: int = 1) -> list[dict]:
    """Return Cohen's kappa for every pair of annotators on the items both labelled.

    Parameters
    ----------
    labels : mapping annotator -> (mapping item -> label)
        Each annotator's labels by item.
    min_items : int, default 1
        Pairs sharing fewer items are left out.

    Returns
    -------
    list of dict
        ``{"a", "b", "n", "agreement", "kappa"}`` per pair, kappa NaN when undefined.

    Examples
    --------
    >>> pairs = pairwise_kappa({"ann": {1: "a", 2: "b", 3: "a"}, "bob": {1: "a", 2: "b", 3: "b"}})
    >>> [(p["a"], p["b"], p["n"], round(p["kappa"], 2)) for p in pairs]
    [('ann', 'bob', 3, 0.4)]
    """
    out = []
    for a, b in combinations(sorted(labels, key=str), 2):
        shared = sorted(set(labels[a]) & set(labels[b]), key=str)
        if len(shared) < min_items or not shared:
            continue
        la = [labels[a][i] for i in shared]
        lb = [labels[b][i] for i in shared]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            kappa = cohen_kappa(la, lb)
        out.append(
            {
                "a": a,
                "b": b,
                "n": len(shared),
                "agreement": sum(x == y for x, y in zip(la, lb)) / len(shared),
                "kappa": kappa,
            }
        )
    return out


@dataclass(frozen=True, kw_only=True)
class AlphaEstimate(Interval):
    """Krippendorff's alpha with a percentile bootstrap interval over units (items).

    Parameters
    ----------
    estimate : float
        Alpha on the data; NaN when undefined.
    low, high : float
        Bounds of the percentile interval over resampled units (NaN when undefined).
    level : {"nominal", "ordinal", "interval"}
        The level of measurement (the distance between two labels).
    units : int
        Items labelled at least twice (the only ones alpha uses).
    pairable_values : int
        Labels on those items.
    resamples : int
        Bootstrap resamples drawn.
    seed : int
        Seed of the random generator.
    confidence : float
        Level of the two-sided interval.
    undefined_reason : str or None, default None
        Why alpha is undefined, when it is.

    Examples
    --------
    >>> est = AlphaEstimate(0.6, 0.4, 0.75, level="nominal", units=50, pairable_values=100,
    ...                     resamples=2000, seed=7, confidence=0.95)
    >>> alpha, low, high = est
    >>> alpha, est.units
    (0.6, 50)
    """

    level: str
    units: int
    pairable_values: int
    resamples: int
    seed: int
    confidence: float
    undefined_reason: str | None = None


def _unit_coincidences(units: Sequence[Sequence[Hashable]], level: str) -> tuple[np.ndarray, list]:
    """Each pairable unit's coincidence matrix, shape (units, m, m), and the sorted label values."""
    pairable = [list(u) for u in units if len(u) >= 2]
    if level == "nominal":
        values = sorted({v for u in pairable for v in u}, key=lambda v: (str(type(v)), v))
    else:
        values = sorted({v for u in pairable for v in u})
        if level == "interval":
            bad = [v for v in values if isinstance(v, bool) or not isinstance(v, (int, float, np.number))]
            if bad:
                raise ValueError(f"interval alpha needs numeric labels, got {bad[0]!r}")
    index = {v: i for i, v in enumerate(values)}
    m = len(values)
    out = np.zeros((len(pairable), m, m))
    for k, unit in enumerate(pairable):
        counts = np.bincount([index[v] for v in unit], minlength=m).astype(float)
        # pairs of different annotators' labels within the unit, weighted by 1 / (m_u - 1)
        out[k] = (np.outer(counts, counts) - np.diag(counts)) / (len(unit) - 1)
    return out, values


def _squared_distances(level: str, values: list, marginals: np.ndarray) -> np.ndarray:
    """Krippendorff's squared distances between label values, shape (..., m, m) for marginals (..., m)."""
    m = len(values)
    if level == "nominal":
        return np.broadcast_to(1.0 - np.eye(m), marginals.shape[:-1] + (m, m))
    if level == "interval":
        v = np.asarray(values, dtype=float)
        return np.broadcast_to((v[:, None] - v[None, :]) ** 2, marginals.shape[:-1] + (m, m))
    # ordinal: the marginal mass from one value to the other, each end counted half
    cumulative = np.cumsum(marginals, axis=-1)
    i = np.arange(m)
    lo, hi = np.minimum(i[:, None], i[None, :]), np.maximum(i[:, None], i[None, :])
    between = cumulative[..., hi] - cumulative[..., lo] + marginals[..., lo]
    ends = (marginals[..., :, None] + marginals[..., None, :]) / 2
    return (between - ends) ** 2


def _alpha(coincidence: np.ndarray, level: str, values: list) -> np.ndarray:
    """Alpha of coincidence matrices, shape (..., m, m) -> (...); NaN where undefined."""
    marginals = coincidence.sum(axis=-1)
    n = marginals.sum(axis=-1)
    delta = _squared_distances(level, values, marginals)
    observed = (coincidence * delta).sum(axis=(-2, -1))
    expected = np.einsum("...c,...k,...ck->...", marginals, marginals, delta)
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = 1.0 - (n - 1) * observed / expected
    return np.where(expected > 0, alpha, np.nan)


def krippendorff_alpha_interval(
    units: Sequence[Sequence[Hashable]],
    *,
    level: AlphaLevel = "nominal",
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 7,
) -> AlphaEstimate:
    """Return Krippendorff's alpha at a level of measurement, with a percentile bootstrap interval over units.

    The interval resamples units (items) with replacement, each with all its labels, and recomputes
    alpha: items are the sampled thing, and an item's labels depend on each other. (Hayes and
    Krippendorff's 2007 bootstrap resamples pairs of labels instead, which treats the pairs of
    one item as independent and is known to be too narrow when items carry many labels; a unit
    bootstrap is the standard, Zapf et al. 2016.)

    Parameters
    ----------
    units : sequence of sequences
        For each item, the labels it received (any number of annotators; items with fewer than
        two labels carry no information and are skipped).
    level : {"nominal", "ordinal", "interval"}, default "nominal"
        How far apart two labels are: different or not (nominal), by the labels' ranks weighted
        by how often values between them occur (ordinal, a 1-5 scale), or by the squared
        difference of their values (interval).
    confidence : float, default 0.95
        Level of the two-sided interval.
    resamples : int, default 2000
        Bootstrap resamples.
    seed : int, default 7
        Seed of the random generator.

    Returns
    -------
    AlphaEstimate
        ``estimate`` is alpha (the same as the ``krippendorff`` package's), ``low`` and ``high``
        the percentile bounds over resamples where alpha is defined; NaN with
        ``undefined_reason`` when alpha is undefined.

    References
    ----------
    Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011; Hayes and Krippendorff,
    "Answering the call for a standard reliability measure for coding data", 2007; Zapf et al.,
    "Measuring inter-rater reliability for nominal data", BMC Medical Research Methodology, 2016.

    Examples
    --------
    >>> units = [[1, 1, 2], [3, 3], [4, 4, 4], [2, 3], [5, 5], [1, 2], [4, 5, 4], [2, 2]] * 5
    >>> est = krippendorff_alpha_interval(units, level="ordinal", resamples=500)
    >>> round(est.estimate, 3), est.low < est.estimate < est.high, est.units
    (0.884, True, 40)
    """
    if level not in ALPHA_LEVELS:
        raise ValueError(f"level must be one of {ALPHA_LEVELS}, got {level!r}")
    confidence = check_probability(confidence, "confidence")
    resamples = check_positive_int(resamples, "resamples")
    if isinstance(units, (str, bytes)) or isinstance(units, Mapping):
        raise TypeError("units must be a sequence of items, each a sequence of the labels it received")
    per_unit, values = _unit_coincidences(units, level)
    pairable_values = int(per_unit.sum())
    nan = math.nan

    def result(estimate: float, low: float, high: float, reason: str | None) -> AlphaEstimate:
        return AlphaEstimate(estimate, low, high, level=level, units=len(per_unit), pairable_values=pairable_values,
                             resamples=resamples, seed=seed, confidence=confidence, undefined_reason=reason)  # fmt: skip

    if len(per_unit) == 0 or len(values) < 2:
        return result(nan, nan, nan, ALPHA_UNDEFINED_REASON)
    estimate = float(_alpha(per_unit.sum(axis=0), level, values))
    if math.isnan(estimate):
        return result(nan, nan, nan, ALPHA_UNDEFINED_REASON)
    rng = np.random.default_rng(seed)
    flat = per_unit.reshape(len(per_unit), -1)
    m = len(values)
    draws = []
    for start in range(0, resamples, _CHUNK):
        size = min(_CHUNK, resamples - start)
        weights = rng.multinomial(len(per_unit), np.full(len(per_unit), 1.0 / len(per_unit)), size=size)
        draws.append(_alpha((weights @ flat).reshape(size, m, m), level, values))
    alphas = np.sort(np.concatenate(draws))
    alphas = alphas[np.isfinite(alphas)]
    if alphas.size == 0:
        return result(estimate, nan, nan, None)
    low_pos, high_pos = percentile_positions(alphas.size, confidence=confidence)
    return result(estimate, float(alphas[low_pos]), float(alphas[high_pos]), None)


def majority_baseline(labels: Sequence[Hashable]) -> float:
    """Return the agreement of always answering the majority label: the chance baseline for raw agreement.

    A judge that passes everything agrees with people on every item they pass; when people pass
    90 % of items, 90 % raw agreement is no evidence at all. Show this next to raw agreement.

    Parameters
    ----------
    labels : sequence of labels
        People's labels of the items (their final label per item).

    Returns
    -------
    float
        The share of the most frequent label.

    Examples
    --------
    >>> majority_baseline(["supported"] * 150 + ["unsupported"] * 50)
    0.75
    """
    if isinstance(labels, (str, bytes)):
        raise TypeError("labels must be a sequence of labels, not a string")
    values = list(labels)
    if not values:
        raise ValueError("labels is empty: there is no majority label")
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in values):
        raise ValueError("labels has a missing label; give only the items people labelled")
    return Counter(values).most_common(1)[0][1] / len(values)
