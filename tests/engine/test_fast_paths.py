"""The engine's fast paths give the same answers as its plain ones.

(The retrieval kernels and the string-id encoder have their own files: ``test_kernels.py`` and
``test_encoding.py``.)

* bootstrap: the mixed resampler (frequent differences as multinomial counts, rare ones pooled
  and resampled) against the bootstrap distribution and the plain resampler; the binned resampler
  (large n, many distinct differences) against the exact resampler and SciPy within the
  bootstrap's own Monte Carlo error; ``gate_frame`` running every (metric, slice) bootstrap on one
  pool against ``gate`` one by one.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from evalcore.engine import bootstrap as bootstrap_module
from evalcore.engine import gate, gate_frame, paired_bootstrap

from .scipy_reference import scipy_paired_bootstrap

# --------------------------------------------------------------------------------------------
# The mixed resampler
# --------------------------------------------------------------------------------------------


def _heavy_and_tail(n, seed):
    rng = np.random.default_rng(seed)
    common = rng.choice([-1.0, -0.5, 0.5, 1.0], n)
    rare = rng.normal(0, 0.3, n)
    return np.where(rng.random(n) < 0.6, 0.0, np.where(rng.random(n) < 0.5, common, rare))


def test_auto_mixes_the_two_resamplers_for_frequent_values_with_a_long_tail():
    diffs = _heavy_and_tail(1500, 1)  # below BINNED_MIN_N: only exact resamplers
    assert paired_bootstrap(np.zeros(diffs.size), diffs, iterations=100).method == "mixed"
    # all distinct: plain resampling; a handful of values: the multinomial shortcut
    rng = np.random.default_rng(2)
    assert paired_bootstrap(rng.random(1500), rng.random(1500), iterations=100).method == "resample"
    assert paired_bootstrap(np.zeros(1500), rng.choice([0.0, 1.0], 1500), iterations=100).method == "multinomial"


def test_mixed_resampler_has_the_exact_bootstrap_mean_and_variance():
    diffs = _heavy_and_tail(2000, 3)
    means, used = bootstrap_module.resampled_means(diffs, iterations=20_000, seed=11, method="mixed")
    assert used == "mixed"
    expected_sd = diffs.std() / math.sqrt(diffs.size)
    assert means.mean() == pytest.approx(diffs.mean(), abs=4 * expected_sd / math.sqrt(20_000))
    assert means.std() == pytest.approx(expected_sd, rel=0.03)


def test_mixed_and_plain_resampling_give_the_same_distribution():
    diffs = _heavy_and_tail(1500, 4)
    mixed, _ = bootstrap_module.resampled_means(diffs, iterations=20_000, seed=1, method="mixed")
    plain, _ = bootstrap_module.resampled_means(diffs, iterations=20_000, seed=2, method="resample")
    sd = diffs.std() / math.sqrt(diffs.size)
    for q in (0.01, 0.025, 0.1, 0.5, 0.9, 0.975, 0.99):
        assert abs(np.quantile(mixed, q) - np.quantile(plain, q)) < 0.1 * sd * 4


def test_mixed_resampler_does_not_depend_on_threads_or_blocks(monkeypatch):
    diffs = _heavy_and_tail(2000, 5)
    one, _ = bootstrap_module.resampled_means(diffs, iterations=3000, seed=7, method="mixed", threads=1)
    monkeypatch.setattr(bootstrap_module, "CHUNK_ELEMENTS", 4_000)  # many chunks for the threads
    many, _ = bootstrap_module.resampled_means(diffs, iterations=3000, seed=7, method="mixed", threads=1)
    four, _ = bootstrap_module.resampled_means(diffs, iterations=3000, seed=7, method="mixed", threads=4)
    np.testing.assert_array_equal(many, four)
    assert many.std() == pytest.approx(one.std(), rel=0.1)


# --------------------------------------------------------------------------------------------
# The binned resampler (large n, many distinct differences)
# --------------------------------------------------------------------------------------------

R = 10_000
LOW, HIGH = bootstrap_module.percentile_positions(R)


def _awkward(kind: str, n: int) -> np.ndarray:
    """Differences shaped as real ones can be: skewed, heavy-tailed, mostly unchanged, bimodal, with outliers."""
    r = np.random.default_rng(n + len(kind))
    return {
        "normal": lambda: r.normal(0.01, 0.1, n),
        "lognormal": lambda: r.lognormal(0, 1.0, n) - 1.5,
        "heavy-tailed": lambda: r.standard_t(2, n) * 0.05,
        "half unchanged": lambda: np.where(r.random(n) < 0.5, 0.0, r.beta(0.5, 3, n) - 0.1),
        "bimodal": lambda: np.where(r.random(n) < 0.9, r.normal(0, 0.02, n), r.normal(-0.5, 0.1, n)),
        "rare outliers": lambda: np.where(r.random(n) < 0.995, r.normal(0, 0.05, n), r.normal(3, 1, n)),
    }[kind]()


def _bounds(diffs: np.ndarray, method: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    means, used = bootstrap_module.resampled_means(diffs, iterations=R, seed=seed, method=method)  # type: ignore[arg-type]
    assert used == method
    ordered = np.sort(means)
    return np.array([ordered[LOW], ordered[HIGH]]), ordered


def _monte_carlo_error(ordered: np.ndarray) -> np.ndarray:
    """The standard error of the interval's bounds from R resamples: sqrt(p(1-p)/R) / density at the quantile."""
    errors = []
    for p in (0.025, 0.975):
        slope = (np.quantile(ordered, p + 0.01) - np.quantile(ordered, p - 0.01)) / 0.02  # 1 / density
        errors.append(math.sqrt(p * (1 - p) / R) * slope)
    return np.array(errors)


@pytest.mark.parametrize("n", [bootstrap_module.BINNED_MIN_N, 10_000])
@pytest.mark.parametrize("kind", ["normal", "lognormal", "heavy-tailed", "half unchanged", "bimodal", "rare outliers"])
def test_binned_intervals_agree_with_the_exact_resampler_within_its_monte_carlo_error(kind, n):
    diffs = _awkward(kind, n)
    exact, ordered = _bounds(diffs, "resample", seed=1)
    binned, _ = _bounds(diffs, "binned", seed=2)
    # two independent estimates of each bound: their difference has sd sqrt(2) x the Monte Carlo error
    assert np.all(np.abs(binned - exact) <= 4 * math.sqrt(2) * _monte_carlo_error(ordered))


def test_binned_interval_agrees_with_scipy_percentile_bootstrap():
    diffs = _awkward("lognormal", 5000)
    low, high = scipy_paired_bootstrap(np.zeros(diffs.size), diffs, seed=3, batch=500)
    ours = paired_bootstrap(np.zeros(diffs.size), diffs, seed=4)
    assert ours.method == "binned"
    _, ordered = _bounds(diffs, "resample", seed=5)
    error = 4 * math.sqrt(2) * _monte_carlo_error(ordered)
    assert abs(ours.low - low) <= error[0] and abs(ours.high - high) <= error[1]


def test_binned_resampler_has_the_exact_bootstrap_mean_and_variance():
    diffs = _awkward("lognormal", 8000)
    means, used = bootstrap_module.resampled_means(diffs, iterations=40_000, seed=11, method="binned")
    assert used == "binned"
    expected_sd = diffs.std() / math.sqrt(diffs.size)
    assert means.mean() == pytest.approx(diffs.mean(), abs=4 * expected_sd / math.sqrt(40_000))
    assert means.std() == pytest.approx(expected_sd, rel=0.02)


def test_auto_bins_only_large_samples_with_many_distinct_differences():
    rng = np.random.default_rng(12)
    small = bootstrap_module.BINNED_MIN_N - 1
    assert paired_bootstrap(rng.random(small), rng.random(small), iterations=100).method == "resample"
    large = 50_000
    assert paired_bootstrap(rng.random(large), rng.random(large), iterations=100).method == "binned"
    # few distinct differences stay exact (multinomial) at any n
    assert paired_bootstrap(np.zeros(large), rng.choice([0.0, 1.0], large), iterations=100).method == "multinomial"


def test_binned_results_depend_on_the_seed_only_not_threads_chunks_or_other_bootstraps(monkeypatch):
    diffs = _awkward("bimodal", 6000)
    alone = paired_bootstrap(np.zeros(diffs.size), diffs, seed=9, threads=1)
    monkeypatch.setattr(bootstrap_module, "CHUNK_ELEMENTS", 50_000)  # many chunks for the threads
    chunked = paired_bootstrap(np.zeros(diffs.size), diffs, seed=9, threads=1)
    threaded = paired_bootstrap(np.zeros(diffs.size), diffs, seed=9, threads=4)
    assert chunked == threaded and alone.method == chunked.method == "binned"
    assert abs(alone.low - chunked.low) < 0.1 * (alone.high - alone.low)


def test_gate_frame_on_one_pool_equals_gate_one_by_one():
    rng = np.random.default_rng(8)
    n = 3000
    base = pd.DataFrame(
        {
            "kind": rng.choice(["a", "b", "c"], n),
            "tail": np.zeros(n),
            "continuous": rng.random(n),
            "binary": rng.choice([0.0, 1.0], n),
        }
    )
    cand = base.copy()
    cand["tail"] = _heavy_and_tail(n, 9)
    cand["continuous"] = base["continuous"] + rng.normal(0, 0.05, n)
    cand["binary"] = np.where(rng.random(n) < 0.1, 1 - base["binary"], base["binary"])
    report = gate_frame(base, cand, slice_by="kind", iterations=2000, seed=5, threads=2, sign_flips=5000)
    assert len(report.decisions) == 3 * 4
    for decision in report.decisions:
        mask = np.ones(n, bool) if decision.slice == "all" else (base["kind"] == decision.slice).to_numpy()
        direct = gate(
            decision.metric,
            base.loc[mask, decision.metric],
            cand.loc[mask, decision.metric],
            iterations=2000,
            seed=5,
            slice=decision.slice,
            threads=1,
            sign_flips=5000,
        )
        # the same evidence; only the family (12 decisions, or 1 alone) and so the adjusted p-value may differ
        alone = replace(
            decision, p_adjusted=direct.p_adjusted, family_size=1, status=direct.status, message=direct.message
        )
        assert alone == direct
