"""The gate's test of "no drop": a one-sided paired sign-flip (randomization) test.

If the candidate changed nothing, each question's pair of scores is exchangeable: its difference
is as likely to be ``+d`` as ``-d``. The test compares the observed sum of differences with its
distribution under random signs. That distribution is exact, whatever the metric's shape and
however few questions changed, which is what a family of 210 decisions needs: the gate's
correction asks for p-values near 1e-4, where a bootstrap's tail (resampling a slice of 20
questions) is far too thin. For pass/fail scores it is exactly McNemar's exact test. For a drop
that is not exchangeable, the sign-flip distribution of the mean still has the sampling variance
of the mean under "no change on average", so the test stays valid in large samples (its variance
is the sum of squared differences, the mean's own when the mean is 0).

How the distribution is computed (``DropTest.method``):

* **exact**: when every changed question moved by the same amount (pass/fail scores) it is a
  binomial; when the amounts lie on a small lattice, or fewer than ``NORMAL_MIN_CHANGED`` questions
  changed and they lie on one (recall over a few gold documents, precision@k,
  reciprocal rank, a 1-5 scale, fractions of a few claims) it is the convolution of one binomial
  per amount; when at most ``ENUMERATE_MAX`` questions changed, every sign pattern is counted.
* **monte-carlo**: random sign patterns, drawn until ``STOP_AFTER`` patterns are at least as
  extreme as the data (Besag and Clifford's sequential p-value, exact in the sense that it is
  never too small) or ``max_draws`` are spent, then ``(G + 1) / (draws + 1)``.
* **normal**: from ``NORMAL_MIN_CHANGED`` changed questions with no one difference dominating (and
  no small lattice, which is computed exactly), the normal limit with the exact variance. Random-sign
  sums have lighter tails than the normal (their excess kurtosis is ``-2 Σd⁴ / (Σd²)²``), so this
  errs on the side of not blocking: on the demo's shapes it overstates the exact p-value by 6-15 %
  at Holm's thresholds (``tests/engine/test_paired_tests.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist

import numpy as np

from ._validation import as_float_array, check_no_nan, check_positive_int

#: Every sign pattern is counted up to this many changed questions (2**18 patterns).
ENUMERATE_MAX = 18
#: Largest denominator tried when looking for a lattice under the differences (lcm of 1..12).
LATTICE_DENOMINATOR_MAX = 27_720
#: Largest lattice (sum of the integer amounts) convolved exactly.
LATTICE_SIZE_MAX = 1 << 18
#: A lattice this small is convolved exactly whatever the number of changes (a few milliseconds).
LATTICE_CHEAP = 1 << 14
#: The normal limit is used from this many changed questions ...
NORMAL_MIN_CHANGED = 300
#: ... when no single difference carries more than this share of the variance.
NORMAL_MAX_SHARE = 0.03
#: The sequential Monte Carlo test stops once this many draws were at least as extreme as the data.
STOP_AFTER = 50
#: Differences smaller than this share of the largest one are floating-point rounding, not a change.
ROUNDING = 1e-12
_CHUNK_ELEMENTS = 1 << 20
_NORMAL = NormalDist()


@dataclass(frozen=True, kw_only=True)
class DropTest:
    """The one-sided test of "no drop" on one metric and slice.

    Parameters
    ----------
    p_value : float
        The probability, if the candidate changed nothing, of a sum of differences at least as
        far towards "worse" as the one observed.
    method : {"exact", "monte-carlo", "normal"}
        How the sign-flip distribution was computed (see the module's docstring).
    changed : int
        Questions whose score changed (the others carry no sign).
    draws : int
        Random sign patterns drawn (0 unless ``method`` is "monte-carlo").
    """

    p_value: float
    method: str
    changed: int
    draws: int = 0


def drop_test(
    diffs: np.ndarray | list[float],
    *,
    higher_is_better: bool = True,
    max_draws: int = 100_000,
    seed: int = 7,
) -> DropTest:
    """Test "no drop" against "the candidate is worse" with a paired sign-flip test.

    Parameters
    ----------
    diffs : array of float
        Per-question differences ``cand - base`` (no NaN).
    higher_is_better : bool, default True
        The metric's direction: a drop is a negative mean difference, or a positive one when False.
    max_draws : int, default 100_000
        Most random sign patterns the Monte Carlo path may draw; its smallest p-value is
        ``1 / (max_draws + 1)``, so it must be above ``family size / α`` for a corrected cell to block.
    seed : int, default 7
        Seed of the Monte Carlo path (the other paths are exact).

    Returns
    -------
    DropTest

    References
    ----------
    Fisher, R. A. (1935). The Design of Experiments, section 21 (the paired randomization test).
    Besag, J. and Clifford, P. (1991). Sequential Monte Carlo p-values. Biometrika 78(2), 301-304.

    Examples
    --------
    >>> round(drop_test([-1.0] * 6 + [1.0] * 1 + [0.0] * 30).p_value, 6)  # McNemar's exact test: 7 changed, 1 rose
    0.0625
    >>> drop_test([-0.2, -0.5, -1/3, 0.1] + [0.0] * 10).method
    'exact'
    """
    values = as_float_array(diffs, "diffs")
    check_no_nan(values, "diffs")
    max_draws = check_positive_int(max_draws, "max_draws")
    worse = values if higher_is_better else -values
    scale = float(np.abs(worse).max()) if worse.size else 0.0
    moved = worse[np.abs(worse) > ROUNDING * scale]  # a difference of 1e-16 between 2/3 and 1/3 + 1/3 is no change
    k = int(moved.size)
    if k == 0:
        return DropTest(p_value=1.0, method="exact", changed=0)
    amounts = np.abs(moved)
    rose = moved > 0
    if np.allclose(amounts, amounts[0], rtol=1e-9, atol=0.0):
        return DropTest(p_value=_binomial_cdf(int(rose.sum()), k), method="exact", changed=k)
    lattice = _lattice(amounts)
    if lattice is not None and lattice.sum() < LATTICE_CHEAP:
        return DropTest(p_value=_lattice_cdf(lattice, rose), method="exact", changed=k)
    squares = amounts * amounts
    if k >= NORMAL_MIN_CHANGED and squares.max() <= NORMAL_MAX_SHARE * squares.sum():
        z = float(moved.sum()) / math.sqrt(float(squares.sum()))
        return DropTest(p_value=_NORMAL.cdf(z), method="normal", changed=k)
    if lattice is not None:
        return DropTest(p_value=_lattice_cdf(lattice, rose), method="exact", changed=k)
    if k <= ENUMERATE_MAX:
        return DropTest(p_value=_enumerated_cdf(amounts, rose), method="exact", changed=k)
    p_value, draws = _monte_carlo_cdf(amounts, rose, max_draws=max_draws, seed=seed)
    return DropTest(p_value=p_value, method="monte-carlo", changed=k, draws=draws)


def _binomial_cdf(x: int, k: int) -> float:
    """``P(Binomial(k, 1/2) <= x)``, summed in log space (exact to rounding at any k)."""
    log_terms = _log_choose(k)[: x + 1] - k * math.log(2.0)
    top = log_terms.max()
    return float(min(1.0, math.exp(top) * np.exp(log_terms - top).sum()))


def _log_choose(k: int) -> np.ndarray:
    """``log C(k, j)`` for j = 0..k."""
    steps = np.log(np.arange(k, 0, -1, dtype=float)) - np.log(np.arange(1, k + 1, dtype=float))
    return np.concatenate([[0.0], np.cumsum(steps)])


def _binomial_pmf(k: int) -> np.ndarray:
    return np.exp(_log_choose(k) - k * math.log(2.0))


def _lattice(amounts: np.ndarray) -> np.ndarray | None:
    """The amounts as integers on a common lattice, or None when they have none small enough to convolve."""
    distinct = np.unique(amounts)
    lcm = 1
    for value in distinct:
        fraction = Fraction(float(value)).limit_denominator(LATTICE_DENOMINATOR_MAX)
        if abs(float(fraction) - value) > 1e-9 * max(1.0, value):
            return None
        lcm = math.lcm(lcm, fraction.denominator)
        if lcm > LATTICE_DENOMINATOR_MAX:
            return None
    units = np.rint(amounts * lcm).astype(np.int64)
    if np.any(units <= 0) or not np.allclose(units, amounts * lcm, rtol=0, atol=1e-6) or units.sum() > LATTICE_SIZE_MAX:
        return None
    return units


def _lattice_cdf(units: np.ndarray, rose: np.ndarray) -> float:
    """``P(T <= t_obs)`` for T the sum of the amounts of a random half: its distribution is the product of one
    binomial's characteristic function per amount, ``Π_v ((1 + e^{-iωv}) / 2)^{c_v}``, turned back by one FFT
    (exact to about 1e-13, far below any level the gate compares with)."""
    values, counts = np.unique(units, return_counts=True)
    size = int(units.sum()) + 1
    if size <= 4096:  # small: convolve the binomials directly, exactly
        pmf = np.ones(1)
        for value, count in zip(values.tolist(), counts.tolist()):
            kernel = np.zeros(value * count + 1)
            kernel[::value] = _binomial_pmf(count)
            pmf = np.convolve(pmf, kernel)
    else:
        n = 1 << (size - 1).bit_length()
        omega = 2.0 * np.pi * np.arange(n // 2 + 1) / n
        half_angles = np.multiply.outer(omega, values.astype(float)) / 2.0  # (frequencies, amounts)
        magnitude = np.prod(np.cos(half_angles) ** counts, axis=1)
        phase = np.exp(-1j * (half_angles @ counts.astype(float)))
        pmf = np.fft.irfft(magnitude * phase, n)[:size]
    observed = int(units[rose].sum())
    return float(min(1.0, np.clip(pmf[: observed + 1], 0.0, None).sum()))


def _enumerated_cdf(amounts: np.ndarray, rose: np.ndarray) -> float:
    """``P(T <= t_obs)`` over all ``2**k`` sign patterns."""
    sums = np.zeros(1)
    for amount in amounts:
        sums = np.concatenate([sums, sums + amount])
    observed = float(amounts[rose].sum())
    tolerance = 1e-9 * float(amounts.sum())
    return float(np.count_nonzero(sums <= observed + tolerance) / sums.size)


def _monte_carlo_cdf(amounts: np.ndarray, rose: np.ndarray, *, max_draws: int, seed: int) -> tuple[float, int]:
    """Besag and Clifford's sequential Monte Carlo p-value over random sign patterns; returns (p, draws)."""
    k = amounts.size
    observed = float(amounts[rose].sum())
    tolerance = 1e-9 * float(amounts.sum())
    rng = np.random.default_rng(seed)
    cap = max(64, _CHUNK_ELEMENTS // k)
    rows = min(256, cap)  # small first: a harmless cell meets STOP_AFTER extreme patterns within a few hundred
    extreme = drawn = 0
    while drawn < max_draws:
        size = min(rows, max_draws - drawn)
        bits = np.unpackbits(rng.integers(0, 256, size=(size, (k + 7) // 8), dtype=np.uint8), axis=1, count=k)
        hits = (bits @ amounts) <= observed + tolerance
        found = np.flatnonzero(hits)
        if extreme + found.size >= STOP_AFTER:
            at = int(found[STOP_AFTER - extreme - 1]) + 1  # draws until the STOP_AFTER-th extreme one
            return STOP_AFTER / (drawn + at), drawn + at
        extreme += found.size
        drawn += size
        rows = min(rows * 4, cap)
    return (extreme + 1) / (drawn + 1), drawn
