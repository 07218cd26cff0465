"""The engine's fast paths give the same answers as its plain ones.

(The retrieval kernels and the string-id encoder have their own files: ``test_kernels.py`` and
``test_encoding.py``.)

* bootstrap: the mixed resampler (frequent differences as multinomial counts, rare ones pooled
  and resampled) against the bootstrap distribution and the plain resampler; ``gate_frame``
  running every (metric, slice) bootstrap on one pool against ``gate`` one by one.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from evalcore.engine import bootstrap as bootstrap_module
from evalcore.engine import gate, gate_frame, paired_bootstrap

# --------------------------------------------------------------------------------------------
# The mixed resampler
# --------------------------------------------------------------------------------------------


def _heavy_and_tail(n, seed):
    rng = np.random.default_rng(seed)
    common = rng.choice([-1.0, -0.5, 0.5, 1.0], n)
    rare = rng.normal(0, 0.3, n)
    return np.where(rng.random(n) < 0.6, 0.0, np.where(rng.random(n) < 0.5, common, rare))


def test_auto_mixes_the_two_resamplers_for_frequent_values_with_a_long_tail():
    diffs = _heavy_and_tail(3000, 1)
    assert paired_bootstrap(np.zeros(diffs.size), diffs, iterations=100).method == "mixed"
    # all distinct: plain resampling; a handful of values: the multinomial shortcut
    rng = np.random.default_rng(2)
    assert paired_bootstrap(rng.random(3000), rng.random(3000), iterations=100).method == "resample"
    assert paired_bootstrap(np.zeros(3000), rng.choice([0.0, 1.0], 3000), iterations=100).method == "multinomial"


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
    report = gate_frame(base, cand, slice_by="kind", iterations=2000, seed=5, threads=2)
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
        )
        assert decision == direct
