"""The two scoring kernels of the batch retrieval scorer, called directly on the same encoded input.

``_kernels._score_dense`` (questions as columns of small matrices, 32- or 64-bit codes) and
``_kernels._score_flat`` (``bincount`` reductions over the flat arrays) must agree bit for bit with
each other, and with the spec's own per-question functions (``spec_reference``) where the spec's
conventions hold (no repeated document, every judged document relevant, k at least 1).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.engine import EncodedRetrieval, encode_retrieval, score_encoded
from evalcore.engine._kernels import _score_dense, _score_flat
from evalcore.engine.retrieval import GAINS, RETRIEVAL_METRICS, _resolve_k

from . import spec_reference as spec
from .strategies import question

ALL_METRICS = RETRIEVAL_METRICS


def both_kernels(encoded, k, *, metrics=ALL_METRICS, gain="exponential"):
    """Run each kernel directly on the same input; the dense one must accept it."""
    k_q = _resolve_k(k, encoded.n_questions)
    dense = _score_dense(encoded, k_q, metrics, gain)
    assert dense is not None, "the dense kernel declined this input"
    return dense, _score_flat(encoded, k_q, metrics, gain)


def assert_identical(dense, flat):
    assert dense.keys() == flat.keys()
    for name in flat:
        assert dense[name].dtype == flat[name].dtype, name
        np.testing.assert_array_equal(dense[name], flat[name], err_msg=name)


# --------------------------------------------------------------------------------------------
# Dense against flat, and both against the spec's functions
# --------------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(question(), min_size=1, max_size=12), st.lists(st.integers(1, 12), min_size=12, max_size=12))
def test_dense_and_flat_kernels_equal_each_other_and_the_spec_functions(questions, ks):
    ranked = [r for r, _ in questions]
    grades = [g for _, g in questions]
    ks = ks[: len(questions)]
    encoded = encode_retrieval(ranked, grades)
    dense, flat = both_kernels(encoded, ks, gain="exponential")
    assert_identical(dense, flat)
    for i, (r, g, k) in enumerate(zip(ranked, grades, ks, strict=True)):
        gold = set(g)
        assert dense["recall"][i] == pytest.approx(spec.recall_at_k(r, gold, k), rel=1e-12)
        assert dense["precision"][i] == pytest.approx(spec.precision_at_k(r, gold, k), rel=1e-12)
        assert dense["rr"][i] == pytest.approx(spec.reciprocal_rank(r, gold), rel=1e-12)
        assert dense["rr@k"][i] == pytest.approx(spec.reciprocal_rank(r[:k], gold), rel=1e-12)
        assert dense["ndcg"][i] == pytest.approx(spec.ndcg_at_k(r, g, k), rel=1e-12, abs=1e-12)
        assert dense["n_relevant"][i] == len(g) and dense["k"][i] == k


@pytest.mark.parametrize("gain", GAINS)
def test_the_spec_example_through_each_kernel(gain):
    encoded = encode_retrieval([spec.SPEC_RANKED], [spec.SPEC_GRADES])
    dense, flat = both_kernels(encoded, 5, gain=gain)
    assert_identical(dense, flat)
    assert [round(float(dense[m][0]), 3) for m in ("recall", "precision", "rr")] == [0.667, 0.4, 0.5]
    if gain == "exponential":
        assert round(float(dense["ndcg"][0]), 3) == 0.516


def test_each_kernel_returns_only_the_metrics_asked_for():
    encoded = encode_retrieval([["a", "b"]], [{"b": 1}])
    for metrics in (["recall"], ["rr@k"], ["ndcg"], ["precision", "rr"]):
        dense, flat = both_kernels(encoded, 2, metrics=metrics)
        assert_identical(dense, flat)
        assert set(dense) == {*metrics, "n_relevant", "k"}


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


# --------------------------------------------------------------------------------------------
# Dense against flat on random integer-coded input (32- and 64-bit codes)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_dense_kernel_equals_flat_kernel_bit_for_bit(seed, wide):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        encoded, n = _random_encoded(rng, wide=wide)
        k = int(rng.integers(1, 15)) if rng.random() < 0.5 else rng.integers(0, 15, n)
        gain = "exponential" if rng.random() < 0.5 else "linear"
        dense, flat = both_kernels(encoded, k, gain=gain)
        assert_identical(dense, flat)
        # and score_encoded dispatches to the dense kernel here
        assert_identical(score_encoded(encoded, k, metrics=ALL_METRICS, gain=gain), dense)


def test_dense_kernel_reports_a_duplicate_gold_document_like_the_flat_kernel():
    encoded = EncodedRetrieval.from_padded(np.array([[1, 2], [3, 4]]), np.array([[1, -1], [4, 4]]))
    k_q = np.array([2, 2])
    with pytest.raises(ValueError, match="gold of question 1 lists the same document twice"):
        _score_dense(encoded, k_q, ALL_METRICS, "exponential")
    with pytest.raises(ValueError, match="gold of question 1 lists the same document twice"):
        _score_flat(encoded, k_q, ALL_METRICS, "exponential")


def test_codes_at_the_ends_of_int64_are_scored_exactly():
    extreme = np.array([-(2**62), 2**62, 5], dtype=np.int64)
    encoded = EncodedRetrieval(extreme, np.array([0, 3]), extreme[[1]], np.array([1.0]), np.array([0, 1]))
    assert score_encoded(encoded, 3)["rr"].tolist() == [0.5]  # (the flat kernel cannot key these)
    wide = EncodedRetrieval(
        np.array([3, 2**40, 7]), np.array([0, 3]), np.array([2**40]), np.array([1.0]), np.array([0, 1])
    )
    assert _score_dense(wide, np.array([3]), ALL_METRICS, "exponential") is not None
    assert score_encoded(wide, 3)["rr"].tolist() == [0.5]


def test_uneven_lists_take_the_flat_kernel_with_the_same_numbers():
    ranked = [["a"] * 300] + [["b", "c"]] * 50
    gold = [{"a": 1}] + [{"c": 2}] * 50
    encoded = encode_retrieval(ranked, gold)
    assert _score_dense(encoded, np.full(51, 5), ALL_METRICS, "exponential") is None
    out = score_encoded(encoded, 5, metrics=ALL_METRICS)
    assert out["rr"][0] == 1.0 and out["rr"][1] == 0.5
    assert_identical(out, _score_flat(encoded, np.full(51, 5), ALL_METRICS, "exponential"))
