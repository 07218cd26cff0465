"""Standard errors, intervals and sample sizes for pass rates and paired differences.

A metric that is a pass rate behaves like a proportion: its standard error is
``sqrt(p * (1 - p) / n)``, about 0.026 at p = 0.7 and n = 300, so a single run's 95 % interval
is roughly plus or minus 5 points. Pairing shrinks the variance of a comparison to the
questions whose score changed, which is what :func:`paired_sample_size` accounts for.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

from ._interval import Interval
from ._validation import check_positive_int, check_probability

IntervalMethod = Literal["wilson", "wald"]


def z_score(confidence: float) -> float:
    """Return the two-sided normal quantile for a confidence level (1.96 at 0.95).

    Parameters
    ----------
    confidence : float
        Level of a two-sided interval, strictly between 0 and 1.

    Returns
    -------
    float
        ``z`` such that a standard normal lies within ``[-z, z]`` with probability ``confidence``.

    Examples
    --------
    >>> round(z_score(0.95), 2)
    1.96
    """
    confidence = check_probability(confidence, "confidence")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def proportion_se(p: float, n: int) -> float:
    """Return the standard error of a proportion, ``sqrt(p * (1 - p) / n)``.

    Parameters
    ----------
    p : float
        The observed proportion, in [0, 1].
    n : int
        The number of questions (trials).

    Returns
    -------
    float

    Examples
    --------
    >>> round(proportion_se(0.7, 300), 3)
    0.026
    """
    p = check_probability(p, "p", open_interval=False)
    n = check_positive_int(n, "n")
    return math.sqrt(p * (1.0 - p) / n)


@dataclass(frozen=True, kw_only=True)
class ProportionEstimate(Interval):
    """A proportion with its standard error and confidence interval.

    Parameters
    ----------
    estimate : float
        The observed proportion, in [0, 1].
    low, high : float
        Bounds of the interval, within [0, 1].
    n : int
        Number of trials.
    se : float
        Standard error, ``sqrt(p * (1 - p) / n)``.
    confidence : float
        Level of the two-sided interval.
    method : {"wilson", "wald"}
        How the interval was computed.

    Examples
    --------
    >>> est = proportion_interval(22, 50)
    >>> est.estimate, est.n, est.successes
    (0.44, 50, 22)
    """

    n: int
    se: float
    confidence: float
    method: str

    @property
    def successes(self) -> int:
        """The count of successes behind the proportion, ``round(estimate * n)``."""
        return round(self.estimate * self.n)


def proportion_interval(
    successes: int | float,
    n: int,
    *,
    confidence: float = 0.95,
    method: IntervalMethod = "wilson",
) -> ProportionEstimate:
    """Return a proportion with its interval, from a count (or a rate) out of n.

    Parameters
    ----------
    successes : int or float
        A count out of n (int), or the observed proportion itself (float in [0, 1]).
    n : int
        Number of trials.
    confidence : float, default 0.95
        Level of the two-sided interval.
    method : {"wilson", "wald"}, default "wilson"
        ``"wald"`` is ``p +/- z * SE`` (the spec's rough interval); ``"wilson"`` (Wilson, 1927)
        keeps good coverage for small n and rates near 0 or 1, as for a judge's miss rate.

    Returns
    -------
    ProportionEstimate
        ``estimate`` is the proportion, ``low`` and ``high`` the interval bounds within [0, 1].

    References
    ----------
    Wilson, "Probable inference, the law of succession, and statistical inference", JASA 1927.

    Examples
    --------
    >>> est = proportion_interval(22, 50)
    >>> round(est.low, 2), round(est.high, 2)
    (0.31, 0.58)
    >>> est = proportion_interval(0.7, 300, method="wald")
    >>> round(est.se, 3), round(est.high - est.estimate, 3)
    (0.026, 0.052)
    """
    n = check_positive_int(n, "n")
    confidence = check_probability(confidence, "confidence")
    if isinstance(successes, bool) or not isinstance(successes, numbers.Real):
        raise ValueError(f"successes must be a count or a proportion, got {successes!r}")
    if isinstance(successes, numbers.Integral):
        if not 0 <= successes <= n:
            raise ValueError(f"successes must be between 0 and n={n}, got {successes}")
        p = successes / n
    else:
        p = check_probability(successes, "successes (as a proportion)", open_interval=False)
    if method not in ("wilson", "wald"):
        raise ValueError(f"method must be 'wilson' or 'wald', got {method!r}")
    z = z_score(confidence)
    se = math.sqrt(p * (1 - p) / n)
    if method == "wald":
        low, high = max(0.0, p - z * se), min(1.0, p + z * se)
    else:
        denom = 1 + z * z / n
        centre = (p + z * z / (2 * n)) / denom
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
        # the Wilson interval always contains p; rounding put the bound at 0 (or 1) a hair past it
        low, high = max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))
    return ProportionEstimate(estimate=p, low=low, high=high, n=n, se=se, confidence=confidence, method=method)


def _check_sd(sd: object) -> float:
    """Return the standard deviation of per-question differences as a float, if it is a positive finite number."""
    if isinstance(sd, bool) or not isinstance(sd, numbers.Real) or not sd > 0 or not math.isfinite(sd):
        raise ValueError(f"sd must be a positive finite number, got {sd!r}")
    return float(sd)


def _z_total(confidence: float, power: float) -> float:
    """The normal quantiles of a two-sided test at ``confidence`` plus that of ``power``: the sample-size multiplier."""
    return z_score(confidence) + NormalDist().inv_cdf(power)


def paired_sample_size(
    difference: float,
    *,
    sd: float | None = None,
    discordant: float | None = None,
    confidence: float = 0.95,
    power: float = 0.8,
) -> int:
    """Return how many paired questions are needed to detect a change of ``difference``.

    Uses the normal approximation for a paired mean difference,
    ``n = ((z_(1 - alpha/2) + z_power) * sd / difference) ** 2``, rounded up.

    Parameters
    ----------
    difference : float
        The smallest change in the mean score you need to detect (for example 0.02).
    sd : float, optional
        Standard deviation of the per-question differences (candidate minus baseline), from a
        pilot pair of runs.
    discordant : float, optional
        For pass/fail metrics instead of ``sd``: the fraction of questions whose outcome changes
        between the runs. Then ``sd**2 = discordant - difference**2``.
    confidence : float, default 0.95
        Two-sided confidence level.
    power : float, default 0.8
        Probability of detecting a true change of that size.

    Returns
    -------
    int
        Paired questions needed, rounded up.

    Examples
    --------
    A 4-point change when 10 % of questions flip needs a few hundred paired questions:

    >>> paired_sample_size(0.04, discordant=0.10)
    483
    """
    if (
        isinstance(difference, bool)
        or not isinstance(difference, numbers.Real)
        or not difference
        or not math.isfinite(difference)
    ):
        raise ValueError(f"difference must be a non-zero finite number, got {difference!r}")
    difference = abs(float(difference))
    confidence = check_probability(confidence, "confidence")
    power = check_probability(power, "power")
    sd = _paired_sd(difference, sd=sd, discordant=discordant)
    return math.ceil((_z_total(confidence, power) * sd / difference) ** 2)


def _paired_sd(change: float, *, sd: float | None, discordant: float | None, name: str = "discordant") -> float:
    """The sd of per-question differences: ``sd`` itself, or from the share of questions that flip.

    For pass/fail scores each difference is -1, 0 or +1, so ``sd**2 = discordant - change**2``.
    """
    if (sd is None) == (discordant is None):
        raise ValueError(f"give exactly one of sd (of per-question differences) or {name} (fraction that flips)")
    if discordant is None:
        return _check_sd(sd)
    discordant = check_probability(discordant, name)
    variance = discordant - change**2
    if variance <= 0:
        raise ValueError(
            f"a change of {abs(change):g} needs more than {100 * change**2:.1f} % of questions to flip "
            f"({discordant} given)"
        )
    return math.sqrt(variance)


def detectable_difference(n: int, *, sd: float, confidence: float = 0.95, power: float = 0.8) -> float:
    """Return the smallest paired mean change that n questions detect (inverse of the above).

    ``(z_(1 - alpha/2) + z_power) * sd / sqrt(n)``.

    Parameters
    ----------
    n : int
        Paired questions.
    sd : float
        Standard deviation of the per-question differences (candidate minus baseline).
    confidence, power : float, default 0.95 and 0.8
        As in :func:`paired_sample_size`: the two-sided confidence level, and the probability of
        detecting a true change of that size.

    Returns
    -------
    float
        The smallest change in the mean score detected with that power.

    Examples
    --------
    >>> round(detectable_difference(300, sd=0.3), 3)
    0.049
    """
    n = check_positive_int(n, "n")
    sd = _check_sd(sd)
    confidence = check_probability(confidence, "confidence")
    power = check_probability(power, "power")
    return _z_total(confidence, power) * sd / math.sqrt(n)
