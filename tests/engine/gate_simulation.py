"""Simulated comparisons with a known truth, shaped like the demo: 10 metrics of every kind the gate meets,
20 question types and "all" (210 decisions). Shared by the simulation tests and ``./dev bench gate_rules``."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from evalcore.engine.paired_proportions import tango_interval

METRICS = (
    "hit@1",  # pass/fail
    "faithful_answer",  # pass/fail
    "abstention",  # pass/fail, rarely failing
    "recall@5",  # thirds (three gold documents)
    "precision@5",  # fifths
    "rr",  # 1, 1/2, ... 1/5 or 0
    "ndcg@5",  # continuous
    "faithfulness",  # fractions of one to six claims
    "relevance",  # a 1-5 scale, as 0, 0.25, ... 1
    "similarity",  # continuous
)


def _scores(rng: np.random.Generator, ease: np.ndarray) -> dict[str, np.ndarray]:
    """One run's per-question scores, given each question's ease (what makes both runs' scores correlate)."""
    n = ease.size
    rank = rng.geometric(np.clip(ease, 0.05, 0.95))
    claims = rng.integers(1, 7, n)
    return {
        "hit@1": (rng.random(n) < ease).astype(float),
        "faithful_answer": (rng.random(n) < 0.5 + 0.45 * ease).astype(float),
        "abstention": (rng.random(n) < 0.9).astype(float),
        "recall@5": rng.binomial(3, ease) / 3,
        "precision@5": rng.binomial(5, ease * 0.6) / 5,
        "rr": np.where(rank <= 5, 1.0 / rank, 0.0),
        "ndcg@5": np.clip(ease + rng.normal(0, 0.15, n), 0, 1),
        "faithfulness": rng.binomial(claims, 0.6 + 0.35 * ease) / claims,
        "relevance": (np.clip(np.rint(1 + 4 * ease + rng.normal(0, 0.7, n)), 1, 5) - 1) / 4,
        "similarity": np.clip(0.5 * ease + 0.5 * rng.beta(2, 2, n), 0, 1),
    }


def exchangeable_runs(
    rng: np.random.Generator, *, n: int = 400, slices: int = 20, unchanged: float = 0.6
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two runs of a harmless change: on each question and metric the two scores are exchangeable.

    A share ``unchanged`` of the scores is identical in both runs (most questions do not move);
    the rest are drawn twice from the same distribution, and which run gets which is a coin toss.
    """
    index = pd.Index([f"q{i:05d}" for i in range(n)], name="question")
    types = [f"type-{i % slices:02d}" for i in range(n)]
    ease = rng.beta(2, 1.2, n)
    first, second = _scores(rng, ease), _scores(rng, ease)
    base = pd.DataFrame({"type": types}, index=index)
    cand = base.copy()
    for metric in METRICS:
        same = rng.random(n) < unchanged
        a, b = first[metric], np.where(same, first[metric], second[metric])
        swap = rng.random(n) < 0.5
        base[metric], cand[metric] = np.where(swap, b, a), np.where(swap, a, b)
    return base, cand


def with_pass_fail_drop(
    rng: np.random.Generator, base: pd.DataFrame, cand: pd.DataFrame, *, metric: str = "hit@1", drop: float = 0.05
) -> pd.DataFrame:
    """The candidate with a true drop of ``drop`` on one pass/fail metric: that share of all questions,
    drawn among those the candidate passed, now fail."""
    cand = cand.copy()
    passing = np.flatnonzero(cand[metric].to_numpy() == 1.0)
    fail = rng.choice(passing, size=round(drop * len(cand)), replace=False)
    cand.iloc[fail, cand.columns.get_loc(metric)] = 0.0
    return cand


def continuous_differences(rng: np.random.Generator, shape: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Paired scores of a continuous metric whose true mean difference is 0, in the shapes RAG metrics take."""
    if shape == "bounded":  # a similarity score in [0, 1], both runs noisy around the question's level
        level = rng.beta(2, 2, n)
        return np.clip(level + rng.normal(0, 0.12, n), 0, 1), np.clip(level + rng.normal(0, 0.12, n), 0, 1)
    if shape == "mostly-unchanged":  # nDCG: most questions identical, the others redrawn
        base = rng.beta(0.6, 0.4, n)
        return base, np.where(rng.random(n) < 0.5, base, rng.beta(0.6, 0.4, n))
    if shape == "claims":  # faithfulness over one to six claims, redrawn on 40 % of answers
        claims = rng.integers(1, 7, n)
        base = rng.binomial(claims, 0.8) / claims
        return base, np.where(rng.random(n) < 0.6, base, rng.binomial(claims, 0.8) / claims)
    if shape == "normal":
        base = rng.random(n)
        return base, base + rng.normal(0, 0.2, n)
    if shape == "zero-inflated":  # 60 % unchanged, the rest normal
        base = rng.random(n)
        return base, base + rng.normal(0, 0.3, n) * (rng.random(n) < 0.4)
    if shape == "skewed":  # latency-like: exponential differences centred on 0
        base = rng.random(n)
        return base, base + rng.exponential(0.2, n) - 0.2
    raise ValueError(shape)


CONTINUOUS_SHAPES = ("bounded", "mostly-unchanged", "claims", "normal", "zero-inflated", "skewed")


def exact_pass_rate(n, discordance, margin=0.02, confidence=0.95):
    """The exact chance that the gate's pass rule (Tango's lower bound above -margin) passes a change of
    exactly -margin, summed over every possible table."""
    p_fall, p_rise = (discordance + margin) / 2, (discordance - margin) / 2
    top = int(min(n, n * discordance + 12 * math.sqrt(n * discordance) + 20))
    total = passed = 0.0
    for b in range(top + 1):
        for c in range(top + 1 - b):
            log_p = (
                math.lgamma(n + 1)
                - math.lgamma(b + 1)
                - math.lgamma(c + 1)
                - math.lgamma(n - b - c + 1)
                + b * math.log(p_fall)
                + c * math.log(p_rise)
                + (n - b - c) * math.log(1 - discordance)
            )
            p = math.exp(log_p)
            total += p
            if p > 1e-15 and tango_interval(b, c, n, confidence=confidence).low > -margin:
                passed += p
    return passed, total
