"""Agreement among several annotators: Krippendorff's alpha and pairwise Cohen's kappa.

Annotators label overlapping items; before their labels become the reference the judge is
measured against, check they agree with each other.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Mapping, Sequence
from itertools import combinations

import numpy as np

from .agreement import UndefinedMetricWarning, cohen_kappa


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
