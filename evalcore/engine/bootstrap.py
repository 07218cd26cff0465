"""The paired bootstrap: a confidence interval on the mean per-question difference.

Baseline and candidate answer the same questions, so most questions get the same score from
both and only those that changed carry variance. Resampling the per-question differences and
reading off percentiles gives the interval the release gate needs.

Two exact resamplers, chosen automatically (with a mix of the two):

* **multinomial** (few distinct differences, as with pass/fail scores or recall over a few gold
  documents): a resampled mean depends only on how many times each distinct difference is drawn,
  and those counts follow a multinomial distribution. Drawing the counts gives the same
  distribution as drawing indices, in milliseconds at any n.
* **resample** (many distinct values): draw indices in chunks that bound memory, on a small pool
  of threads (numpy releases the GIL), each chunk with its own child seed so the result depends
  only on the seed, never on the number of threads.
* **mixed** (``"auto"`` only; a few frequent differences and a long tail of rare ones, as with
  nDCG or faithfulness, where most questions do not change): the frequent values are drawn as
  multinomial counts, the rare ones pooled into one more category, and the draws that land in
  that pool are resampled among its members. Same distribution again, at the cost of the tail.

* **binned** (``"auto"`` only, from ``BINNED_MIN_N`` paired questions; many distinct differences,
  as with a continuous score): the sorted differences are cut into ``BINS`` bins of equal count.
  How many draws land in each bin is drawn exactly (multinomial); the sum of the draws within the
  bins, given those counts, is drawn from the normal distribution with their exact mean and
  variance (each bin is narrow and holds many draws, so that sum is very nearly normal). The
  resampled means have the exact bootstrap mean and variance, and their skew comes from the
  exact between-bin draw; the intervals agree with the exact resampler's within its own Monte
  Carlo error (``tests/engine/test_fast_paths.py`` measures it against the resampler and
  ``scipy.stats.bootstrap``), at a cost that does not grow with n (milliseconds at 100,000).

``"auto"`` picks whichever costs least by a cost model measured on this engine (one multinomial
category costs about as much as ``_MULTINOMIAL_COST`` resampled elements). Below
``BINNED_MIN_N`` every resampler it may pick is exact, so small comparisons (and every worked
example of the spec) are unchanged.

Percentiles are read as order statistics exactly as in the spec: the sorted resampled means at
positions ``int(0.025 * iterations)`` and ``int(0.975 * iterations)`` for a 95 % interval.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ._interval import Interval
from ._percentiles import (  # noqa: F401 (re-exported: the bootstrap's public reading of its interval)
    BOOTSTRAP_INTERVALS,
    BootstrapInterval,
    excess_kurtosis,
    expanded_tail,
    interval_positions,
    percentile_positions,
)
from ._validation import check_positive_int, check_probability, paired_arrays

BootstrapMethod = Literal["auto", "multinomial", "resample"]

#: Elements (iterations x questions) drawn per chunk by the resampling path, each chunk with its
#: own child seed: about 8 MB of indices a chunk.
CHUNK_ELEMENTS = 1 << 21
#: Resampled elements gathered and summed at a time, so that they stay in the CPU cache.
_BLOCK_ELEMENTS = 1 << 17
#: Relative cost of one multinomial category (a binomial draw) against one resampled element
#: (a bounded random integer, a gather and an add), measured here: 9-16 (80-240 ns against 6-19 ns).
_MULTINOMIAL_COST = 12.0
_MAX_MULTINOMIAL_VALUES = 4096
#: Relative cost of a draw from the pooled rare differences of the mixed resampler.
_POOLED_COST = 1.25
#: The binned resampler is one of ``"auto"``'s choices from this many paired questions on.
BINNED_MIN_N = 2000
#: Bins of equal count of the binned resampler (at least ``BINNED_MIN_N / BINS`` differences each), before
#: the two at the ends are cut finer (see ``_bin_edges``).
BINS = 32


@dataclass(frozen=True, kw_only=True)
class BootstrapResult(Interval):
    """A paired bootstrap interval on ``mean(candidate - baseline)``.

    Parameters
    ----------
    estimate : float
        The observed mean difference, ``mean(cand - base)``.
    low, high : float
        Bounds of the percentile interval.
    iterations : int
        Number of bootstrap resamples.
    seed : int
        Seed of the random generator.
    confidence : float, default 0.95
        Level of the two-sided interval.
    n : int, default 0
        Number of paired questions.
    method : {"multinomial", "resample", "mixed", "binned"}, default "resample"
        The resampler that drew the means (the first three exact, "binned" within the
        bootstrap's own Monte Carlo error of them; see the module's docstring).
    interval : {"percentile", "expanded"}, default "percentile"
        How the bounds were read off the resampled means (see :func:`expanded_tail`).

    Examples
    --------
    >>> result = BootstrapResult(0.25, 0.0, 0.5, iterations=1000, seed=7, n=4)
    >>> mean, low, high = result
    >>> mean, result.n
    (0.25, 4)
    """

    iterations: int
    seed: int
    confidence: float = 0.95
    n: int = 0
    method: str = "resample"
    interval: str = "percentile"


def _default_threads() -> int:
    return max(1, min(4, os.cpu_count() or 1))


Job = tuple[float, Callable[[], None]]


@dataclass
class _Plan:
    """The resampled means of one bootstrap, filled in by independent jobs (any order, any thread)."""

    means: np.ndarray
    method: str
    jobs: list[Job]
    bins: _Bins | None = None  # the binned resampler's input; its jobs may be shared (see ``_jobs_of``)


def _choose(values: np.ndarray, counts: np.ndarray, n: int) -> str:
    """Return the cheapest exact resampler for these distinct differences, by the cost model."""
    if values.size == 1:
        return "multinomial"
    costs = {"resample": float(n)}
    if values.size <= _MAX_MULTINOMIAL_VALUES:
        costs["multinomial"] = values.size * _MULTINOMIAL_COST
    heavy = counts >= _MULTINOMIAL_COST
    n_heavy = int(np.count_nonzero(heavy))
    if 0 < n_heavy < _MAX_MULTINOMIAL_VALUES and n_heavy < values.size:
        # a pooled draw costs a little more than a plain one (variable-length rows to sum)
        costs["mixed"] = (n_heavy + 1) * _MULTINOMIAL_COST + _POOLED_COST * float(counts[~heavy].sum())
    if n >= BINNED_MIN_N:
        costs["binned"] = (BINS + 2 * math.log2(n / BINS) + 2) * _MULTINOMIAL_COST  # the counts, and one normal draw
    return min(costs, key=costs.__getitem__)


def _plan_means(diffs: np.ndarray, *, iterations: int, seed: int, method: str) -> _Plan:
    """Plan the ``iterations`` bootstrap means of ``diffs`` as jobs, with the resampler to use."""
    n = diffs.size
    values, counts = np.unique(diffs, return_counts=True)
    if method == "auto":
        method = _choose(values, counts, n)
    if method not in ("multinomial", "resample", "mixed", "binned"):
        raise ValueError(f"method must be 'auto', 'multinomial' or 'resample', got {method!r}")
    out = np.empty(iterations)
    if method == "binned":
        bins = _bins_of(diffs, iterations=iterations, seed=seed, out=out)
        return _Plan(out, method, _binned_jobs([bins]), bins)
    if method == "multinomial":
        job = lambda: _multinomial_means(values, counts, n, iterations=iterations, seed=seed, out=out)  # noqa: E731
        return _Plan(out, method, [(iterations * values.size * _MULTINOMIAL_COST, job)])
    if method == "resample":
        return _Plan(out, method, _resample_jobs(diffs, iterations=iterations, seed=seed, out=out))
    return _Plan(out, method, _mixed_jobs(diffs, values, counts, iterations=iterations, seed=seed, out=out))


def _run_jobs(jobs: Sequence[Job], threads: int | None) -> None:
    """Run independent jobs, the costliest first, on up to ``threads`` threads."""
    ordered = [job for _, job in sorted(jobs, key=lambda item: -item[0])]
    workers = min(threads or _default_threads(), len(ordered))
    if workers <= 1:
        for job in ordered:
            job()
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for future in [pool.submit(job) for job in ordered]:
                future.result()


def resampled_means(
    diffs: np.ndarray,
    *,
    iterations: int,
    seed: int,
    method: BootstrapMethod = "auto",
    threads: int | None = None,
) -> tuple[np.ndarray, str]:
    """Return ``iterations`` bootstrap means of ``diffs`` and the resampler used."""
    plan = _plan_means(diffs, iterations=iterations, seed=seed, method=method)
    _run_jobs(_jobs_of([plan]), threads)
    return plan.means, plan.method


def _multinomial_means(
    values: np.ndarray, counts: np.ndarray, n: int, *, iterations: int, seed: int, out: np.ndarray | None = None
) -> np.ndarray:
    out = np.empty(iterations) if out is None else out
    if values.size == 1:
        out[:] = float(values[0])
        return out
    rng = np.random.default_rng(seed)
    pvals = counts / n
    rows = max(1, CHUNK_ELEMENTS // values.size)
    for start in range(0, iterations, rows):
        stop = min(iterations, start + rows)
        drawn = rng.multinomial(n, pvals, size=stop - start)
        out[start:stop] = drawn @ values / n
    return out


def _chunks(iterations: int, rows: int, seed: int) -> list[tuple[int, int, np.random.SeedSequence]]:
    """Split the iterations into chunks of ``rows``, each with its own child seed."""
    starts = range(0, iterations, rows)
    children = np.random.SeedSequence(seed).spawn(len(starts))
    return [(start, min(iterations, start + rows), child) for start, child in zip(starts, children)]


def _resample_jobs(diffs: np.ndarray, *, iterations: int, seed: int, out: np.ndarray) -> list[Job]:
    n = diffs.size
    rows = max(1, min(iterations, CHUNK_ELEMENTS // n))
    block = max(1, _BLOCK_ELEMENTS // n)
    index_type = np.int32 if n < 2**31 else np.int64

    def run(start: int, stop: int, child: np.random.SeedSequence) -> None:
        idx = np.random.default_rng(child).integers(0, n, size=(stop - start, n), dtype=index_type)
        for first in range(0, stop - start, block):
            last = min(stop - start, first + block)
            out[start + first : start + last] = np.take(diffs, idx[first:last], mode="clip").sum(axis=1) / n

    return [
        (float((stop - start) * n), _bind(run, start, stop, child))
        for start, stop, child in _chunks(iterations, rows, seed)
    ]


def _mixed_jobs(
    diffs: np.ndarray, values: np.ndarray, counts: np.ndarray, *, iterations: int, seed: int, out: np.ndarray
) -> list[Job]:
    n = diffs.size
    heavy = counts >= _MULTINOMIAL_COST
    heavy_values = values[heavy]
    tail = diffs[~np.isin(diffs, heavy_values)]  # the rare differences, each question once
    pvals = np.append(counts[heavy], tail.size) / n  # the last category is the pooled tail
    rows = max(1, min(iterations, CHUNK_ELEMENTS // (tail.size + heavy_values.size)))
    block = max(1, _BLOCK_ELEMENTS // tail.size)  # rows whose pooled draws are summed at a time
    index_type = np.int32 if tail.size < 2**31 else np.int64

    def run(start: int, stop: int, child: np.random.SeedSequence) -> None:
        rng = np.random.default_rng(child)
        drawn = rng.multinomial(n, pvals, size=stop - start)
        in_tail = drawn[:, -1]
        tail_sums = np.zeros(stop - start)
        for first in range(0, stop - start, block):
            pooled = in_tail[first : first + block]
            ends = np.cumsum(pooled)
            if ends[-1] == 0:
                continue
            picked = np.empty(int(ends[-1]) + 1)  # one spare zero: reduceat needs every start in range
            np.take(
                tail, rng.integers(0, tail.size, size=int(ends[-1]), dtype=index_type), out=picked[:-1], mode="clip"
            )
            picked[-1] = 0.0
            sums = np.add.reduceat(picked, ends - pooled)
            sums[pooled == 0] = 0.0
            tail_sums[first : first + block] = sums
        out[start:stop] = (drawn[:, :-1] @ heavy_values + tail_sums) / n

    cost = float(heavy_values.size + 1) * _MULTINOMIAL_COST + _POOLED_COST * tail.size
    return [
        (cost * (stop - start), _bind(run, start, stop, child))
        for start, stop, child in _chunks(iterations, rows, seed)
    ]


def _bin_edges(n: int) -> np.ndarray:
    """Edges of the binned resampler's bins among ``n`` sorted differences: ``BINS`` of equal count, the two at
    the ends cut in halves, quarters, ... down to single differences, so that the extremes (where a heavy tail's
    skew lives) are drawn exactly and every bin drawn by the normal approximation is narrow."""
    step = n / BINS
    halves = [step / 2**k for k in range(int(math.log2(max(step, 1.0))), 0, -1)]  # 1, 2, 4, ... below step
    low = [0.0, *halves]
    middle = [step * i for i in range(1, BINS)]
    high = [n - h for h in reversed(halves)]
    return np.unique(np.round([*low, *middle, *high, float(n)]).astype(np.intp))


@dataclass(frozen=True)
class _Bins:
    """What the binned resampler needs of one bootstrap: its bins (by n) and each bin's mean and spread."""

    n: int
    iterations: int
    seed: int
    means: np.ndarray
    spread: np.ndarray  # variance of the differences within each bin
    out: np.ndarray

    @property
    def key(self) -> tuple[int, int, int]:
        return self.n, self.iterations, self.seed


def _bins_of(diffs: np.ndarray, *, iterations: int, seed: int, out: np.ndarray) -> _Bins:
    n = diffs.size
    ordered = np.sort(diffs)
    edges = _bin_edges(n)
    sizes = np.diff(edges)
    means = np.add.reduceat(ordered, edges[:-1]) / sizes
    spread = np.add.reduceat((ordered - np.repeat(means, sizes)) ** 2, edges[:-1]) / sizes
    return _Bins(n, iterations, seed, means, spread, out)


def _binned_jobs(group: Sequence[_Bins]) -> list[Job]:
    """Jobs of the binned resampler (see the module's docstring) for bootstraps of the same n, iterations and seed.

    The bins' counts and the normal draws depend only on those three, so they are drawn once
    for the whole group: each bootstrap gets exactly the means it would get alone.
    """
    n, iterations, seed = group[0].key
    edges = _bin_edges(n)
    pvals = np.diff(edges) / n
    rows = max(1, min(iterations, CHUNK_ELEMENTS // (edges.size - 1)))

    def run(start: int, stop: int, child: np.random.SeedSequence) -> None:
        rng = np.random.default_rng(child)
        counts = rng.multinomial(n, pvals, size=stop - start).astype(np.float64)
        normal = rng.standard_normal(stop - start)
        for b in group:  # one product per bootstrap: bit for bit what it gets alone
            b.out[start:stop] = (counts @ b.means + np.sqrt(counts @ b.spread) * normal) / n

    cost = (edges.size + 1 + len(group)) * _MULTINOMIAL_COST
    return [
        (cost * (stop - start), _bind(run, start, stop, child))
        for start, stop, child in _chunks(iterations, rows, seed)
    ]


def _jobs_of(plans: Sequence[_Plan]) -> list[Job]:
    """Every job of these plans, binned bootstraps of the same n, iterations and seed drawn together."""
    jobs = [job for plan in plans if plan.bins is None for job in plan.jobs]
    groups: dict[tuple[int, int, int], list[_Bins]] = {}
    for plan in plans:
        if plan.bins is not None:
            groups.setdefault(plan.bins.key, []).append(plan.bins)
    for group in groups.values():
        jobs.extend(_binned_jobs(group))
    return jobs


def _bind(function: Callable[..., None], *args: object) -> Callable[[], None]:
    return lambda: function(*args)


def paired_bootstrap(
    base: Sequence[float] | np.ndarray,
    cand: Sequence[float] | np.ndarray,
    *,
    iterations: int = 10_000,
    seed: int = 7,
    confidence: float = 0.95,
    method: BootstrapMethod = "auto",
    threads: int | None = None,
    interval: BootstrapInterval = "percentile",
) -> BootstrapResult:
    """Return the mean of ``cand - base`` with a percentile bootstrap interval.

    Parameters
    ----------
    base, cand : sequences of float, same length
        Per-question scores of the baseline and the candidate, for the same questions in the
        same order. No NaN: drop questions not scored in both runs before pairing.
    iterations : int, default 10_000
        Number of bootstrap resamples.
    seed : int, default 7
        Seed of the random generator; the same seed gives the same interval.
    confidence : float, default 0.95
        Level of the two-sided interval.
    method : {"auto", "multinomial", "resample"}, default "auto"
        Resampler; both are exact. ``"auto"`` picks the fastest for the data: one of them, a mix
        of the two (reported as ``"mixed"``, exact too) or, from ``BINNED_MIN_N`` paired questions
        with many distinct differences, the binned resampler (``"binned"``, within the
        bootstrap's own Monte Carlo error of the exact ones; see the module's docstring).
    threads : int, optional
        Threads for the resampling path (default: up to 4, by CPU count). Results do not
        depend on it.
    interval : {"percentile", "expanded"}, default "percentile"
        The spec's percentile interval, or the expanded percentile interval that covers better
        in small samples (:func:`expanded_tail`; the gate's choice for continuous metrics).

    Returns
    -------
    BootstrapResult
        ``estimate`` is the observed mean difference; ``low`` and ``high`` the interval bounds.
        It unpacks as ``estimate, low, high``, like the spec's tuple.

    References
    ----------
    Efron and Tibshirani, "An Introduction to the Bootstrap", 1993, ch. 13 (percentile interval).

    Examples
    --------
    >>> result = paired_bootstrap([1, 0, 1, 1], [1, 1, 1, 1], iterations=1000)
    >>> result.estimate, result.high
    (0.25, 0.75)
    >>> mean, lo, hi = paired_bootstrap([1, 0, 1, 1], [1, 1, 1, 1], iterations=1000)
    """
    diffs, plan, iterations, confidence = _prepare(
        base, cand, iterations=iterations, seed=seed, confidence=confidence, method=method, threads=threads
    )
    if interval not in BOOTSTRAP_INTERVALS:
        raise ValueError(f"interval must be one of {BOOTSTRAP_INTERVALS}, got {interval!r}")
    _run_jobs(_jobs_of([plan]), threads)
    return _finish(diffs, plan, iterations=iterations, seed=seed, confidence=confidence, interval=interval)


def _prepare(
    base: Sequence[float] | np.ndarray,
    cand: Sequence[float] | np.ndarray,
    *,
    iterations: int,
    seed: int,
    confidence: float,
    method: BootstrapMethod,
    threads: int | None,
) -> tuple[np.ndarray, _Plan, int, float]:
    """Check the arguments of :func:`paired_bootstrap` and plan its resampling jobs."""
    iterations = check_positive_int(iterations, "iterations")
    confidence = check_probability(confidence, "confidence")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if threads is not None:
        check_positive_int(threads, "threads")
    if method not in ("auto", "multinomial", "resample"):
        raise ValueError(f"method must be 'auto', 'multinomial' or 'resample', got {method!r}")
    base_arr, cand_arr = paired_arrays(base, cand)
    diffs = cand_arr - base_arr
    return diffs, _plan_means(diffs, iterations=iterations, seed=int(seed), method=method), iterations, confidence


def _finish(
    diffs: np.ndarray, plan: _Plan, *, iterations: int, seed: int, confidence: float, interval: str = "percentile"
) -> BootstrapResult:
    """Read the interval off the resampled means of a plan whose jobs have all run."""
    means = plan.means
    kurtosis = excess_kurtosis(diffs) if interval == "expanded" else 0.0
    low_pos, high_pos = interval_positions(
        iterations, confidence=confidence, n=int(diffs.size), interval=interval, kurtosis=kurtosis
    )
    means.partition((low_pos, high_pos))
    return BootstrapResult(
        estimate=float(diffs.mean()),
        low=float(means[low_pos]),
        high=float(means[high_pos]),
        iterations=iterations,
        seed=int(seed),
        confidence=confidence,
        n=int(diffs.size),
        method=plan.method,
        interval=interval,
    )
