"""The one shape of every interval the engine returns: ``(estimate, low, high)``.

Every statistic with a confidence interval (a paired bootstrap, a proportion, kappa, a corrected
pass rate) returns an :class:`Interval` or a subclass of it. The subclasses add what is specific
to the statistic (iterations and seed, n, standard error, method, ...) as keyword-only fields, so
code that only needs the interval reads ``estimate``, ``low`` and ``high`` whatever produced it,
and can unpack it as the spec's ``mean, lo, hi = paired_bootstrap(base, cand)`` does.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Interval:
    """A point estimate with the bounds of its confidence interval.

    Parameters
    ----------
    estimate : float
        The point estimate (a mean difference, a proportion, kappa, a corrected rate).
    low, high : float
        Lower and upper bounds of the interval; NaN when the interval is undefined.

    Notes
    -----
    Iterating yields ``estimate, low, high`` (and nothing else, even for subclasses with more
    fields), so an interval unpacks like the spec's ``(mean, lo, hi)`` tuple.

    Examples
    --------
    >>> interval = Interval(0.25, 0.1, 0.4)
    >>> estimate, low, high = interval
    >>> estimate, low, high
    (0.25, 0.1, 0.4)
    """

    estimate: float
    low: float
    high: float

    def __iter__(self) -> Iterator[float]:
        return iter((self.estimate, self.low, self.high))
