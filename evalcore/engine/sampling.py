"""Stratified allocation of a labelling sample, so the judge's rare verdict is not starved.

A judge that flags 18 % of answers as unsupported leaves a proportional sample of 200 with only
about 36 of its failures: too few to measure its miss rate. The allocation gives each judge verdict
at least ``min_class_share`` of the sample (when that many items exist), then spreads each
verdict's share over the slices in proportion to their size. Every sampled item carries the weight
``stratum size / stratum sample``, so population estimates can undo the oversampling.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping

from ._validation import check_positive_int, check_probability


def _largest_remainder(sizes: Mapping[Hashable, int], total: int) -> dict[Hashable, int]:
    """Allocate ``total`` over keys in proportion to ``sizes``, never more than a key's size."""
    alloc = {key: 0 for key in sizes}
    remaining = min(total, sum(sizes.values()))
    open_keys = {key for key, size in sizes.items() if size > 0}
    while remaining > 0 and open_keys:
        weight = sum(sizes[k] for k in open_keys)
        shares = {k: remaining * sizes[k] / weight for k in open_keys}
        floors = {k: min(int(math.floor(shares[k])), sizes[k] - alloc[k]) for k in open_keys}
        given = sum(floors.values())
        for k, extra in floors.items():
            alloc[k] += extra
        remaining -= given
        if remaining > 0:
            order = sorted(open_keys, key=lambda k: (-(shares[k] - math.floor(shares[k])), str(k)))
            for k in order:
                if remaining == 0:
                    break
                if alloc[k] < sizes[k]:
                    alloc[k] += 1
                    remaining -= 1
        open_keys = {k for k in open_keys if alloc[k] < sizes[k]}
        if given == 0 and remaining > 0 and not any(alloc[k] < sizes[k] for k in open_keys):
            break
    return alloc


def stratified_allocation(
    strata: Mapping[tuple[Hashable, Hashable], int],
    size: int,
    *,
    min_class_share: float = 0.25,
) -> dict[tuple[Hashable, Hashable], int]:
    """Return how many items to sample from each ``(slice, verdict)`` stratum.

    Parameters
    ----------
    strata : mapping (slice, verdict) -> number of items available
        The population, by slice of questions and judge verdict.
    size : int
        Items wanted in all; at or above the total, every item is taken.
    min_class_share : float, default 0.25
        Each verdict gets at least this share of the sample when it has that many items; the rest
        follows the verdicts' shares of the population.

    Returns
    -------
    dict (slice, verdict) -> int
        Items to sample from each stratum (every key of ``strata``), never more than it holds;
        they add up to ``size`` (or to every item when there are fewer).

    Examples
    --------
    >>> alloc = stratified_allocation({("a", True): 820, ("a", False): 180}, 200)
    >>> alloc[("a", True)], alloc[("a", False)]
    (150, 50)
    """
    size = check_positive_int(size, "size")
    min_class_share = check_probability(min_class_share, "min_class_share", open_interval=False)
    _check_strata(strata)
    total = sum(strata.values())
    if size >= total:
        return dict(strata)
    present, wanted = _wanted_per_verdict(strata, size, min_class_share)
    class_alloc = _verdict_allocation(present, wanted, size)
    return _spread_over_slices(strata, class_alloc)


def _check_strata(strata: Mapping[tuple[Hashable, Hashable], int]) -> None:
    """Refuse a key that is not a (slice, verdict) pair and a size that is not a non-negative integer."""
    for key, count in strata.items():
        if not isinstance(key, tuple) or len(key) != 2:
            raise ValueError(f"strata keys are (slice, verdict) pairs, got {key!r}")
        check_positive_int(count, f"size of stratum {key!r}", allow_zero=True)


def _wanted_per_verdict(
    strata: Mapping[tuple[Hashable, Hashable], int], size: int, min_class_share: float
) -> tuple[dict[Hashable, int], dict[Hashable, float]]:
    """Return the items available per verdict present, and the (fractional) number of them wanted: each verdict's
    population share, lifted to ``min_class_share`` for the rare ones (the others shrink to make room)."""
    total = sum(strata.values())
    classes: dict[Hashable, int] = {}
    for (_, verdict), count in strata.items():
        classes[verdict] = classes.get(verdict, 0) + count
    present = {v: n for v, n in classes.items() if n > 0}
    floor = min(min_class_share, 1.0 / max(1, len(present)))
    population_share = {v: n / total for v, n in present.items()}
    lifted = {v for v, p in population_share.items() if p < floor}
    rest = sum(p for v, p in population_share.items() if v not in lifted)
    share = {v: floor if v in lifted else (1.0 - floor * len(lifted)) * population_share[v] / rest for v in present}
    wanted = {v: share[v] * size for v in present}
    return present, wanted


def _verdict_allocation(present: dict[Hashable, int], wanted: dict[Hashable, float], size: int) -> dict[Hashable, int]:
    """Round the wanted counts to whole items that add up to ``size`` and fit what each verdict holds."""
    class_alloc = {v: min(present[v], int(round(wanted[v]))) for v in present}
    # fix rounding and capacity: hand out (or take back) one at a time to the class furthest below
    # (above) its wanted count, in steps that give the same result as one at a time
    while (missing := size - sum(class_alloc.values())) > 0:
        room = [v for v in present if class_alloc[v] < present[v]]
        if not room:
            break
        gaps = sorted(((wanted[c] - class_alloc[c], str(c)), c) for c in room)
        v = gaps[-1][1]
        step = max(1, math.floor(gaps[-1][0][0] - gaps[-2][0][0])) if len(gaps) > 1 else missing
        class_alloc[v] += min(step, missing, present[v] - class_alloc[v])
    while (excess := sum(class_alloc.values()) - size) > 0:
        gaps = sorted(((class_alloc[c] - wanted[c], str(c)), c) for c in present)
        v = gaps[-1][1]
        step = max(1, math.floor(gaps[-1][0][0] - gaps[-2][0][0])) if len(gaps) > 1 else excess
        class_alloc[v] -= min(step, excess)
    return class_alloc


def _spread_over_slices(
    strata: Mapping[tuple[Hashable, Hashable], int], class_alloc: dict[Hashable, int]
) -> dict[tuple[Hashable, Hashable], int]:
    """Share each verdict's items over its slices in proportion to their sizes (every key of ``strata`` kept)."""
    out: dict[tuple[Hashable, Hashable], int] = {key: 0 for key in strata}
    for verdict, n_v in class_alloc.items():
        members = {key: count for key, count in strata.items() if key[1] == verdict}
        for key, n in _largest_remainder(members, n_v).items():
            out[key] = n  # type: ignore[index]
    return out
