"""A judge's biases as flip rates under perturbation, beyond its own noise (the placebo).

A bias probe re-asks the judge about the same claims with something changed that should not
matter (a longer answer, a confident suffix, the context chunks in another order). For each
claim the judge gave a *baseline* verdict, a verdict under the *probe* and a verdict under the
*placebo* (the unchanged prompt sent again with another seed or cache key, which measures how
often the judge changes its mind for no reason at all). In one direction, say toward
"supported", the claims at risk are those the baseline called unsupported; among them

* the probe's flip rate is the share the probe turned supported;
* the placebo's flip rate is the share the placebo turned supported;
* the flip rate *beyond the placebo* is their difference, the part of the probe's flips that
  the judge's own noise does not explain.

Both rates are measured on the same claims, so the difference is a difference of paired
proportions: per claim ``e = probe flipped - placebo flipped`` is -1, 0 or 1 and only the
discordant claims count (``c`` claims where only the probe flipped, ``b`` where only the placebo
did). Claims of one answer share its context and its wording, so their flips are correlated:
the analysis is clustered by item.

The interval (why this one). Tango's score interval for paired proportions (the gate's interval
for pass/fail metrics, :func:`~evalcore.engine.paired_proportions.tango_interval`) is never
degenerate (no flip at all on 100 claims still leaves an upper bound of about 3.7 points) and keeps
its level with few discordant pairs, where a Wald interval or a percentile bootstrap collapse to a
point. It assumes independent claims; with clusters we divide the counts by the design effect
(Rao and Scott's correction for clustered binary data): ``deff`` is the cluster-robust variance
of the mean of ``e`` (the sandwich over items, with the ``G / (G - 1)`` small-sample factor) over
its variance as if claims were independent, floored at 1 so clustering never narrows the
interval. With one claim an item ``deff`` is exactly 1 and the interval is Tango's. A cluster
bootstrap would be the other choice; it has no answer when no claim flipped (every resample is
0), and that is the common case for a good judge.

The test. Each (probe, direction) gets a one-sided p-value for "the probe flips more than the
placebo": the score statistic at 0, which is McNemar's z, divided by ``sqrt(deff)`` (the
clustered McNemar test of Durkalski et al. 2003 in its design-effect form). The family is every
(probe, direction) of the battery; Holm's step-down holds the chance that *any* harmless probe is
reported as a bias at ``alpha`` whatever the dependence between probes (they share the claims
and the placebo). Benjamini-Hochberg would control the share of false alarms among the alarms,
which suits screening many probes for follow-up; here one alarm makes the judge untrusted for
gating, so the family-wise error is the one to hold, as the gate does (:mod:`.multiplicity`).

A probe *blocks* (the judge is not to gate) when its flip rate beyond the placebo is significant
after the correction *and* its estimate exceeds the owner's bar: a tiny but certain bias does not
block, and neither does a large estimate that the data cannot tell from noise (it is reported as
inconclusive, with the interval).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from ._interval import Interval
from ._validation import check_probability
from .multiplicity import adjust
from .paired_proportions import tango_score
from .proportions import z_score

TO_SUPPORTED, TO_UNSUPPORTED = "to_supported", "to_unsupported"
#: The directions a verdict can flip; toward "supported" is the dangerous one for faithfulness.
DIRECTIONS: tuple[str, ...] = (TO_SUPPORTED, TO_UNSUPPORTED)
_BISECTIONS = 80


@dataclass(frozen=True, kw_only=True)
class FlipInterval(Interval):
    """A probe's flip rate beyond the placebo's, in one direction, with its clustered interval.

    Parameters
    ----------
    estimate : float
        ``flip_rate - placebo_rate``.
    low, high : float
        Tango's score interval on the design-effect-adjusted counts.
    direction : str
        ``"to_supported"`` (claims the baseline called unsupported) or ``"to_unsupported"``.
    n : int
        Claims at risk (the baseline verdict was the other one).
    clusters : int
        Items those claims belong to.
    flips, placebo_flips : int
        Claims at risk the probe (the placebo) flipped.
    only_probe, only_placebo : int
        Discordant claims: flipped by the probe only (``c``), by the placebo only (``b``).
    design_effect : float
        Clustered over independent variance of the difference, at least 1 (1 when nothing is discordant).
    p_value : float
        One-sided p-value of "the probe flips more than the placebo" (clustered McNemar); NaN when ``n`` is 0.
    confidence : float
        Level of the two-sided interval.
    """

    direction: str
    n: int
    clusters: int
    flips: int
    placebo_flips: int
    only_probe: int
    only_placebo: int
    design_effect: float
    p_value: float
    confidence: float = 0.95

    @property
    def flip_rate(self) -> float:
        return self.flips / self.n if self.n else math.nan

    @property
    def placebo_rate(self) -> float:
        return self.placebo_flips / self.n if self.n else math.nan


def _as_verdicts(values: object, name: str, size: int | None = None) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array.dtype != bool:
        if not np.all(np.isin(array, (0, 1))):
            raise ValueError(f"{name} must hold verdicts (True/False or 1/0)")
        array = array.astype(bool)
    if size is not None and array.size != size:
        raise ValueError(f"{name} has {array.size} verdicts, the baseline {size}: give one per claim, in one order")
    return array


def design_effect(differences: np.ndarray, clusters: np.ndarray) -> float:
    """Return the cluster-robust variance of ``mean(differences)`` over its independent-claims variance, at least 1.

    Parameters
    ----------
    differences : numpy.ndarray
        Per claim, ``probe flipped - placebo flipped`` (-1, 0 or 1).
    clusters : numpy.ndarray
        Per claim, its item (any hashable codes).

    Returns
    -------
    float
        ``max(1, V_cluster / V_independent)`` where ``V_cluster = G / (G - 1) * sum_g (sum_{j in g} (e_j - d))^2 / N^2``
        and ``V_independent = N / (N - 1) * sum_j (e_j - d)^2 / N^2``; 1 when either is 0 or undefined.

    Examples
    --------
    >>> design_effect(np.array([1, 1, 0, 0]), np.array([0, 0, 1, 1]))  # flips come in pairs
    3.0
    """
    e = np.asarray(differences, dtype=float)
    n = e.size
    _, codes = np.unique(np.asarray(clusters), return_inverse=True)
    groups = int(codes.max()) + 1 if n else 0
    if n < 2 or groups < 2:
        return 1.0
    residual = e - e.mean()
    independent = n / (n - 1) * float(residual @ residual)
    if independent <= 0:
        return 1.0
    sums = np.bincount(codes, weights=residual, minlength=groups)
    clustered = groups / (groups - 1) * float(sums @ sums)
    return max(1.0, clustered / independent)


def _score_root(b: float, c: float, n: float, target: float, lo: float, hi: float) -> float:
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        if tango_score(b, c, n, mid) > target:  # type: ignore[arg-type]
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def adjusted_tango(b: float, c: float, n: float, *, confidence: float = 0.95) -> tuple[float, float]:
    """Return Tango's score interval ``(low, high)`` for ``(c - b) / n`` with possibly fractional counts.

    Examples
    --------
    >>> [round(x, 4) for x in adjusted_tango(20, 7, 300)]  # integers: Tango's own interval
    [-0.0805, -0.0101]
    """
    z = z_score(confidence)
    estimate = (c - b) / n
    edge = 1.0 - 1e-12
    low = -1.0 if tango_score(b, c, n, -edge) <= z else _score_root(b, c, n, z, -edge, estimate)  # type: ignore[arg-type]
    high = 1.0 if tango_score(b, c, n, edge) >= -z else _score_root(b, c, n, -z, estimate, edge)  # type: ignore[arg-type]
    return min(low, estimate), max(high, estimate)


def flip_beyond_placebo(
    baseline: object,
    probe: object,
    placebo: object,
    clusters: object,
    *,
    direction: str = TO_SUPPORTED,
    confidence: float = 0.95,
) -> FlipInterval:
    """Return the probe's flip rate beyond the placebo's in one direction, with an interval clustered by item.

    Parameters
    ----------
    baseline, probe, placebo : array-like of bool, shape (n_claims,)
        Per claim, the judge's verdict (True: supported) on the unchanged prompt, under the probe and
        under the placebo (the unchanged prompt re-sent with another seed).
    clusters : array-like, shape (n_claims,)
        Per claim, the item it belongs to (claims of one answer share one).
    direction : {"to_supported", "to_unsupported"}, default "to_supported"
        Which flips to count: unsupported claims turned supported (the dangerous one for faithfulness), or the
        other way round.
    confidence : float, default 0.95
        Level of the two-sided interval.

    Returns
    -------
    FlipInterval

    References
    ----------
    Tango, T. (1998). Equivalence test and confidence interval for the difference in proportions for the
    paired-sample design. Statistics in Medicine 17, 891-908.
    Rao, J. N. K. and Scott, A. J. (1992). A simple method for the analysis of clustered binary data.
    Biometrics 48, 577-585.
    Durkalski, V. L. et al. (2003). A clustered McNemar's test. Statistics in Medicine 22, 2417-2428.

    Examples
    --------
    >>> base = [False] * 10 + [True] * 10
    >>> probe = [True, True, True] + [False] * 7 + [True] * 10
    >>> flips = flip_beyond_placebo(base, probe, base, list(range(20)))
    >>> flips.n, flips.flips, round(flips.estimate, 2), round(flips.p_value, 4)
    (10, 3, 0.3, 0.0416)
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    confidence = check_probability(confidence, "confidence")
    base = _as_verdicts(baseline, "baseline")
    under_probe = _as_verdicts(probe, "probe", base.size)
    under_placebo = _as_verdicts(placebo, "placebo", base.size)
    groups = np.asarray(clusters)
    if groups.shape != base.shape:
        raise ValueError(f"clusters has {groups.size} entries, the baseline {base.size}: give each claim its item")
    at_risk = ~base if direction == TO_SUPPORTED else base
    flipped = (under_probe != base)[at_risk]
    placebo_flipped = (under_placebo != base)[at_risk]
    groups = groups[at_risk]
    n = int(at_risk.sum())
    clusters_at_risk = int(np.unique(groups).size)
    c = int(np.count_nonzero(flipped & ~placebo_flipped))
    b = int(np.count_nonzero(placebo_flipped & ~flipped))
    common = dict(
        direction=direction,
        n=n,
        clusters=clusters_at_risk,
        flips=int(flipped.sum()),
        placebo_flips=int(placebo_flipped.sum()),
        only_probe=c,
        only_placebo=b,
        confidence=confidence,
    )
    if n == 0:
        return FlipInterval(
            estimate=math.nan, low=math.nan, high=math.nan, design_effect=1.0, p_value=math.nan, **common
        )
    deff = design_effect(flipped.astype(float) - placebo_flipped.astype(float), groups)
    low, high = adjusted_tango(b / deff, c / deff, n / deff, confidence=confidence)
    z = tango_score(b / deff, c / deff, n / deff, 0.0)  # type: ignore[arg-type]
    return FlipInterval(estimate=(c - b) / n, low=low, high=high, design_effect=deff, p_value=float(ndtr(-z)), **common)


@dataclass(frozen=True, kw_only=True)
class ProbeFinding:
    """One (probe, direction) of a battery: its flips beyond the placebo, adjusted p-value and decision.

    Parameters
    ----------
    probe : str
        The probe's name.
    flips : FlipInterval
        The flip rate beyond the placebo with its interval.
    adjusted_p : float
        The p-value after the correction across every (probe, direction) of the battery.
    significant : bool
        ``adjusted_p <= alpha``.
    exceeds_bar : bool
        The estimate is above the owner's bar.
    blocks : bool
        Both: the judge is not fit to gate.
    bar : float
        The owner's bar it was decided against.
    """

    probe: str
    flips: FlipInterval
    adjusted_p: float
    significant: bool
    exceeds_bar: bool
    blocks: bool

    bar: float = 0.05

    @property
    def inconclusive(self) -> bool:
        """Not shown to be a bias above the bar, but the interval reaches above it: more claims would tell."""
        return not self.blocks and bool(self.flips.high > self.bar)


@dataclass(frozen=True, kw_only=True)
class BatteryResult:
    """Every (probe, direction) of a battery, the correction and the overall decision.

    Parameters
    ----------
    findings : tuple of ProbeFinding
        In the order the probes were given, each probe's directions in :data:`DIRECTIONS` order.
    bar : float
        The owner's bar on the flip rate beyond the placebo.
    alpha : float
        Family-wise level of the correction.
    correction : str
        ``"holm"`` or ``"none"``.
    family : int
        Tested (probe, direction) pairs (those with claims at risk).
    """

    findings: tuple[ProbeFinding, ...]
    bar: float
    alpha: float
    correction: str
    family: int

    @property
    def blocks(self) -> bool:
        return any(f.blocks for f in self.findings)

    @property
    def blocking(self) -> tuple[ProbeFinding, ...]:
        return tuple(f for f in self.findings if f.blocks)


def bias_battery(
    baseline: object,
    probes: Mapping[str, object],
    placebo: object,
    clusters: object,
    *,
    bar: float = 0.05,
    alpha: float = 0.05,
    correction: str = "holm",
    confidence: float = 0.95,
    directions: tuple[str, ...] = DIRECTIONS,
    applied: Mapping[str, object] | None = None,
) -> BatteryResult:
    """Return every probe's flip rate beyond the placebo, corrected for the number of (probe, direction) tested.

    Parameters
    ----------
    baseline : array-like of bool, shape (n_claims,)
        The judge's verdicts on the unchanged prompts.
    probes : mapping of str to array-like of bool
        Per probe (by name), its verdicts on the same claims in the same order.
    placebo : array-like of bool, shape (n_claims,)
        The verdicts on the unchanged prompts re-sent with another seed.
    clusters : array-like, shape (n_claims,)
        Per claim, its item.
    bar : float, default 0.05
        A probe blocks when its flip rate beyond the placebo is significant and above this.
    alpha : float, default 0.05
        Family-wise level.
    correction : {"holm", "none"}, default "holm"
        Holm's step-down over every tested (probe, direction), or none.
    confidence : float, default 0.95
        Level of each interval (unadjusted: the correction applies to the decisions).
    directions : tuple of str, default both
        The directions tested.
    applied : mapping of str to array-like of bool, optional
        Per probe, the claims it changed (and the judge answered): the others are left out of that probe's
        flips. Default: every claim, for every probe.

    Returns
    -------
    BatteryResult

    Examples
    --------
    >>> base = np.array([False] * 40 + [True] * 40)
    >>> suffix = base.copy(); suffix[:12] = True
    >>> result = bias_battery(base, {"authority": suffix, "padding": base}, base, np.arange(80))
    >>> [(f.probe, f.flips.direction, f.blocks) for f in result.findings if f.blocks]
    [('authority', 'to_supported', True)]
    """
    if not 0 <= bar < 1:
        raise ValueError(f"bar must be a flip rate in [0, 1), got {bar!r}")
    alpha = check_probability(alpha, "alpha")
    if not probes:
        raise ValueError("give at least one probe")
    for direction in directions:
        if direction not in DIRECTIONS:
            raise ValueError(f"directions must be among {DIRECTIONS}, got {direction!r}")
    base = _as_verdicts(baseline, "baseline")
    under_placebo = _as_verdicts(placebo, "placebo", base.size)
    groups = np.asarray(clusters)
    cells = []
    for name, verdicts in probes.items():
        under_probe = _as_verdicts(verdicts, f"probe {name}", base.size)
        keep = np.ones(base.size, dtype=bool)
        if applied is not None and name in applied:
            keep = _as_verdicts(applied[name], f"applied[{name!r}]", base.size)
        if groups.shape != base.shape:
            raise ValueError(f"clusters has {groups.size} entries, the baseline {base.size}: give each claim its item")
        for d in directions:
            flips = flip_beyond_placebo(
                base[keep], under_probe[keep], under_placebo[keep], groups[keep], direction=d, confidence=confidence
            )
            cells.append((name, flips))
    adjusted = adjust([cell.p_value for _, cell in cells], correction=correction)
    findings = []
    for (name, cell), p in zip(cells, adjusted):
        significant = bool(p <= alpha)
        exceeds = bool(cell.estimate > bar)
        findings.append(
            ProbeFinding(
                probe=name,
                flips=cell,
                adjusted_p=float(p),
                significant=significant,
                exceeds_bar=exceeds,
                blocks=significant and exceeds,
                bar=bar,
            )
        )
    family = int(np.count_nonzero(~np.isnan([cell.p_value for _, cell in cells])))
    return BatteryResult(findings=tuple(findings), bar=bar, alpha=alpha, correction=correction, family=family)
