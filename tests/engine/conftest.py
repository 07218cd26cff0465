"""Fixtures of the engine tests.

ranx compiles its metrics with numba the first time they run (tens of seconds cold, cached on disk
afterwards) and again for a new id length, so it is warmed once per session with the same metrics
and the same 4-character ids the cross-checks use.
"""

from __future__ import annotations

import warnings

import pytest

RANX_METRICS = ["ndcg@5", "ndcg_burges@5", "precision@5", "recall@5", "mrr"]


def ranx_evaluate(qrels: dict, run: dict) -> dict:
    """Per-query ranx scores (arrays in the order of the sorted query ids)."""
    from ranx import Qrels, Run, evaluate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evaluate(Qrels(qrels), Run(run), RANX_METRICS, return_mean=False, make_comparable=True)


@pytest.fixture(scope="session")
def ranx_ready():
    """Import ranx and compile its kernels once; return the evaluation helper."""
    qrels = {"q000": {"d000": 1, "d001": 2}, "q001": {"d002": 1}}
    run = {"q000": {"d000": 0.9, "d005": 0.8, "d001": 0.1}, "q001": {"d002": 0.5, "d004": 0.6}}
    scores = ranx_evaluate(qrels, run)
    assert set(scores) == set(RANX_METRICS)
    return ranx_evaluate
