"""Deterministic synthetic data shaped like real RAG evaluation runs."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd

CORPUS = 500_000  # documents; ids look like "doc-123456"


def doc_id(number: int) -> str:
    return f"doc-{number:06d}"


def retrieval_run(n: int, *, seed: int = 1, unanswerable: float = 0.1) -> tuple[list[list[str]], list[dict[str, int]]]:
    """Per-question Python lists of retrieved ids and gold ``{id: grade}`` dicts.

    About 20 ids retrieved per question (85 % exactly 20, the rest 5-19 after deduplication and
    truncation), no id twice in a list; 1-5 gold documents with grades 1-3, each retrieved with
    probability 0.7 at a rank skewed towards the top; ``unanswerable`` of the questions have no
    gold at all.
    """
    rng = random.Random(seed)
    ranked: list[list[str]] = []
    gold: list[dict[str, int]] = []
    for _ in range(n):
        length = 20 if rng.random() < 0.85 else rng.randint(5, 19)
        docs = [doc_id(x) for x in rng.sample(range(CORPUS), length)]
        grades: dict[str, int] = {}
        if rng.random() >= unanswerable:
            for _ in range(rng.randint(1, 5)):
                if rng.random() < 0.7:
                    doc = docs[min(int(rng.expovariate(0.25)), length - 1)]
                else:
                    doc = doc_id(rng.randrange(CORPUS))
                grades[doc] = rng.randint(1, 3)
        ranked.append(docs)
        gold.append(grades)
    return ranked, gold


def rerank(
    ranked: list[list[str]], gold: list[dict[str, int]], *, seed: int = 2, changed: float = 0.4
) -> list[list[str]]:
    """A candidate retriever: ``changed`` of the questions get a different ranking.

    A changed question has a few swaps in its top ranks, and half the time one gold document
    promoted (a better reranker) or one result replaced by a new document.
    """
    rng = random.Random(seed)
    out = []
    for docs, grades in zip(ranked, gold):
        if rng.random() >= changed:
            out.append(docs)
            continue
        docs = list(docs)
        for _ in range(rng.randint(1, 3)):
            i, j = rng.randrange(min(10, len(docs))), rng.randrange(len(docs))
            docs[i], docs[j] = docs[j], docs[i]
        if grades and rng.random() < 0.5:
            target = rng.choice(list(grades))
            if target in docs:
                docs.remove(target)
            docs.insert(rng.randrange(min(5, len(docs)) + 1), target)
            del docs[20:]
        elif rng.random() < 0.5:
            new = doc_id(rng.randrange(CORPUS))
            if new not in docs:
                docs[rng.randrange(len(docs))] = new
        out.append(docs)
    return out


def bootstrap_pairs(n: int, kind: str, *, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Paired per-question scores: ``"continuous"`` (all differences distinct) or ``"pass/fail"``."""
    rng = np.random.default_rng(seed)
    if kind == "continuous":
        base = rng.beta(5, 2, n)
        cand = np.clip(base + rng.normal(0.005, 0.08, n), 0.0, 1.0)
        return base, cand
    base = (rng.random(n) < 0.72).astype(float)
    cand = np.where(rng.random(n) < 0.9, base, 1.0 - base)
    return base, cand


SLICES = 20


def _context_precision(docs: list[str], grades: dict[str, int], k: int = 5) -> float:
    """Ragas-style context precision: mean precision@i over the ranks i of relevant contexts in the top k."""
    if not grades:
        return float("nan")
    hits = 0
    total = 0.0
    for i, doc in enumerate(docs[:k], start=1):
        if doc in grades:
            hits += 1
            total += hits / i
    return total / hits if hits else 0.0


def gate_frames(n: int, *, seed: int = 4) -> tuple[pd.DataFrame, pd.DataFrame, str, dict[str, bool]]:
    """Baseline and candidate frames for the gate: ten RAG metrics and a question-type slice.

    Retrieval metrics come from :func:`score_retrieval` on generated runs (so they take the
    distinct values real ones take); judge metrics are drawn like judge verdicts: faithfulness
    is the fraction of 1-8 claims supported, relevance a 1-5 judge score, correctness and
    declining are 0/1. Semantic similarity is the one truly continuous metric: the candidate
    regenerates every answer, so every question's similarity moves a little.
    """
    from evalcore.engine import score_retrieval

    ranked, gold = retrieval_run(n, seed=seed)
    cand_ranked = rerank(ranked, gold, seed=seed + 1)
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, SLICES + 1) ** 0.8
    types = np.array([f"type-{i:02d}" for i in range(SLICES)])[rng.choice(SLICES, n, p=weights / weights.sum())]
    answerable = np.array([bool(g) for g in gold])

    quality = rng.beta(6, 2, n)  # how well the system does on each question
    regenerated = rng.random(n) < 0.5  # the candidate's answer differs in substance

    def judged(q: np.ndarray, r: np.random.Generator) -> dict[str, np.ndarray]:
        claims = r.integers(1, 9, n)
        return {
            "faithfulness": r.binomial(claims, q) / claims,
            "answer_correct": (r.random(n) < q).astype(float),
            "answer_relevance": (np.clip(np.rint(1 + 4 * q + r.normal(0, 0.6, n)), 1, 5) - 1) / 4,
            "declined": (r.random(n) < np.where(answerable, 0.06, 0.6)).astype(float),
        }

    base_judged = judged(quality, np.random.default_rng(seed + 10))
    redrawn = judged(np.clip(quality + 0.01, 0, 1), np.random.default_rng(seed + 11))
    cand_judged = {name: np.where(regenerated, redrawn[name], values) for name, values in base_judged.items()}
    base_similarity = np.clip(0.55 + 0.4 * quality + rng.normal(0, 0.03, n), 0, 1)
    similarity = {"base": base_similarity, "cand": np.clip(base_similarity + rng.normal(0.002, 0.02, n), 0, 1)}

    frames = []
    for run, docs_lists, judge in (("base", ranked, base_judged), ("cand", cand_ranked, cand_judged)):
        scored = score_retrieval(docs_lists, gold, 5)
        declined = judge["declined"] > 0
        frame = pd.DataFrame(
            {
                "question_type": types,
                "recall@5": scored["recall@5"].to_numpy(),
                "precision@5": scored["precision@5"].to_numpy(),
                "rr": scored["rr"].to_numpy(),
                "ndcg@5": scored["ndcg@5"].to_numpy(),
                "context_precision": [_context_precision(d, g) for d, g in zip(docs_lists, gold)],
                "faithfulness": np.where(declined, np.nan, judge["faithfulness"]),  # refusals have no claims
                "answer_correct": np.where(answerable, judge["answer_correct"], np.nan),
                "answer_relevance": judge["answer_relevance"],
                "declined": judge["declined"],
                "semantic_similarity": similarity[run],
            },
            index=pd.RangeIndex(n, name="question"),
        )
        frames.append(frame)
    return frames[0], frames[1], "question_type", {"declined": False}
