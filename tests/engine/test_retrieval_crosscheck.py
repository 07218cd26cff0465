"""The retrieval metrics against the reference tools of the field: trec_eval (pytrec_eval) and ranx.

Both tools rank by score, so every ranked list is given strictly decreasing scores and no tie can
be broken differently. trec_eval uses linear gain in nDCG (``ndcg_cut_k``); ranx offers ``ndcg``
(linear) and ``ndcg_burges`` (2^g - 1, the engine's default). Relevance is "grade above 0" in the
engine and ranx, "grade at least 1" in trec_eval: the same for integer grades. Questions whose
judged gold holds no relevant document (every grade 0) score 0 in trec_eval and in the engine,
and are in the trec_eval batches here; ranx refuses them, so its batches leave them out.

ranx runs interpreted in the session (its own Python source with numba's JIT off; see
``ranx_reference.py``); the ``slow`` test at the end runs the compiled tool on the same kind of
batches and checks it against the engine and against the interpreted run.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.engine import ndcg_at_k, precision_at_k, recall_at_k, reciprocal_rank, score_retrieval

from .ranx_reference import RANX_METRICS
from .strategies import DOCS, graded_gold, ranked_list

ROOT = Path(__file__).resolve().parents[2]

TREC_MEASURES = {"ndcg_cut_5", "ndcg_cut_10", "P_5", "P_10", "recall_5", "recall_10", "recip_rank"}


def qid(i: int) -> str:
    return f"q{i:03d}"


def as_run(ranked_lists: list[list[str]]) -> dict[str, dict[str, float]]:
    """Strictly decreasing scores in list order, so score order is the list order."""
    return {
        qid(i): {doc: float(len(ranked) - rank) for rank, doc in enumerate(ranked)}
        for i, ranked in enumerate(ranked_lists)
    }


def as_qrels(golds: list[dict[str, int]]) -> dict[str, dict[str, int]]:
    return {qid(i): {doc: int(grade) for doc, grade in gold.items()} for i, gold in enumerate(golds)}


def trec_eval(ranked_lists, golds) -> dict[str, dict[str, float]]:
    evaluator = pytrec_eval.RelevanceEvaluator(as_qrels(golds), TREC_MEASURES)
    return evaluator.evaluate(as_run(ranked_lists))


all_zero_gold = graded_gold(pool_size=16, answerable=False).filter(bool)  # judged, nothing relevant
answerable_batch = st.lists(
    st.tuples(ranked_list(pool_size=16, max_size=14), graded_gold(pool_size=16, zero_grades=True) | all_zero_gold),
    min_size=1,
    max_size=20,
)
# ranx: at least one retrieved id per question (a missing query takes another compiled path)
ranx_batch = st.lists(
    st.tuples(ranked_list(pool_size=16, min_size=1, max_size=14), graded_gold(pool_size=16, zero_grades=True)),
    min_size=1,
    max_size=20,
)


def seeded_batch(n: int, seed: int, *, all_zero: bool = False) -> tuple[list[list[str]], list[dict[str, int]]]:
    """``n`` questions; with ``all_zero``, some have judged gold that holds no relevant document."""
    rng = random.Random(seed)
    ranked, gold = [], []
    for _ in range(n):
        pool = DOCS[:30]
        judged = rng.sample(pool, rng.randint(1, 8))
        grades = {d: rng.randint(0, 3) for d in judged}
        if not any(grades.values()) and not all_zero:
            grades[judged[0]] = rng.randint(1, 3)
        ranked.append(rng.sample(pool, rng.randint(1, 15)))
        gold.append(grades)
    return ranked, gold


# --------------------------------------------------------------------------------------------
# trec_eval
# --------------------------------------------------------------------------------------------


def check_against_trec_eval(ranked_lists, golds):
    reference = trec_eval(ranked_lists, golds)
    batches = {
        k: score_retrieval(ranked_lists, golds, k, metrics=["recall", "precision", "rr", "ndcg"], gain="linear")
        for k in (5, 10)
    }
    for i, (ranked, gold) in enumerate(zip(ranked_lists, golds, strict=True)):
        ref = reference[qid(i)]
        for k in (5, 10):
            expected = {
                f"recall@{k}": ref[f"recall_{k}"],
                f"precision@{k}": ref[f"P_{k}"],
                "rr": ref["recip_rank"],
                f"ndcg@{k}": ref[f"ndcg_cut_{k}"],
            }
            single = {
                f"recall@{k}": recall_at_k(ranked, gold, k),
                f"precision@{k}": precision_at_k(ranked, gold, k),
                "rr": reciprocal_rank(ranked, gold),
                f"ndcg@{k}": ndcg_at_k(ranked, gold, k, gain="linear"),
            }
            batch = batches[k].iloc[i]
            for name, value in expected.items():
                assert single[name] == pytest.approx(value, abs=1e-9), (i, name)
                assert batch[name] == pytest.approx(value, abs=1e-9), (i, name)


@settings(max_examples=25, deadline=None)
@given(answerable_batch)
def test_single_functions_and_batch_scorer_equal_trec_eval_with_linear_gain(batch):
    ranked_lists = [r for r, _ in batch]
    golds = [g for _, g in batch]
    check_against_trec_eval(ranked_lists, golds)


def test_a_seeded_batch_of_300_questions_equals_trec_eval():
    ranked, gold = seeded_batch(300, seed=11, all_zero=True)
    assert sum(1 for g in gold if not any(g.values())) >= 10  # judged gold that holds nothing relevant
    check_against_trec_eval(ranked, gold)


def test_trec_eval_counts_grade_zero_as_judged_not_relevant_like_the_engine():
    ranked, gold = [["d000", "d001"]], [{"d000": 0, "d001": 2, "d002": 1}]
    ref = trec_eval(ranked, gold)[qid(0)]
    assert ref["recall_5"] == pytest.approx(0.5) == recall_at_k(ranked[0], gold[0], 5)
    assert ref["recip_rank"] == pytest.approx(0.5) == reciprocal_rank(ranked[0], gold[0])


def test_a_question_whose_judged_gold_holds_nothing_relevant_scores_zero_as_in_trec_eval_and_counts():
    ref = trec_eval([["d000"], ["d001"]], [{"d000": 0}, {"d001": 1}])
    assert ref[qid(0)]["recall_5"] == ref[qid(0)]["recip_rank"] == ref[qid(0)]["ndcg_cut_5"] == 0.0
    frame = score_retrieval([["d000"], ["d001"]], [{"d000": 0}, {"d001": 1}], 5, gain="linear")
    assert frame.iloc[0][["recall@5", "precision@5", "rr", "ndcg@5"]].tolist() == [0.0] * 4
    trec_mean = np.mean([ref[q]["recall_5"] for q in ref])
    assert frame["recall@5"].mean() == pytest.approx(trec_mean) == 0.5  # in the mean, as trec_eval keeps it


def test_trec_eval_reorders_tied_scores_by_document_id_so_list_order_needs_strict_scores():
    # with equal scores trec_eval ranks by docno, descending; the engine keeps the list order
    evaluator = pytrec_eval.RelevanceEvaluator({"q000": {"d000": 1}}, {"recip_rank"})
    tied = evaluator.evaluate({"q000": {"d000": 1.0, "d001": 1.0}})["q000"]["recip_rank"]
    assert tied == 0.5
    assert reciprocal_rank(["d000", "d001"], {"d000"}) == 1.0


# --------------------------------------------------------------------------------------------
# ranx
# --------------------------------------------------------------------------------------------


def check_against_ranx(evaluate, ranked_lists, golds):
    reference = evaluate(as_qrels(golds), as_run(ranked_lists))
    order = sorted(range(len(golds)), key=qid)  # ranx returns queries in sorted id order
    assert order == list(range(len(golds)))
    linear = score_retrieval(ranked_lists, golds, 5, metrics=["recall", "precision", "rr", "ndcg"], gain="linear")
    expo = score_retrieval(ranked_lists, golds, 5, metrics=["ndcg"], gain="exponential")
    np.testing.assert_allclose(linear["recall@5"], reference["recall@5"], atol=1e-9)
    np.testing.assert_allclose(linear["precision@5"], reference["precision@5"], atol=1e-9)
    np.testing.assert_allclose(linear["rr"], reference["mrr"], atol=1e-9)
    np.testing.assert_allclose(linear["ndcg@5"], reference["ndcg@5"], atol=1e-9)
    np.testing.assert_allclose(expo["ndcg@5"], reference["ndcg_burges@5"], atol=1e-9)
    for i, (ranked, gold) in enumerate(zip(ranked_lists, golds, strict=True)):
        assert recall_at_k(ranked, gold, 5) == pytest.approx(reference["recall@5"][i], abs=1e-9)
        assert precision_at_k(ranked, gold, 5) == pytest.approx(reference["precision@5"][i], abs=1e-9)
        assert reciprocal_rank(ranked, gold) == pytest.approx(reference["mrr"][i], abs=1e-9)
        assert ndcg_at_k(ranked, gold, 5, gain="linear") == pytest.approx(reference["ndcg@5"][i], abs=1e-9)
        assert ndcg_at_k(ranked, gold, 5, gain="exponential") == pytest.approx(reference["ndcg_burges@5"][i], abs=1e-9)


@settings(max_examples=20, deadline=None)
@given(ranx_batch)
def test_single_functions_and_batch_scorer_equal_ranx_with_both_gains(ranx_ready, batch):
    check_against_ranx(ranx_ready, [r for r, _ in batch], [g for _, g in batch])


def test_a_seeded_batch_of_300_questions_equals_ranx_with_both_gains(ranx_ready):
    check_against_ranx(ranx_ready, *seeded_batch(300, seed=12))


def test_ranx_and_the_engine_disagree_with_each_other_between_gains_on_graded_gold(ranx_ready):
    # a sanity check that the two gain conventions really are told apart by the cross-check
    ranked, gold = [["d001", "d000"]], [{"d000": 3, "d001": 1}]
    reference = ranx_ready(as_qrels(gold), as_run(ranked))
    assert reference["ndcg@5"][0] != pytest.approx(reference["ndcg_burges@5"][0])
    assert ndcg_at_k(ranked[0], gold[0], 5, gain="linear") == pytest.approx(reference["ndcg@5"][0])
    assert ndcg_at_k(ranked[0], gold[0], 5) == pytest.approx(reference["ndcg_burges@5"][0])


def small_batch(seed: int) -> tuple[list[list[str]], list[dict[str, int]]]:
    """A batch like ``ranx_batch`` draws: 1-20 questions, 1-14 retrieved ids of 16, grades 0-3."""
    rng = random.Random(seed)
    ranked, gold = [], []
    for _ in range(rng.randint(1, 20)):
        pool = DOCS[:16]
        grades = {d: rng.randint(0, 3) for d in rng.sample(pool, rng.randint(1, 6))}
        if not any(grades.values()):
            grades[min(grades)] = rng.randint(1, 3)
        ranked.append(rng.sample(pool, rng.randint(1, 14)))
        gold.append(grades)
    return ranked, gold


@pytest.mark.slow
def test_compiled_ranx_equals_the_engine_and_interpreted_ranx(ranx_ready):
    # The tool as shipped, numba-compiled, in a fresh interpreter: about 50 s of compilation on a
    # cold machine, a few seconds once numba's cache is on disk.
    batches = [seeded_batch(300, seed=12), seeded_batch(300, seed=13)] + [small_batch(seed) for seed in range(60)]
    payload = json.dumps([[as_qrels(gold), as_run(ranked)] for ranked, gold in batches])
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_JIT"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-m", "tests.engine.ranx_reference"],
        input=payload,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=1200,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["interpreted"] is False, "the subprocess should run ranx compiled"
    assert len(out["scores"]) == len(batches)
    for (ranked, gold), scores in zip(batches, out["scores"], strict=True):
        compiled = {name: np.asarray(values) for name, values in scores.items()}
        check_against_ranx(lambda qrels, run, compiled=compiled: compiled, ranked, gold)
        interpreted = ranx_ready(as_qrels(gold), as_run(ranked))
        for name in RANX_METRICS:
            np.testing.assert_allclose(compiled[name], interpreted[name], rtol=0, atol=1e-12, err_msg=name)
