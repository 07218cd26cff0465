"""The spec's pure-Python reference functions, copied verbatim (the spec is the baseline).

From "RAG Evaluation Metrics, in depth": recall@k, precision@k, reciprocal rank, nDCG@k with
2^g - 1 gain, and the paired bootstrap loop (``random.Random``, 2.5 % / 97.5 % order statistics).
"""

import math
import random


def recall_at_k(ranked, gold, k):
    return len(set(ranked[:k]) & gold) / len(gold)


def precision_at_k(ranked, gold, k):
    return len(set(ranked[:k]) & gold) / k


def reciprocal_rank(ranked, gold):
    for i, doc in enumerate(ranked, start=1):
        if doc in gold:
            return 1.0 / i
    return 0.0


def ndcg_at_k(ranked, grades, k):
    """grades: doc -> graded relevance (0, 1, 2, 3)."""
    dcg = sum((2 ** grades.get(d, 0) - 1) / math.log2(i + 1)
              for i, d in enumerate(ranked[:k], start=1))
    ideal = sorted(grades.values(), reverse=True)[:k]
    idcg = sum((2 ** g - 1) / math.log2(i + 1) for i, g in enumerate(ideal, start=1))
    return dcg / idcg if idcg else 0.0


def paired_bootstrap(base, cand, iters=10_000, seed=7):
    """base, cand: per-question scores for the same questions, same order."""
    rng = random.Random(seed)
    n = len(base)
    diffs = [c - b for b, c in zip(base, cand)]
    means = []
    for _ in range(iters):
        sample = [diffs[rng.randrange(n)] for _ in range(n)]
        means.append(sum(sample) / n)
    means.sort()
    lo, hi = means[int(0.025 * iters)], means[int(0.975 * iters)]
    return sum(diffs) / n, lo, hi


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
