"""Paired bootstrap, 10,000 resamples: ours against the spec's loop and SciPy, with peak memory."""

from __future__ import annotations

from functools import partial

import numpy as np

from evalcore.engine import paired_bootstrap
from tests.engine.scipy_reference import scipy_paired_bootstrap

from . import spec
from ._common import Targets, best_time, fmt_mb, fmt_ratio, fmt_time, peak_memory, print_table
from .data import bootstrap_pairs

ITERATIONS = 10_000
MEMORY_LIMIT = 300 * 2**20
MULTINOMIAL_LIMIT = 0.010  # seconds: "about 10 ms at any n"
SPEC_ELEMENTS = 2_000_000  # iterations x n measured for the spec's loop before extrapolating
SCIPY_BATCH_ELEMENTS = 2_000_000  # resamples x n per SciPy batch: bounds its memory


def _scipy(base: np.ndarray, cand: np.ndarray, n_resamples: int):
    return scipy_paired_bootstrap(
        base, cand, seed=7, n_resamples=n_resamples, batch=max(1, SCIPY_BATCH_ELEMENTS // base.size)
    )


def run(targets: Targets, *, quick: bool = False) -> None:
    sizes = (300, 10_000) if quick else (300, 10_000, 100_000)
    spec_budget = SPEC_ELEMENTS // 4 if quick else SPEC_ELEMENTS
    rows = []
    notes = []
    ours_at: dict[tuple[int, str], float] = {}
    ratios: dict[tuple[int, str], tuple[float, float]] = {}
    peaks: dict[tuple[int, str], int] = {}
    for n in sizes:
        for kind in ("continuous", "pass/fail"):
            base, cand = bootstrap_pairs(n, kind)
            repeats = 5 if (kind == "pass/fail" or n <= 10_000) else 2
            if quick:
                repeats = min(repeats, 2)
            ours, result = best_time(partial(paired_bootstrap, base, cand, iterations=ITERATIONS), repeats)
            peak, _ = peak_memory(partial(paired_bootstrap, base, cand, iterations=ITERATIONS))

            # the spec's loop in full at n=300; at larger n on fewer iterations, extrapolated
            spec_iters = ITERATIONS if n <= 300 else min(ITERATIONS, max(10, spec_budget // n))
            base_list, cand_list = base.tolist(), cand.tolist()
            spec_time, spec_result = best_time(
                partial(spec.paired_bootstrap, base_list, cand_list, iters=spec_iters), 1
            )
            spec_full = spec_time * ITERATIONS / spec_iters
            spec_label = fmt_time(spec_full) + (
                ""
                if spec_iters == ITERATIONS
                else f" (extrapolated x{ITERATIONS / spec_iters:g} from {spec_iters} it.)"
            )

            scipy_resamples = ITERATIONS if n <= 10_000 and not (quick and n > 300) else ITERATIONS // 10
            scipy_time, interval = best_time(partial(_scipy, base, cand, scipy_resamples), 1)
            scipy_peak, _ = peak_memory(partial(_scipy, base, cand, scipy_resamples))
            scipy_full = scipy_time * ITERATIONS / scipy_resamples
            scipy_label = fmt_time(scipy_full) + (
                ""
                if scipy_resamples == ITERATIONS
                else f" (extrapolated x{ITERATIONS / scipy_resamples:g} from {scipy_resamples})"
            )

            ours_at[(n, kind)] = ours
            ratios[(n, kind)] = (spec_full / ours, scipy_full / ours)
            peaks[(n, kind)] = peak
            rows.append(
                [
                    f"n={n:,} {kind}",
                    result.method,
                    fmt_time(ours),
                    spec_label,
                    fmt_ratio(spec_full / ours),
                    scipy_label,
                    fmt_ratio(scipy_full / ours),
                    fmt_mb(peak),
                    fmt_mb(scipy_peak),
                    f"[{result.low:+.4f}, {result.high:+.4f}]",
                    f"[{interval.low:+.4f}, {interval.high:+.4f}]",
                ]
            )
            if n == 300:
                notes.append(
                    f"n=300 {kind}: spec loop interval [{spec_result[1]:+.4f}, {spec_result[2]:+.4f}] (seed 7, its own generator)"
                )
    print_table(
        f"Paired bootstrap, {ITERATIONS:,} resamples (ours: best of repeated runs; ratios = their time / ours)",
        [
            "data",
            "ours via",
            "ours",
            "spec loop",
            "vs spec",
            "SciPy",
            "vs SciPy",
            "our peak",
            "SciPy peak",
            "ours CI",
            "SciPy CI",
        ],
        rows,
        notes
        + [
            "spec loop: the spec's pure-Python paired_bootstrap, timed in full at n=300; at larger n timed on",
            "  fewer iterations and extrapolated linearly in iterations x n (marked 'extrapolated').",
            "SciPy: scipy.stats.bootstrap(paired=True, vectorized=True, method='percentile'), batch of",
            f"  {SCIPY_BATCH_ELEMENTS:,} resampled elements; at n=100,000 timed on 1,000 resamples and extrapolated.",
            "peak: extra memory allocated during one call (tracemalloc: numpy buffers and Python objects, all threads).",
        ],
    )
    mid = (10_000, "continuous")
    spec_ratio, scipy_ratio = ratios[mid]
    targets.check(
        spec_ratio >= 40, f"bootstrap n=10,000 continuous: {fmt_ratio(spec_ratio)} the spec's loop (target >= 40x)"
    )
    targets.check(
        scipy_ratio > 1, f"bootstrap n=10,000 continuous: {fmt_ratio(scipy_ratio)} SciPy (target: faster, > 1x)"
    )
    worst = max(peaks.values())
    targets.check(
        worst < MEMORY_LIMIT,
        "bootstrap peak memory under 300 MB at every n: worst "
        + fmt_mb(worst)
        + " ("
        + ", ".join(f"n={n:,}: {fmt_mb(max(peaks[(n, k)] for k in ('continuous', 'pass/fail')))}" for n in sizes)
        + ")",
    )
    multinomial = {n: ours_at[(n, "pass/fail")] for n in sizes}
    targets.check(
        max(multinomial.values()) <= MULTINOMIAL_LIMIT,
        "bootstrap multinomial path about 10 ms at any n (<= 10 ms): "
        + ", ".join(f"n={n:,}: {fmt_time(t)}" for n, t in multinomial.items()),
    )
