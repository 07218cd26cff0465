"""The engine's fast paths give the same answers as its plain ones.

* retrieval: the dense kernel (questions as columns, 32- or 64-bit codes) against the flat
  ``bincount`` kernel, bit for bit; string ids coded from their bytes against
  ``pandas.factorize``.
* bootstrap: the mixed resampler (frequent differences as multinomial counts, rare ones pooled
  and resampled) against the bootstrap distribution and the plain resampler; ``gate_frame``
  running every (metric, slice) bootstrap on one pool against ``gate`` one by one.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest

from evalcore.engine import (
    EncodedRetrieval,
    _encoding,
    _kernels,
    encode_retrieval,
    gate,
    gate_frame,
    paired_bootstrap,
    score_encoded,
)
from evalcore.engine import bootstrap as bootstrap_module
from evalcore.engine import retrieval as retrieval_module

ALL_METRICS = ("recall", "precision", "rr", "rr@k", "ndcg")


def _flat(encoded, k, *, metrics=("recall", "precision", "rr", "ndcg"), gain="exponential"):
    """The flat kernel, called directly."""
    return _kernels._score_flat(encoded, retrieval_module._resolve_k(k, encoded.n_questions), metrics, gain)


def _random_encoded(rng, *, wide=False):
    n = int(rng.integers(1, 40))
    r_len = rng.integers(0, int(rng.integers(1, 14)), n)
    g_len = rng.integers(0, int(rng.integers(1, 9)), n)
    universe = int(rng.integers(1, 15))
    ranked = rng.integers(0, universe, int(r_len.sum()))
    gold = np.concatenate([rng.choice(max(universe, g), g, replace=False) for g in g_len]).astype(np.int64)
    grades = rng.integers(-1, 4, gold.size).astype(float)
    if rng.random() < 0.3:
        grades += rng.random(gold.size)
    if wide:  # codes beyond 32 bits: 64-bit matrices
        ranked, gold = ranked * (1 << 40) + 3, gold * (1 << 40) + 3
    return EncodedRetrieval(ranked, np.r_[0, np.cumsum(r_len)], gold, grades, np.r_[0, np.cumsum(g_len)]), n


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_dense_kernel_equals_flat_kernel_bit_for_bit(seed, wide):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        encoded, n = _random_encoded(rng, wide=wide)
        k = int(rng.integers(1, 15)) if rng.random() < 0.5 else rng.integers(0, 15, n)
        gain = "exponential" if rng.random() < 0.5 else "linear"
        assert _kernels._score_dense(encoded, retrieval_module._resolve_k(k, n), ALL_METRICS, gain) is not None
        dense = score_encoded(encoded, k, metrics=ALL_METRICS, gain=gain)
        flat = _flat(encoded, k, metrics=ALL_METRICS, gain=gain)
        assert dense.keys() == flat.keys()
        for name in flat:
            assert dense[name].dtype == flat[name].dtype, name
            np.testing.assert_array_equal(dense[name], flat[name], err_msg=name)


def test_dense_kernel_reports_a_duplicate_gold_document_like_the_flat_kernel():
    encoded = EncodedRetrieval.from_padded(np.array([[1, 2], [3, 4]]), np.array([[1, -1], [4, 4]]))
    with pytest.raises(ValueError, match="gold of question 1 lists the same document twice"):
        score_encoded(encoded, 2)
    with pytest.raises(ValueError, match="gold of question 1 lists the same document twice"):
        _flat(encoded, 2)


def test_codes_at_the_ends_of_int64_are_scored_exactly():
    extreme = np.array([-(2**62), 2**62, 5], dtype=np.int64)
    encoded = EncodedRetrieval(extreme, np.array([0, 3]), extreme[[1]], np.array([1.0]), np.array([0, 1]))
    assert score_encoded(encoded, 3)["rr"].tolist() == [0.5]  # (the flat kernel cannot key these)
    wide = EncodedRetrieval(np.array([3, 2**40, 7]), np.array([0, 3]), np.array([2**40]), np.array([1.0]), np.array([0, 1]))
    assert _kernels._score_dense(wide, np.array([3]), ALL_METRICS, "exponential") is not None
    assert score_encoded(wide, 3)["rr"].tolist() == [0.5]


def test_uneven_lists_take_the_flat_kernel_with_the_same_numbers():
    ranked = [["a"] * 300] + [["b", "c"]] * 50
    gold = [{"a": 1}] + [{"c": 2}] * 50
    encoded = encode_retrieval(ranked, gold)
    assert _kernels._score_dense(encoded, np.full(51, 5), ALL_METRICS, "exponential") is None
    out = score_encoded(encoded, 5, metrics=ALL_METRICS)
    assert out["rr"][0] == 1.0 and out["rr"][1] == 0.5


def _same_partition(codes, ids):
    objects = np.empty(len(ids), dtype=object)
    objects[:] = ids
    expected, _ = pd.factorize(objects, use_na_sentinel=False)
    return np.array_equal(pd.factorize(codes)[0], expected)


@pytest.mark.parametrize("seed", range(4))
def test_string_codes_are_equal_exactly_when_the_ids_are(seed):
    rng = random.Random(seed)
    alphabet = ["a", "b", "0", "9", "-", "/", " ", "\x01", "\x7f", "é", "ÿ", "\ud800", "😀"]
    for _ in range(300):
        if rng.random() < 0.4:  # ids of one length (the fast layout)
            length = rng.randint(0, 20)
            pool = ["".join(rng.choice(alphabet[:6]) for _ in range(length)) for _ in range(rng.randint(1, 20))]
        else:
            pool = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, rng.choice([3, 12, 30])))) for _ in range(rng.randint(1, 20))]
        ids = [rng.choice(pool) for _ in range(rng.randint(1, 60))]
        questions = rng.choice([1, 1000, 2**40])
        codes = _encoding._string_codes([([ids], None)], len(ids), questions)
        assert _same_partition(codes, ids), ids
        assert codes.dtype == np.int64 and codes.min() >= 0 and int(codes.max()) * questions < 2**62


@pytest.mark.parametrize(
    "make_id",
    [
        lambda r: f"doc-{r.randrange(500_000):06d}",  # first digit 0-4: three bits, the others four
        lambda r: f"{r.randrange(10**9):09d}",  # nine digits: one word and a byte
        lambda r: f"x{r.randrange(10)}y{r.randrange(10)}z{r.randrange(10)}",  # constant bytes between
        lambda r: f"p{r.randrange(10**7):07d}:{r.randrange(10**3):03d}",  # a separator between runs
        lambda r: f"{r.getrandbits(40):010x}",  # hex: seven varying bits a byte, no folding
    ],
)
def test_string_codes_of_regular_ids_are_exact_and_small(make_id):
    rng = random.Random(5)
    ids = [make_id(rng) for _ in range(5000)]
    ids += rng.sample(ids, 2000)
    codes = _encoding._string_codes([([ids[:3000]], None), ([ids[3000:]], None)], len(ids), 100)
    assert _same_partition(codes, ids)
    assert codes.min() >= 0 and int(codes.max()) * 100 < 2**62


def test_string_codes_of_digit_ids_fit_32_bits():
    rng = random.Random(6)
    ids = [f"doc-{rng.randrange(10**6):06d}" for _ in range(5000)]
    codes = _encoding._string_codes([([ids], None)], len(ids), 10**5)
    assert _same_partition(codes, ids) and int(codes.max()) < 2**31


def test_string_codes_of_long_random_ids_still_fit_the_kernels():
    rng = random.Random(9)
    ids = [f"{rng.getrandbits(256):064x}" for _ in range(3000)]
    ids += ids[:500]
    codes = _encoding._string_codes([([ids], None)], len(ids), 10)
    assert _same_partition(codes, ids)
    assert int(codes.max()) * 10 < 2**62  # 256 varying bits, re-coded along the way


def test_string_codes_decline_non_strings_and_nul_characters():
    assert _encoding._string_codes([([[1, 2]], None)], 2, 1) is None
    assert _encoding._string_codes([([["a", 1]], None)], 2, 1) is None
    assert _encoding._string_codes([([["a\x00b", "c"]], None)], 2, 1) is None
    assert _encoding._string_codes([([[]], None)], 0, 1).tolist() == []
    # and encode_retrieval then codes them with pandas, as before
    encoded = encode_retrieval([[1, 2, "a\x00b"], [2]], [{2: 1}, {"a\x00b"}])
    assert encoded.ranked_docs[1] == encoded.ranked_docs[3] == encoded.gold_docs[0]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("odd_ids", [False, True])
def test_encode_retrieval_codes_many_questions_as_pandas_factorize_would(seed, odd_ids):
    rng = random.Random(seed)
    pool = [f"doc-{i:06d}" for i in rng.sample(range(10**6), 3000)] + (["", "é/x", "q\ud800"] if odd_ids else [])
    ranked = [[rng.choice(pool) for _ in range(rng.choice([0, 0, 1, 3, 20]))] for _ in range(9000)]
    gold = [{rng.choice(pool): rng.randint(0, 3) for _ in range(rng.randint(0, 4))} for _ in range(9000)]
    encoded = encode_retrieval(ranked, gold)
    ids = [doc for docs in ranked for doc in docs] + [doc for g in gold for doc in g]
    assert _same_partition(np.concatenate([encoded.ranked_docs, encoded.gold_docs]), ids)
    assert encoded.ranked_offsets.tolist() == np.cumsum([0] + [len(r) for r in ranked]).tolist()
    assert encoded.gold_grades.tolist() == [float(v) for g in gold for v in g.values()]


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
            decision.metric, base.loc[mask, decision.metric], cand.loc[mask, decision.metric],
            iterations=2000, seed=5, slice=decision.slice, threads=1,
        )
        assert decision == direct
