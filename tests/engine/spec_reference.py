# ruff: noqa: B905  (the spec's code, copied verbatim)
"""The spec's own pure-Python code, copied verbatim, as an independent reference for the engine.

Source: /work/shared/seed/000_465bce4daadafdef.txt ("Retrieval metrics, defined exactly" and
"Validate the judge against people"). Do not "fix" these functions: they are the anchor. Where the
engine deliberately differs (empty gold gives NaN instead of a ZeroDivisionError or 0; grade 0 is
judged but not relevant; a repeated document counts once), the tests avoid or document those cases.
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
    dcg = sum((2 ** grades.get(d, 0) - 1) / math.log2(i + 1) for i, d in enumerate(ranked[:k], start=1))
    ideal = sorted(grades.values(), reverse=True)[:k]
    idcg = sum((2**g - 1) / math.log2(i + 1) for i, g in enumerate(ideal, start=1))
    return dcg / idcg if idcg else 0.0


def cohen_kappa(a, b):
    """a, b: equal-length lists of 0/1 labels from two raters."""
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b)) / n
    pa, pb = sum(a) / n, sum(b) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    return (observed - expected) / (1 - expected)


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


def spec_bootstrap_data():
    """The spec's two retriever configs scored on the same 300 questions."""
    rng = random.Random(1)
    base = [1.0 if rng.random() < 0.72 else 0.0 for _ in range(300)]
    cand = [b if rng.random() < 0.9 else 1.0 - b for b in base]
    return base, cand


SPEC_RANKED = ["d7", "d2", "d9", "d4", "d1"]
SPEC_GRADES = {"d2": 3, "d4": 1, "d5": 2}
SPEC_HUMAN = [1] * 150 + [0] * 50
SPEC_JUDGE = [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28
