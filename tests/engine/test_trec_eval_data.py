"""trec_eval's own test data: the engine reproduces trec_eval's published output to 4 decimals.

Files (see /work/shared/data/trec_eval/README.md): ``qrels.test`` (binary grades, with grade-0
judgments), ``results.test`` (a real run, 500 documents per topic), ``out.test.aq`` (trec_eval's
expected per-query and overall values). trec_eval ranks by score descending, ties by docno
descending, and ignores the rank column; the 'all' row is the mean over queries.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from evalcore.engine import (
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    score_retrieval,
    summarize_retrieval,
)

DATA = Path("/work/shared/data/trec_eval")
CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
REQUIRED = ("recall_5", "recall_10", "P_5", "P_10", "recip_rank", "ndcg_cut_5", "ndcg_cut_10", "ndcg")

pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"trec_eval test data not found at {DATA}")


def read_qrels() -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in (DATA / "qrels.test").read_text().splitlines():
        if line.strip():
            topic, _, docno, grade = line.split()
            qrels[topic][docno] = int(grade)
    return dict(qrels)


def read_run() -> dict[str, list[tuple[str, int, float]]]:
    run: dict[str, list[tuple[str, int, float]]] = defaultdict(list)
    for line in (DATA / "results.test").read_text().splitlines():
        if line.strip():
            topic, _, docno, rank, score, _ = line.split()
            run[topic].append((docno, int(rank), float(score)))
    return dict(run)


def rank_like_trec_eval(rows: list[tuple[str, int, float]]) -> list[str]:
    """Score descending, ties broken by docno descending; the rank column is ignored."""
    return [docno for docno, _, _ in sorted(rows, key=lambda r: (r[2], r[0]), reverse=True)]


def read_expected() -> dict[str, dict[str, float]]:
    expected: dict[str, dict[str, float]] = defaultdict(dict)
    for line in (DATA / "out.test.aq").read_text().splitlines():
        if not line.strip():
            continue
        measure, topic, value = line.split()
        try:
            expected[topic][measure] = float(value)
        except ValueError:
            expected[topic][measure] = value  # runid
    return dict(expected)


@pytest.fixture(scope="module")
def data():
    qrels = read_qrels()
    run = read_run()
    expected = read_expected()
    topics = sorted(t for t in expected if t != "all")
    ranked = [rank_like_trec_eval(run[t]) for t in topics]
    gold = [qrels[t] for t in topics]
    return topics, ranked, gold, expected


def engine_values(ranked: list[str], gold: dict[str, int]) -> dict[str, float]:
    values = {"recip_rank": reciprocal_rank(ranked, gold), "ndcg": ndcg_at_k(ranked, gold, len(ranked), gain="linear")}
    for k in CUTOFFS:
        values[f"recall_{k}"] = recall_at_k(ranked, gold, k)
        values[f"P_{k}"] = precision_at_k(ranked, gold, k)
        values[f"ndcg_cut_{k}"] = ndcg_at_k(ranked, gold, k, gain="linear")
    return values


def test_the_data_has_three_topics_of_500_results_and_the_expected_measures(data):
    topics, ranked, gold, expected = data
    assert topics == ["301", "302", "303"]
    assert [len(r) for r in ranked] == [500, 500, 500]
    assert expected["all"]["num_q"] == 3
    for topic in [*topics, "all"]:
        assert set(REQUIRED) <= set(expected[topic])
    # grade-0 judgments are present, so "judged but not relevant" is exercised
    assert any(g == 0 for q in gold for g in q.values())


def test_the_run_has_tied_scores_and_they_are_broken_by_docno_descending(data):
    run = read_run()
    ties = sum(len(rows) - len({s for _, _, s in rows}) for rows in run.values())
    assert ties > 0
    ascending = {t: [d for d, _, _ in sorted(rows, key=lambda r: (-r[2], r[0]))] for t, rows in run.items()}
    descending = {t: rank_like_trec_eval(rows) for t, rows in run.items()}
    assert any(ascending[t] != descending[t] for t in run)
    # this run's rank column happens to agree with trec_eval's order
    by_rank = {t: [d for d, _, _ in sorted(rows, key=lambda r: r[1])] for t, rows in run.items()}
    assert by_rank == descending


@pytest.mark.parametrize("topic_index", [0, 1, 2])
def test_single_functions_reproduce_every_per_query_value_of_trec_eval(data, topic_index):
    topics, ranked, gold, expected = data
    topic = topics[topic_index]
    values = engine_values(ranked[topic_index], gold[topic_index])
    checked = 0
    for measure, value in values.items():
        if measure in expected[topic]:
            assert round(value, 4) == pytest.approx(expected[topic][measure], abs=1e-9), (topic, measure, value)
            checked += 1
    assert checked == 3 * len(CUTOFFS) + 2
    assert len(ranked[topic_index]) == expected[topic]["num_ret"]


@pytest.mark.parametrize("k", [5, 10])
def test_batch_scorer_reproduces_every_per_query_and_overall_value_at_k(data, k):
    topics, ranked, gold, expected = data
    frame = score_retrieval(
        ranked, gold, k, question_ids=topics, metrics=["recall", "precision", "rr", "ndcg"], gain="linear"
    )
    columns = {
        f"recall@{k}": f"recall_{k}",
        f"precision@{k}": f"P_{k}",
        "rr": "recip_rank",
        f"ndcg@{k}": f"ndcg_cut_{k}",
    }
    for topic in topics:
        assert frame.loc[topic, "n_relevant"] == expected[topic]["num_rel"]
        for column, measure in columns.items():
            assert round(float(frame.loc[topic, column]), 4) == pytest.approx(expected[topic][measure], abs=1e-9), (
                topic,
                measure,
            )
    summary = summarize_retrieval(frame)
    for column, measure in columns.items():
        assert round(summary.means[column], 4) == pytest.approx(expected["all"][measure], abs=1e-9), measure


def test_batch_scorer_reproduces_ndcg_over_the_full_list(data):
    topics, ranked, gold, expected = data
    frame = score_retrieval(
        ranked, gold, [len(r) for r in ranked], question_ids=topics, metrics=["ndcg"], gain="linear", k_label="full"
    )
    for topic in topics:
        assert round(float(frame.loc[topic, "ndcg@full"]), 4) == pytest.approx(expected[topic]["ndcg"], abs=1e-9)
    assert round(summarize_retrieval(frame).means["ndcg@full"], 4) == pytest.approx(expected["all"]["ndcg"], abs=1e-9)


def test_trec_eval_all_row_is_the_mean_over_queries(data):
    topics, ranked, gold, expected = data
    values = [engine_values(r, g) for r, g in zip(ranked, gold, strict=True)]
    for measure in REQUIRED:
        per_query = [v[measure] for v in values]
        assert round(float(np.mean(per_query)), 4) == pytest.approx(expected["all"][measure], abs=1e-9), measure
    # and not, say, pooled over documents: pooled recall@10 would be num_rel_ret@10 / 561
    pooled = (
        sum(len(set(r[:10]) & {d for d, g in q.items() if g > 0}) for r, q in zip(ranked, gold, strict=True))
        / expected["all"]["num_rel"]
    )
    assert not math.isclose(round(pooled, 4), expected["all"]["recall_10"])


def test_the_gain_convention_does_not_matter_on_binary_grades(data):
    topics, ranked, gold, expected = data
    for r, g in zip(ranked, gold, strict=True):
        assert ndcg_at_k(r, g, 10, gain="exponential") == pytest.approx(ndcg_at_k(r, g, 10, gain="linear"))


def test_pytrec_eval_agrees_with_the_published_output_on_this_data(data):
    import pytrec_eval

    topics, ranked, gold, expected = data
    run = read_run()
    evaluator = pytrec_eval.RelevanceEvaluator({t: gold[i] for i, t in enumerate(topics)}, set(REQUIRED))
    scores = evaluator.evaluate({t: {d: s for d, _, s in run[t]} for t in topics})
    for topic in topics:
        for measure in REQUIRED:
            assert round(scores[topic][measure], 4) == pytest.approx(expected[topic][measure], abs=1e-9)
