"""Invariance tests driven by RETRIEVAL_REGISTRY: adding a metric there tests it here.

Every entry has one signature, ``score(ranked, grades, k)``, and names the batch scorer's metric
(``batch_name``) and gain, so the batch scorer is checked against the per-question function of
every registered metric, on generated data with every awkward case mixed in.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.engine import (
    RETRIEVAL_METRICS,
    RETRIEVAL_REGISTRY,
    RetrievalMetric,
    metric_column,
    score_retrieval,
    summarize_retrieval,
)

from .kernels import KERNELS, kernel
from .strategies import graded_gold, question, question_batch, ranked_list

ENTRIES = list(RETRIEVAL_REGISTRY.values())
IDS = [entry.name for entry in ENTRIES]


def relevant_of(grades: dict) -> dict:
    return {d: g for d, g in grades.items() if g > 0}


def batch_column(entry: RetrievalMetric, ranked, gold, k, *, k_label=None, **kwargs):
    frame = score_retrieval(ranked, gold, k, metrics=[entry.batch_name], gain=entry.gain, k_label=k_label, **kwargs)
    label = k_label if k_label is not None else (k if isinstance(k, int) else "k")
    return frame, frame[metric_column(entry.batch_name, label)].to_numpy()


def test_the_registry_holds_the_documented_metrics_with_consistent_fields():
    assert {"recall@k", "precision@k", "rr", "rr@k", "ndcg@k", "ndcg_linear@k"} <= set(RETRIEVAL_REGISTRY)
    for name, entry in RETRIEVAL_REGISTRY.items():
        assert entry.name == name
        assert entry.batch_name in RETRIEVAL_METRICS
        assert entry.gain in ("exponential", "linear")
        assert callable(entry.score)
    assert RETRIEVAL_REGISTRY["rr"].cut_at_k is False
    assert RETRIEVAL_REGISTRY["ndcg_linear@k"].trec_eval_name == "ndcg_cut_{k}"


# Each property draws one input and checks every registered metric on it (drawing is the slow part).


@settings(max_examples=60, deadline=None)
@given(q=question(duplicates=True, zero_grades=True), k=st.integers(1, 12))
def test_every_registered_metric_lies_between_zero_and_one(q, k):
    ranked, grades = q
    for entry in ENTRIES:
        value = entry.score(ranked, grades, k)
        assert 0.0 <= value <= 1.0 + 1e-12, entry.name


@settings(max_examples=60, deadline=None)
@given(q=question(duplicates=True, zero_grades=True), k=st.integers(1, 12))
def test_renaming_document_ids_changes_nothing(q, k):
    ranked, grades = q
    rename = {doc: f"renamed/{doc[::-1]}" for doc in set(ranked) | set(grades)}
    codes = {doc: i for i, doc in enumerate(sorted(rename))}
    for entry in ENTRIES:
        original = entry.score(ranked, grades, k)
        renamed = entry.score([rename[d] for d in ranked], {rename[d]: g for d, g in grades.items()}, k)
        as_ints = entry.score([codes[d] for d in ranked], {codes[d]: g for d, g in grades.items()}, k)
        assert renamed == pytest.approx(original, abs=1e-12), entry.name
        assert as_ints == pytest.approx(original, abs=1e-12), entry.name


@settings(max_examples=60, deadline=None)
@given(q=question(duplicates=True, zero_grades=True), k=st.integers(1, 12), extra=st.integers(1, 5))
def test_inserting_non_relevant_ids_after_position_k_changes_no_at_k_metric(q, k, extra):
    ranked, grades = q
    # new ids and grade-0 judgments, inserted right after position k
    noise = [f"noise-{i}" for i in range(extra)] + [d for d, g in grades.items() if g <= 0]
    longer = list(ranked[:k]) + noise + list(ranked[k:])
    cut = [entry for entry in ENTRIES if entry.cut_at_k]
    assert cut
    for entry in cut:
        assert entry.score(longer, grades, k) == pytest.approx(entry.score(ranked, grades, k), abs=1e-12), entry.name


def test_rr_over_the_whole_list_is_not_cut_at_k_so_insertions_after_k_can_change_it():
    entry = RETRIEVAL_REGISTRY["rr"]
    assert entry.score(["x", "a"], {"a": 1}, 1) == 0.5
    assert entry.score(["x", "noise", "a"], {"a": 1}, 1) == pytest.approx(1 / 3)


@settings(max_examples=60, deadline=None)
@given(q=question(duplicates=True, zero_grades=True), k=st.integers(1, 12), extra=st.integers(1, 5))
def test_appending_non_relevant_ids_at_the_end_changes_nothing(q, k, extra):
    ranked, grades = q
    padded = list(ranked) + ["x"] * max(0, k - len(ranked))  # so the tail is surely after position k
    longer = padded + [f"noise-{i}" for i in range(extra)]
    for entry in ENTRIES:
        assert entry.score(longer, grades, k) == pytest.approx(entry.score(padded, grades, k), abs=1e-12), entry.name


@settings(max_examples=60, deadline=None)
@given(grades=graded_gold(zero_grades=True))
def test_a_perfect_ranking_scores_one(grades):
    relevant = relevant_of(grades)
    ideal = sorted(relevant, key=lambda d: -relevant[d])
    for entry in ENTRIES:
        # with k equal to the number of relevant documents every metric is definable as 1
        assert entry.score(ideal, grades, len(ideal)) == pytest.approx(1.0), entry.name
        # recall, rr and nDCG reach 1 at any k that holds them all; precision cannot beyond n_relevant
        if entry.batch_name != "precision":
            assert entry.score(ideal + ["x", "y"], grades, len(ideal) + 2) == pytest.approx(1.0), entry.name


@settings(max_examples=40, deadline=None)
@given(grades=graded_gold(answerable=False), ranked=ranked_list(), k=st.integers(1, 12))
def test_judged_gold_without_a_relevant_document_scores_zero_and_no_gold_at_all_nan(grades, ranked, k):
    """As trec_eval and the spec's functions do: judged, none relevant, nothing right to find: 0."""
    for entry in ENTRIES:
        score = entry.score(ranked, grades, k)
        if grades:
            assert score == 0.0, entry.name
        else:
            assert math.isnan(score), entry.name


def check_batch_against_per_question(entry, ranked, gold, ks, declined):
    frame, values = batch_column(entry, ranked, gold, ks, k_label=5, declined=declined)
    for i, (r, g, k) in enumerate(zip(ranked, gold, ks, strict=True)):
        if not g:  # nothing judged: unanswerable by default, out of the means
            assert math.isnan(values[i]), (entry.name, i, r, g, k)
            assert not frame["answerable"].iloc[i]
        elif k == 0 or not relevant_of(g):
            assert values[i] == 0.0, (entry.name, i, r, g, k)  # no chunk reached the model
        else:
            assert values[i] == pytest.approx(entry.score(r, g, k), rel=1e-9, abs=1e-12), (entry.name, i, r, g, k)


# one drawn batch checks every registered metric: drawing the batch is the expensive part
@settings(max_examples=30, deadline=None)
@given(batch=question_batch(duplicates=True, zero_grades=True, unanswerable=True, min_k=0))
def test_batch_scorer_equals_the_per_question_function_of_every_metric_on_mixed_data(batch):
    ranked, gold, ks, declined = batch
    for name in KERNELS:
        with kernel(name):
            for entry in ENTRIES:
                check_batch_against_per_question(entry, ranked, gold, ks, declined)


@pytest.mark.parametrize("kernel_name", KERNELS)
@pytest.mark.parametrize("seed", [1, 2])
def test_batch_scorer_equals_the_per_question_function_of_every_metric_on_a_large_seeded_batch(seed, kernel_name):
    rng = np.random.default_rng(seed)
    ranked, gold, ks = [], [], []
    for _ in range(400):
        ranked.append([f"d{j}" for j in rng.integers(0, 25, size=rng.integers(0, 20))])  # with repeats
        judged = rng.choice(25, size=rng.integers(0, 8), replace=False)
        gold.append({f"d{j}": int(rng.integers(0, 4)) for j in judged})
        ks.append(int(rng.integers(0, 15)))
    declined = rng.random(400) < 0.3
    assert any(k == 0 for k in ks) and any(not relevant_of(g) for g in gold)
    with kernel(kernel_name):
        for entry in ENTRIES:
            check_batch_against_per_question(entry, ranked, gold, ks, declined)


@settings(max_examples=20, deadline=None)
@given(batch=question_batch(unanswerable=False, min_k=1), k=st.integers(1, 10))
def test_batch_scorer_with_one_k_equals_the_per_question_function_of_every_metric(batch, k):
    ranked, gold, _, _ = batch
    for entry in ENTRIES:
        _, values = batch_column(entry, ranked, gold, k)
        expected = [entry.score(r, g, k) for r, g in zip(ranked, gold, strict=True)]
        np.testing.assert_allclose(values, expected, rtol=1e-9, atol=1e-12, err_msg=entry.name)


@pytest.mark.parametrize("kernel_name", KERNELS)
@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_batch_scorer_handles_each_awkward_case(entry, kernel_name):
    ranked = [
        ["a", "a", "b", "c"],  # a duplicate
        ["z", "b"],  # a grade-0 judgment retrieved first
        ["a", "b"],  # unanswerable: no gold at all
        ["a"],  # judged, but only grade-0 gold: 0, kept in the means
        ["b", "a"],  # k = 0
        [],  # nothing retrieved
    ]
    gold = [{"a": 2, "c": 1}, {"z": 0, "b": 3}, {}, {"a": 0}, {"a": 1}, {"a": 1}]
    ks = [3, 2, 5, 5, 0, 4]
    with kernel(kernel_name):
        frame, values = batch_column(
            entry, ranked, gold, ks, k_label=5, declined=[False, False, True, False, True, False]
        )
    for i in (0, 1, 5):
        assert values[i] == pytest.approx(entry.score(ranked[i], gold[i], ks[i])), i
    assert math.isnan(values[2])
    assert values[3] == 0.0 == entry.score(ranked[3], gold[3], ks[3])
    assert values[4] == 0.0
    assert values[5] == 0.0
    summary = summarize_retrieval(frame)
    column = metric_column(entry.batch_name, 5)
    assert summary.means[column] == pytest.approx(np.mean([values[i] for i in (0, 1, 3, 4, 5)]))
    assert summary.n_scored == 5 and summary.n_unanswerable == 1
    assert summary.decline_rate == 1.0  # the one unanswerable question was declined
    assert summary.false_decline_rate == 0.2  # one of the five answerable ones was


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_per_question_functions_reject_k_of_zero_negative_or_bool(entry):
    for bad in (0, -1, True):
        if entry.cut_at_k:
            with pytest.raises(ValueError, match=r"\bk must be"):
                entry.score(["a"], {"a": 1}, bad)
