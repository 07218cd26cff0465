"""SciPy's percentile paired bootstrap: the independent anchor for ours (one copy for the tests and the benchmarks)."""

from __future__ import annotations

import numpy as np
from scipy import stats


def scipy_paired_bootstrap(
    base, cand, *, confidence: float = 0.95, seed: int = 0, n_resamples: int = 10_000, batch: int | None = None
):
    """Return SciPy's percentile interval ``(low, high)`` of the mean of ``cand - base``, paired by position.

    ``batch`` bounds how many resamples SciPy holds at once (its memory), as in ``scipy.stats.bootstrap``.
    """
    result = stats.bootstrap(
        (np.asarray(base, dtype=float), np.asarray(cand, dtype=float)),
        lambda b, c, axis=-1: np.mean(c - b, axis=axis),
        paired=True,
        vectorized=True,
        method="percentile",
        confidence_level=confidence,
        n_resamples=n_resamples,
        batch=batch,
        rng=np.random.default_rng(seed),
    )
    return result.confidence_interval
