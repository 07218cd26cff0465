"""The spec's pure-Python reference functions, copied verbatim (the spec is the baseline).

From "RAG Evaluation Metrics, in depth": recall@k, precision@k, reciprocal rank, nDCG@k with
2^g - 1 gain, and the paired bootstrap loop (``random.Random``, 2.5 % / 97.5 % order statistics).
"""

# One copy of the spec's code serves the tests and the benchmarks.
from tests.engine.spec_reference import ndcg_at_k, paired_bootstrap, precision_at_k, recall_at_k, reciprocal_rank

__all__ = ["ndcg_at_k", "paired_bootstrap", "precision_at_k", "recall_at_k", "reciprocal_rank", "score_questions"]


def score_questions(ranked_lists, gold_grades, k):
    """The spec's four functions over every answerable question: the means of each metric.

    Unanswerable questions (no gold) are left out, as the spec says: recall is undefined there.
    """
    recall = precision = rr = ndcg = 0.0
    scored = 0
    for ranked, grades in zip(ranked_lists, gold_grades):
        if not grades:
            continue
        gold = set(grades)
        recall += recall_at_k(ranked, gold, k)
        precision += precision_at_k(ranked, gold, k)
        rr += reciprocal_rank(ranked, gold)
        ndcg += ndcg_at_k(ranked, grades, k)
        scored += 1
    return {"recall": recall / scored, "precision": precision / scored, "rr": rr / scored, "ndcg": ndcg / scored}
