"""Retrieval metrics: conventions of the per-question functions, the batch scorer and the summary."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore import engine
from evalcore.engine import (
    EncodedRetrieval,
    encode_retrieval,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    score_encoded,
    score_retrieval,
    summarize_retrieval,
)

from . import spec_reference as spec
from .kernels import KERNELS, kernel
from .strategies import graded_gold, question, question_batch, ranked_list

ALL_METRICS = ["recall", "precision", "rr", "rr@k", "ndcg"]


# --------------------------------------------------------------------------------------------
# Per-question conventions
# --------------------------------------------------------------------------------------------


def test_recall_counts_a_repeated_document_once():
    assert recall_at_k(["a", "a", "b"], {"a", "c"}, 3) == 0.5


def test_precision_counts_a_repeated_relevant_document_once():
    assert precision_at_k(["a", "a", "a"], {"a"}, 3) == pytest.approx(1 / 3)


def test_ndcg_scores_a_repeated_document_at_its_first_position_only_and_stays_at_most_one():
    once = ndcg_at_k(["a", "x"], {"a": 2, "b": 1}, 2)
    repeated = ndcg_at_k(["a", "a"], {"a": 2, "b": 1}, 2)
    assert repeated == pytest.approx(once)
    assert ndcg_at_k(["a", "a", "a"], {"a": 1}, 3) == pytest.approx(1.0)


def test_reciprocal_rank_of_a_document_first_seen_late_uses_its_first_rank():
    assert reciprocal_rank(["x", "a", "a"], {"a"}) == 0.5


def test_precision_divides_by_k_even_when_fewer_results_were_returned():
    assert precision_at_k(["a"], {"a"}, 5) == pytest.approx(0.2)


def test_recall_with_k_beyond_the_list_length_uses_the_whole_list():
    assert recall_at_k(["a", "b"], {"a", "b", "c", "d"}, 50) == 0.5


def test_recall_ignores_relevant_documents_after_rank_k():
    assert recall_at_k(["x", "y", "a"], {"a"}, 2) == 0.0
    assert recall_at_k(["x", "y", "a"], {"a"}, 3) == 1.0


def test_reciprocal_rank_looks_at_the_whole_list_by_default():
    assert reciprocal_rank(["x", "y", "z", "a"], {"a"}) == 0.25


def test_reciprocal_rank_with_k_looks_only_at_the_top_k():
    assert reciprocal_rank(["x", "y", "z", "a"], {"a"}, k=3) == 0.0
    assert reciprocal_rank(["x", "y", "z", "a"], {"a"}, k=4) == 0.25


def test_reciprocal_rank_is_zero_when_no_relevant_document_is_retrieved():
    assert reciprocal_rank(["x", "y"], {"a"}) == 0.0
    assert reciprocal_rank([], {"a"}) == 0.0


EVERY_METRIC = [
    lambda r, g: recall_at_k(r, g, 3),
    lambda r, g: precision_at_k(r, g, 3),
    lambda r, g: reciprocal_rank(r, g),
    lambda r, g: ndcg_at_k(r, g, 3),
    lambda r, g: ndcg_at_k(r, g, 3, gain="linear"),
]


@pytest.mark.parametrize("gold", [set(), {}, []])
@pytest.mark.parametrize("metric", EVERY_METRIC)
def test_every_metric_is_nan_for_a_question_without_any_gold_judgment(metric, gold):
    assert math.isnan(metric(["a", "b", "c"], gold))


@pytest.mark.parametrize("gold", [{"a": 0}, {"a": 0, "b": -1}, {"z": 0}])
@pytest.mark.parametrize("metric", EVERY_METRIC)
def test_every_metric_is_zero_for_judged_gold_that_holds_no_relevant_document(metric, gold):
    """trec_eval and the spec's nDCG score it 0 and keep it in the means; so does the engine."""
    assert metric(["a", "b", "c"], gold) == 0.0


def test_a_grade_zero_judgment_is_judged_but_not_relevant():
    gold = {"a": 0, "b": 1}
    assert recall_at_k(["a"], gold, 1) == 0.0
    assert precision_at_k(["a", "b"], gold, 2) == 0.5
    assert reciprocal_rank(["a", "b"], gold) == 0.5
    # the ideal order contains only b, so b at rank 2 gives 1/log2(3)
    assert ndcg_at_k(["a", "b"], gold, 2) == pytest.approx(1 / math.log2(3))


def test_the_spec_code_differs_on_grade_zero_where_the_engine_follows_trec_eval():
    gold = {"a": 0, "b": 1}
    # the spec counts every key as gold: recall 1/2; the engine: a is not relevant, recall 0
    assert spec.recall_at_k(["a"], set(gold), 1) == 0.5
    assert recall_at_k(["a"], gold, 1) == 0.0


def test_the_spec_code_fails_on_empty_gold_where_the_engine_returns_nan():
    with pytest.raises(ZeroDivisionError):
        spec.recall_at_k(["a"], set(), 1)
    assert spec.ndcg_at_k(["a"], {}, 1) == 0.0
    assert math.isnan(recall_at_k(["a"], set(), 1))
    assert math.isnan(ndcg_at_k(["a"], {}, 1))


def test_a_plain_set_of_gold_ids_means_grade_one_for_each():
    ranked = ["x", "a", "b"]
    assert ndcg_at_k(ranked, {"a", "b"}, 3) == pytest.approx(ndcg_at_k(ranked, {"a": 1, "b": 1}, 3))


def test_the_gains_agree_on_binary_grades_and_differ_on_graded_ones():
    ranked = ["x", "a", "b", "c"]
    binary = {"a": 1, "b": 1, "c": 1, "d": 1}
    assert ndcg_at_k(ranked, binary, 4, gain="linear") == pytest.approx(
        ndcg_at_k(ranked, binary, 4, gain="exponential")
    )
    graded = {"a": 1, "b": 3, "d": 2}
    assert ndcg_at_k(ranked, graded, 4, gain="linear") != pytest.approx(
        ndcg_at_k(ranked, graded, 4, gain="exponential")
    )


def test_linear_gain_ndcg_matches_a_hand_computation():
    # dcg = 1/log2(3) + 3/log2(4); ideal (3, 2, 1) = 3 + 2/log2(3) + 1/2
    value = ndcg_at_k(["x", "a", "b"], {"a": 1, "b": 3, "d": 2}, 3, gain="linear")
    expected = (1 / math.log2(3) + 3 / 2) / (3 + 2 / math.log2(3) + 0.5)
    assert value == pytest.approx(expected, rel=1e-12)


def test_ndcg_ideal_order_is_cut_at_k():
    # only one slot: the ideal is the grade-3 document alone
    assert ndcg_at_k(["b"], {"a": 3, "b": 1}, 1) == pytest.approx((2**1 - 1) / (2**3 - 1))


def test_fractional_grades_are_used_as_given():
    assert ndcg_at_k(["a", "b"], {"a": 0.5, "b": 1.5}, 2, gain="linear") == pytest.approx(
        (0.5 + 1.5 / math.log2(3)) / (1.5 + 0.5 / math.log2(3))
    )


def test_metrics_accept_tuples_and_numpy_arrays_as_ranked_lists():
    for ranked in (("d7", "d2", "d9"), np.array(["d7", "d2", "d9"])):
        assert recall_at_k(ranked, {"d2"}, 3) == 1.0
        assert reciprocal_rank(ranked, {"d2"}) == 0.5
        assert ndcg_at_k(ranked, {"d2": 1}, 3) == pytest.approx(1 / math.log2(3))


def test_integer_ids_are_fine():
    assert recall_at_k([3, 1, 2], {1, 9}, 2) == 0.5


def test_numpy_integer_k_is_accepted():
    assert recall_at_k(["a"], {"a"}, np.int64(1)) == 1.0


# --------------------------------------------------------------------------------------------
# Against the spec's own code (no duplicates, every grade above 0)
# --------------------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(question(), st.integers(1, 12))
def test_recall_precision_rr_and_ndcg_equal_the_spec_functions(q, k):
    ranked, grades = q
    gold = set(grades)
    assert recall_at_k(ranked, gold, k) == pytest.approx(spec.recall_at_k(ranked, gold, k))
    assert precision_at_k(ranked, gold, k) == pytest.approx(spec.precision_at_k(ranked, gold, k))
    assert reciprocal_rank(ranked, gold) == pytest.approx(spec.reciprocal_rank(ranked, gold))
    assert ndcg_at_k(ranked, grades, k) == pytest.approx(spec.ndcg_at_k(ranked, grades, k), rel=1e-12, abs=1e-12)
    # graded gold gives the same recall/precision/rr as its set of ids when every grade is above 0
    assert recall_at_k(ranked, grades, k) == recall_at_k(ranked, gold, k)
    assert precision_at_k(ranked, grades, k) == precision_at_k(ranked, gold, k)
    assert reciprocal_rank(ranked, grades) == reciprocal_rank(ranked, gold)


@settings(max_examples=60, deadline=None)
@given(question(zero_grades=True), st.integers(1, 12))
def test_with_grade_zero_the_engine_equals_the_spec_on_the_relevant_documents_only(q, k):
    ranked, grades = q
    relevant = {d: g for d, g in grades.items() if g > 0}
    assert recall_at_k(ranked, grades, k) == pytest.approx(spec.recall_at_k(ranked, set(relevant), k))
    assert precision_at_k(ranked, grades, k) == pytest.approx(spec.precision_at_k(ranked, set(relevant), k))
    # for nDCG a grade-0 key adds nothing to the spec's sums either
    assert ndcg_at_k(ranked, grades, k) == pytest.approx(spec.ndcg_at_k(ranked, grades, k), rel=1e-12, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(question(duplicates=True), st.integers(1, 12))
def test_with_duplicates_the_engine_equals_the_spec_on_the_first_occurrences(q, k):
    ranked, grades = q
    # first occurrences keep their rank; later repeats become non-relevant placeholders
    placeholders = [d if d not in ranked[:i] else f"repeat-{i}" for i, d in enumerate(ranked)]
    assert recall_at_k(ranked, grades, k) == pytest.approx(spec.recall_at_k(placeholders, set(grades), k))
    assert precision_at_k(ranked, grades, k) == pytest.approx(spec.precision_at_k(placeholders, set(grades), k))
    assert reciprocal_rank(ranked, grades) == pytest.approx(spec.reciprocal_rank(placeholders, set(grades)))
    assert ndcg_at_k(ranked, grades, k) == pytest.approx(spec.ndcg_at_k(placeholders, grades, k), abs=1e-12)
    assert ndcg_at_k(ranked, grades, k) <= 1.0 + 1e-12


# --------------------------------------------------------------------------------------------
# The batch scorer
# --------------------------------------------------------------------------------------------


def test_score_retrieval_returns_one_row_per_question_with_named_columns():
    frame = score_retrieval([["a", "b"], ["c"]], [{"a"}, {"c": 2}], 5, question_ids=["q1", "q2"])
    assert list(frame.index) == ["q1", "q2"]
    assert frame.index.name == "question"
    assert list(frame.columns) == ["k", "n_relevant", "answerable", "recall@5", "precision@5", "rr", "ndcg@5"]
    assert frame["k"].tolist() == [5, 5]
    assert frame["n_relevant"].tolist() == [1, 1]
    assert frame["answerable"].tolist() == [True, True]


def test_score_retrieval_names_columns_with_k_label_when_k_varies():
    frame = score_retrieval([["a"], ["b"]], [{"a"}, {"b"}], [1, 3], metrics=ALL_METRICS)
    assert {"recall@k", "precision@k", "rr", "rr@k", "ndcg@k"} <= set(frame.columns)
    frame = score_retrieval([["a"], ["b"]], [{"a"}, {"b"}], [1, 3], metrics=["recall", "rr@k"], k_label=5)
    assert {"recall@5", "rr@5"} <= set(frame.columns)


def test_metric_column_names():
    assert engine.metric_column("recall", 5) == "recall@5"
    assert engine.metric_column("rr", 5) == "rr"
    assert engine.metric_column("rr@k", 10) == "rr@10"
    assert engine.metric_column("ndcg", "k") == "ndcg@k"


def test_score_retrieval_with_per_question_k_cuts_each_question_at_its_own_k():
    ranked = [["x", "a", "b"], ["x", "a", "b"]]
    gold = [{"a", "b"}, {"a", "b"}]
    frame = score_retrieval(ranked, gold, [1, 3], metrics=["recall", "precision"])
    assert frame["recall@k"].tolist() == [0.0, 1.0]
    assert frame["precision@k"].tolist() == pytest.approx([0.0, 2 / 3])


@pytest.mark.parametrize("kernel_name", KERNELS)
def test_a_question_where_no_chunk_reached_the_model_scores_zero_on_every_metric(kernel_name):
    with kernel(kernel_name):
        frame = score_retrieval([["a", "b"], ["a"]], [{"a": 2}, {"a": 1}], [0, 1], metrics=ALL_METRICS)
    row = frame.iloc[0]
    for column in ("recall@k", "precision@k", "rr", "rr@k", "ndcg@k"):
        assert row[column] == 0.0, column
    assert frame.iloc[1][["recall@k", "precision@k", "rr", "rr@k", "ndcg@k"]].tolist() == [1.0] * 5


@pytest.mark.parametrize("kernel_name", KERNELS)
def test_batch_scorer_counts_a_repeated_document_once(kernel_name):
    with kernel(kernel_name):
        frame = score_retrieval([["a", "a", "b", "a"]], [{"a": 1, "c": 1}], 4, metrics=ALL_METRICS)
    row = frame.iloc[0]
    assert row["recall@4"] == 0.5
    assert row["precision@4"] == 0.25
    assert row["ndcg@4"] == pytest.approx(ndcg_at_k(["a", "a", "b", "a"], {"a": 1, "c": 1}, 4))


def test_batch_scorer_does_not_mix_up_documents_of_different_questions():
    # the same id relevant in one question is not relevant in another
    frame = score_retrieval([["a"], ["a"]], [{"a"}, {"b"}], 1)
    assert frame["recall@1"].tolist() == [1.0, 0.0]


@pytest.mark.parametrize("kernel_name", KERNELS)
def test_batch_scorer_treats_a_none_id_like_any_other_id(kernel_name):
    # regression: pandas.factorize coded None as -1, which aliased the previous question's last document
    with kernel(kernel_name):
        frame = score_retrieval([["a"], [None]], [{"z"}, {"a"}], 2)
        assert frame["recall@2"].tolist() == [0.0, 0.0]
        frame = score_retrieval([["a", None]], [{None: 2}], 2, metrics=["rr"])
        assert frame["rr"].tolist() == [0.5]


def test_batch_scorer_refuses_grades_the_per_question_functions_refuse():
    # regression: numpy cast the string "3" and True to numbers in the batch scorer only
    for grade in ("3", True, None):
        with pytest.raises(ValueError, match=r"gold\[0\]: the grade of 'a' must be a number"):
            score_retrieval([["a"]], [{"a": grade}], 1)
        with pytest.raises(ValueError, match=r"gold: the grade of 'a' must be a number"):
            recall_at_k(["a"], {"a": grade}, 1)


def test_batch_scorer_accepts_any_real_grade_the_per_question_functions_accept():
    from fractions import Fraction

    frame = score_retrieval(
        [["a", "b"]], [{"a": Fraction(1, 2), "b": np.float32(1.5)}], 2, metrics=["ndcg"], gain="linear"
    )
    assert frame["ndcg@2"].iloc[0] == pytest.approx(ndcg_at_k(["a", "b"], {"a": 0.5, "b": 1.5}, 2, gain="linear"))


@pytest.mark.parametrize("kernel_name", KERNELS)
def test_batch_scorer_rejects_gold_that_lists_a_document_twice(kernel_name):
    with kernel(kernel_name), pytest.raises(ValueError, match="gold of question 1 lists the same document twice"):
        score_retrieval([["a"], ["b"]], [["a"], ["b", "c", "b"]], 1)


def random_batch(rng, n, *, pool=30, max_len=20, max_gold=8):
    ranked = [[f"d{j}" for j in rng.integers(0, pool, size=rng.integers(0, max_len))] for _ in range(n)]
    gold = []
    for _ in range(n):
        judged = rng.choice(pool, size=rng.integers(0, max_gold), replace=False)
        gold.append({f"d{j}": int(rng.integers(0, 4)) for j in judged})
    ks = [int(k) for k in rng.integers(0, max_len, size=n)]
    return ranked, gold, ks


def assert_rows_equal_the_per_question_functions(frame, ranked, gold, ks, *, gain: str = "exponential") -> None:
    """Each question's recall, precision, rr, rr@k and nDCG at its k in ``frame`` equal the single-question functions'.

    A question without gold scores NaN; one with k 0 or gold holding nothing relevant scores 0.
    """
    got = frame[["recall@k", "precision@k", "rr", "rr@k", "ndcg@k"]].to_numpy()
    for i, (r, g, k) in enumerate(zip(ranked, gold, ks, strict=True)):
        if not g:
            assert np.isnan(got[i]).all()
        elif k == 0 or not any(v > 0 for v in g.values()):
            assert got[i].tolist() == [0.0] * 5
        else:
            expected = [
                recall_at_k(r, g, k),
                precision_at_k(r, g, k),
                reciprocal_rank(r, g),
                reciprocal_rank(r, g, k=k),
                ndcg_at_k(r, g, k, gain=gain),
            ]
            np.testing.assert_allclose(got[i], expected, rtol=1e-9, atol=1e-12, err_msg=f"question {i}")


@pytest.mark.parametrize("gain", engine.GAINS)
def test_the_dense_and_flat_kernels_give_identical_numbers(gain):
    rng = np.random.default_rng(42)
    ranked, gold, ks = random_batch(rng, 2000)
    default = score_retrieval(ranked, gold, ks, metrics=ALL_METRICS, gain=gain)
    with kernel("flat"):
        flat = score_retrieval(ranked, gold, ks, metrics=ALL_METRICS, gain=gain)
    pd.testing.assert_frame_equal(default, flat, check_exact=True)


@pytest.mark.parametrize(
    "case",
    ["one very long list", "many relevant documents", "mostly empty lists"],
)
def test_batches_with_uneven_lists_equal_the_per_question_functions(case):
    rng = np.random.default_rng(7)
    ranked, gold, ks = random_batch(rng, 200)
    if case == "one very long list":
        ranked[3] = [f"d{j}" for j in rng.integers(0, 3000, size=5000)]
        ks[3] = 4000
    elif case == "many relevant documents":
        gold[5] = {f"d{j}": int(rng.integers(1, 4)) for j in range(60)}
        ranked[5] = [f"d{j}" for j in rng.permutation(80)]
        ks[5] = 70
    else:
        for i in range(0, 200, 2):
            ranked[i] = []
    frame = score_retrieval(ranked, gold, ks, metrics=ALL_METRICS)
    assert_rows_equal_the_per_question_functions(frame, ranked, gold, ks)


def test_batch_scorer_marks_questions_without_gold_unanswerable_and_scores_all_zero_gold_zero():
    frame = score_retrieval([["a"], ["a"], ["a"]], [{"a"}, set(), {"a": 0}], 1, metrics=ALL_METRICS)
    assert frame["answerable"].tolist() == [True, False, True]
    assert frame["n_relevant"].tolist() == [1, 0, 0]
    for column in ("recall@1", "precision@1", "rr", "rr@1", "ndcg@1"):
        assert frame[column].tolist()[0] == 1.0 and math.isnan(frame[column].iloc[1]) and frame[column].iloc[2] == 0.0


def test_a_question_marked_unanswerable_gets_nan_even_with_judged_gold():
    frame = score_retrieval([["a"], ["a"]], [{"a": 0}, {"a": 0}], 1, answerable=[False, True])
    assert math.isnan(frame["recall@1"].iloc[0]) and frame["recall@1"].iloc[1] == 0.0


def test_an_answerable_question_without_gold_gets_nan_retrieval_metrics():
    frame = score_retrieval([["a"], ["b"]], [{"a"}, set()], 1, answerable=[True, True])
    assert frame["answerable"].tolist() == [True, True]
    assert math.isnan(frame["recall@1"].iloc[1])


def test_score_retrieval_refuses_a_question_marked_unanswerable_that_has_relevant_gold():
    with pytest.raises(ValueError, match=r"'q2' is marked unanswerable but has relevant gold"):
        score_retrieval([["a"], ["b"]], [set(), {"b"}], 1, question_ids=["q1", "q2"], answerable=[False, False])


def test_score_retrieval_accepts_float_k_arrays_holding_whole_numbers():
    frame = score_retrieval([["a"], ["b"]], [{"a"}, {"b"}], np.array([1.0, 2.0]))
    assert frame["k"].tolist() == [1, 2]


def test_encode_retrieval_shares_codes_between_ranked_and_gold():
    encoded = encode_retrieval([["a", "b"], ["b"]], [{"b": 2}, {"c"}])
    assert encoded.n_questions == 2
    assert encoded.ranked_offsets.tolist() == [0, 2, 3]
    assert encoded.gold_offsets.tolist() == [0, 1, 2]
    assert encoded.ranked_docs[1] == encoded.gold_docs[0]  # "b"
    assert encoded.gold_grades.tolist() == [2.0, 1.0]


def test_score_encoded_from_padded_arrays_equals_score_retrieval():
    ranked = np.array([[3, 1, 2, -1], [5, 5, 4, 6]])
    gold = np.array([[1, 7, -1], [4, 6, -1]])
    grades = np.array([[2, 1, 0], [1, 3, 0]])
    encoded = EncodedRetrieval.from_padded(ranked, gold, grades)
    out = score_encoded(encoded, 3, metrics=ALL_METRICS, gain="linear")
    frame = score_retrieval(
        [[3, 1, 2], [5, 5, 4, 6]], [{1: 2, 7: 1}, {4: 1, 6: 3}], 3, metrics=ALL_METRICS, gain="linear"
    )
    for metric in ALL_METRICS:
        np.testing.assert_allclose(out[metric], frame[engine.metric_column(metric, 3)].to_numpy())
    assert out["n_relevant"].tolist() == [2, 2]


@settings(max_examples=40, deadline=None)
@given(question_batch(), st.sampled_from(engine.GAINS))
def test_batch_scorer_equals_the_per_question_functions(batch, gain):
    ranked, gold, ks, _ = batch
    frames = {}
    for name in KERNELS:
        with kernel(name):
            frames[name] = score_retrieval(ranked, gold, ks, metrics=ALL_METRICS, gain=gain)
    pd.testing.assert_frame_equal(frames["default"], frames["flat"], check_exact=False, rtol=1e-12, atol=1e-15)
    assert_rows_equal_the_per_question_functions(frames["default"], ranked, gold, ks, gain=gain)


@settings(max_examples=20, deadline=None)
@given(question_batch(unanswerable=False, min_k=1), st.integers(1, 8))
def test_scalar_k_gives_the_same_scores_as_a_constant_k_array(batch, k):
    ranked, gold, _, _ = batch
    scalar = score_retrieval(ranked, gold, k, metrics=ALL_METRICS)
    array = score_retrieval(ranked, gold, [k] * len(ranked), metrics=ALL_METRICS, k_label=k)
    pd.testing.assert_frame_equal(scalar, array)


@settings(max_examples=15, deadline=None)
@given(question_batch(), st.randoms(use_true_random=False))
def test_batch_scores_do_not_depend_on_the_order_of_questions(batch, rnd):
    ranked, gold, ks, _ = batch
    order = list(range(len(ranked)))
    rnd.shuffle(order)
    frame = score_retrieval(ranked, gold, ks, metrics=ALL_METRICS, question_ids=list(range(len(ranked))))
    shuffled = score_retrieval(
        [ranked[i] for i in order],
        [gold[i] for i in order],
        [ks[i] for i in order],
        metrics=ALL_METRICS,
        question_ids=order,
    )
    pd.testing.assert_frame_equal(frame.loc[order], shuffled)


# --------------------------------------------------------------------------------------------
# The summary
# --------------------------------------------------------------------------------------------


def test_summary_means_leave_out_unanswerable_questions():
    frame = score_retrieval(
        [["a"], ["x"], ["a"]], [{"a"}, {"a"}, set()], 1, declined=[False, False, True], metrics=["recall", "rr"]
    )
    summary = summarize_retrieval(frame)
    assert summary.means == {"recall@1": 0.5, "rr": 0.5}
    assert summary.n_questions == 3
    assert summary.n_scored == 2
    assert summary.n_unanswerable == 1
    assert any("means over 2 of 3" in note for note in summary.notes)


def test_summary_decline_rate_is_over_unanswerable_and_false_decline_rate_over_answerable_questions():
    gold = [{"a"}, {"a"}, {"a"}, {"a"}, set(), set(), set()]
    declined = [True, False, False, False, True, True, False]
    frame = score_retrieval([["a"]] * 7, gold, 1, declined=declined)
    summary = summarize_retrieval(frame)
    assert summary.decline_rate == pytest.approx(2 / 3)
    assert summary.false_decline_rate == pytest.approx(1 / 4)
    assert summary.means["recall@1"] == 1.0  # a declined answerable question still has its retrieval scored


def test_summary_decline_rates_are_nan_without_declined_and_say_so():
    frame = score_retrieval([["a"], ["a"]], [{"a"}, set()], 1)
    summary = summarize_retrieval(frame)
    assert math.isnan(summary.decline_rate) and math.isnan(summary.false_decline_rate)
    assert any("declined was not given" in note for note in summary.notes)


def test_summary_decline_rate_is_nan_when_every_question_is_answerable():
    frame = score_retrieval([["a"]], [{"a"}], 1, declined=[True])
    summary = summarize_retrieval(frame)
    assert math.isnan(summary.decline_rate)
    assert summary.false_decline_rate == 1.0
    assert summary.notes == ()


def test_summary_means_are_nan_when_no_question_is_answerable():
    frame = score_retrieval([["a"]], [set()], 1, declined=[True])
    summary = summarize_retrieval(frame)
    assert math.isnan(summary.means["recall@1"])
    assert summary.decline_rate == 1.0
    assert math.isnan(summary.false_decline_rate)


@settings(max_examples=20, deadline=None)
@given(question_batch(min_k=1))
def test_summary_means_equal_the_mean_of_per_question_scores_over_answerable_questions(batch):
    ranked, gold, ks, declined = batch
    frame = score_retrieval(ranked, gold, ks, declined=declined, metrics=["recall", "ndcg"])
    summary = summarize_retrieval(frame)
    scored = [i for i, g in enumerate(gold) if g]  # judged (all-zero gold scores 0 and counts)
    unanswerable = [i for i in range(len(gold)) if i not in scored]
    assert summary.n_scored == len(scored)
    assert summary.n_unanswerable == len(unanswerable)
    if scored:
        expected = np.mean([recall_at_k(ranked[i], gold[i], ks[i]) for i in scored])
        assert summary.means["recall@k"] == pytest.approx(expected)
        assert summary.false_decline_rate == pytest.approx(np.mean([declined[i] for i in scored]))
    if unanswerable:
        assert summary.decline_rate == pytest.approx(np.mean([declined[i] for i in unanswerable]))
    else:
        assert math.isnan(summary.decline_rate)


# --------------------------------------------------------------------------------------------
# Bounds
# --------------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(ranked_list(duplicates=True), graded_gold(zero_grades=True), st.integers(1, 15), st.sampled_from(engine.GAINS))
def test_every_metric_lies_between_zero_and_one(ranked, gold, k, gain):
    for value in (
        recall_at_k(ranked, gold, k),
        precision_at_k(ranked, gold, k),
        reciprocal_rank(ranked, gold),
        reciprocal_rank(ranked, gold, k=k),
        ndcg_at_k(ranked, gold, k, gain=gain),
    ):
        assert 0.0 <= value <= 1.0 + 1e-12


@settings(max_examples=60, deadline=None)
@given(ranked_list(duplicates=True), graded_gold(), st.integers(1, 11))
def test_recall_and_ndcg_never_fall_when_k_grows(ranked, gold, k):
    assert recall_at_k(ranked, gold, k + 1) >= recall_at_k(ranked, gold, k)
    # nDCG can fall as k grows (the ideal grows too), but the DCG part cannot: rr@k is monotone
    assert reciprocal_rank(ranked, gold, k=k + 1) >= reciprocal_rank(ranked, gold, k=k)
