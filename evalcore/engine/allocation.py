"""Labels spent where they shrink the interval most: Neyman allocation over strata, and the next labels to collect.

A stratified estimate's variance is ``sum_h W_h**2 (1 - n_h / N_h) S_h**2 / n_h``, with ``W_h`` the
stratum's share of the run and ``S_h`` the spread of what is estimated within it. For a fixed
number of labels it is smallest when ``n_h`` is proportional to ``N_h * S_h`` (Neyman 1934). For a
prediction-powered estimate ``S_h`` is the spread of people's disagreement with the judge in the
stratum: a pass/fail judge stratified by its verdicts has ``S_h = sqrt(d_h (1 - d_h))`` with ``d_h``
the share of the stratum's items where people disagree with it, so labels go where the judge is
least reliable (active statistical inference, Zrnic and Candès 2024, with strata as the design).

Each stratum's inclusion probability ``n_h / N_h`` is known and recorded, and the estimators weight
by the strata (inverse-probability weights), so inference stays valid however unequal the rates.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass

from ._validation import check_positive_int, check_probability
from .proportions import z_score
from .sampling import _largest_remainder


def _check(strata: Mapping[Hashable, int], spread: Mapping[Hashable, float]) -> dict[Hashable, int]:
    out = {}
    for key, count in strata.items():
        out[key] = check_positive_int(count, f"size of stratum {key!r}", allow_zero=True)
        if key not in spread:
            raise ValueError(f"no spread (disagreement) given for stratum {key!r}")
        value = spread[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError(f"the spread of stratum {key!r} must be a number >= 0, got {value!r}")
    if not sum(out.values()):
        raise ValueError("the strata hold no items")
    return out


def disagreement_spread(disagreement: float) -> float:
    """Return the standard deviation of a pass/fail disagreement indicator, ``sqrt(d (1 - d))``.

    Parameters
    ----------
    disagreement : float
        The share of a stratum's items where people disagree with the judge, in [0, 1].

    Returns
    -------
    float

    Examples
    --------
    >>> round(disagreement_spread(0.134), 3)
    0.341
    """
    d = check_probability(disagreement, "disagreement", open_interval=False)
    return math.sqrt(d * (1 - d))


def neyman_allocation(
    strata: Mapping[Hashable, int], size: int, *, spread: Mapping[Hashable, float], minimum: int = 2
) -> dict[Hashable, int]:
    """Return how many items to label in each stratum so a stratified estimate's interval is narrowest.

    Parameters
    ----------
    strata : mapping stratum -> int
        Items in each stratum of the run.
    size : int
        Labels to spend in all (at or above the run's items: every item).
    spread : mapping stratum -> float
        The within-stratum standard deviation of people's disagreement with the judge (see
        :func:`disagreement_spread`); a guess from assumptions or a pilot's labels.
    minimum : int, default 2
        Least items per non-empty stratum (a stratum's variance needs two), when the size allows.

    Returns
    -------
    dict stratum -> int
        Never more than a stratum holds; the counts add up to ``size``.

    References
    ----------
    Neyman, "On the two different aspects of the representative method", 1934; Cochran, "Sampling
    Techniques", 1977, 5.5.

    Examples
    --------
    The spec's judge on a run of 2,000: it passes 1,640 answers (13 % of them people fail) and fails
    360 (61 % of them people pass):

    >>> neyman_allocation({"passed": 1640, "failed": 360}, 200,
    ...                   spread={"passed": disagreement_spread(0.134), "failed": disagreement_spread(0.61)})
    {'passed': 152, 'failed': 48}
    """
    sizes = _check(strata, spread)
    size = check_positive_int(size, "size")
    minimum = check_positive_int(minimum, "minimum", allow_zero=True)
    if size >= sum(sizes.values()):
        return dict(sizes)
    if sum(min(n, minimum) for n in sizes.values()) >= size:
        return _largest_remainder(sizes, size)  # type: ignore[return-value]
    fixed: dict[Hashable, int] = {k: 0 for k, n in sizes.items() if n == 0}
    while True:  # strata at a bound (all of it, or the minimum) are fixed; the rest share the rest by N_h S_h
        free = [k for k in sizes if k not in fixed]
        budget = size - sum(fixed.values())
        score = {k: sizes[k] * spread[k] for k in free}
        if not any(score.values()):  # nothing varies: in proportion to the strata
            score = {k: float(sizes[k]) for k in free}
        total = sum(score.values())
        target = {k: budget * v / total for k, v in score.items()}
        over = [k for k in free if target[k] >= sizes[k]]
        under = [k for k in free if target[k] < min(minimum, sizes[k])]
        if not over and not under:
            break
        for k in over:
            fixed[k] = sizes[k]
        for k in under if not over else []:
            fixed[k] = min(minimum, sizes[k])
    out = dict(fixed)
    out.update({k: math.floor(target[k]) for k in free})
    by_remainder = sorted(free, key=lambda k: (-(target[k] - math.floor(target[k])), str(k)))
    for k in by_remainder[: budget - sum(out[k] for k in free)]:
        out[k] += 1
    return {k: out[k] for k in sizes}


@dataclass(frozen=True, kw_only=True)
class NextLabels:
    """Where the next labels shrink the interval most, stratum by stratum.

    Parameters
    ----------
    extra : dict stratum -> int
        Labels to add in each stratum (only strata that get some).
    half_width_before, half_width_after : float
        The predicted half-width of the stratified estimate now and with the extra labels.
    confidence : float
        Level of the interval.

    Examples
    --------
    >>> plan = next_labels({"passed": 1640, "failed": 360}, labelled={"passed": 50, "failed": 50}, extra=30,
    ...                    spread={"passed": 0.34, "failed": 0.49})
    >>> plan.extra, round(plan.half_width_before, 3), round(plan.half_width_after, 3)
    ({'passed': 30}, 0.079, 0.064)
    """

    extra: dict
    half_width_before: float
    half_width_after: float
    confidence: float

    def in_words(self, *, unit: str = "items", names: Mapping[Hashable, str] | None = None) -> str:
        """The advice as a sentence: "label 30 more answers the judge passed on numeric questions"."""
        if not self.extra:
            return "more labels would not narrow the interval: every stratum is labelled whole"
        parts = [f"{n} more {unit} {(names or {}).get(k, f'in {k}')}" for k, n in self.extra.items()]
        return (
            f"label {', '.join(parts)}: plus or minus {100 * self.half_width_after:.1f} points instead of "
            f"{100 * self.half_width_before:.1f}"
        )


def _half_width(sizes, labelled, spread, z):
    total = sum(sizes.values())
    variance = 0.0
    for k, big_n in sizes.items():
        n = labelled.get(k, 0)
        if big_n and n:
            variance += (big_n / total) ** 2 * max(0.0, 1 - n / big_n) * spread[k] ** 2 / n
        elif big_n:
            return math.inf
    return z * math.sqrt(variance)


def next_labels(
    strata: Mapping[Hashable, int],
    *,
    labelled: Mapping[Hashable, int],
    spread: Mapping[Hashable, float],
    extra: int,
    confidence: float = 0.95,
) -> NextLabels:
    """Return where ``extra`` more labels shrink a stratified estimate's interval most (one at a time, greedily).

    Each label goes to the stratum whose variance term ``W_h**2 (1 - n_h / N_h) S_h**2 / n_h``
    falls most by one more label; greedy is optimal here because each term is convex in ``n_h``.

    Parameters
    ----------
    strata : mapping stratum -> int
        Items in each stratum of the run.
    labelled : mapping stratum -> int
        Items labelled so far in each.
    spread : mapping stratum -> float
        Within-stratum standard deviation of people's disagreement with the judge (as measured).
    extra : int
        Labels to add.
    confidence : float, default 0.95
        Level of the interval whose half-width is reported.

    Returns
    -------
    NextLabels

    Examples
    --------
    >>> next_labels({"a": 1000, "b": 1000}, labelled={"a": 10, "b": 10}, spread={"a": 0.5, "b": 0.0}, extra=5).extra
    {'a': 5}
    """
    sizes = _check(strata, spread)
    extra = check_positive_int(extra, "extra")
    z = z_score(check_probability(confidence, "confidence"))
    now = {k: check_positive_int(labelled.get(k, 0), f"labelled in {k!r}", allow_zero=True) for k in sizes}
    after = dict(now)
    for _ in range(extra):
        best, gain = None, 0.0
        for k, big_n in sizes.items():
            n = after[k]
            if n >= big_n:
                continue
            share = (big_n / sum(sizes.values())) ** 2 * spread[k] ** 2
            before = math.inf if n == 0 else share * (1 / n - 1 / big_n)
            reduction = before - share * (1 / (n + 1) - 1 / big_n)
            if best is None or reduction > gain:
                best, gain = k, reduction
        if best is None:
            break
        after[best] += 1
    added = {k: after[k] - now[k] for k in sizes if after[k] > now[k]}
    return NextLabels(
        extra=added,
        half_width_before=_half_width(sizes, now, spread, z),
        half_width_after=_half_width(sizes, after, spread, z),
        confidence=confidence,
    )
