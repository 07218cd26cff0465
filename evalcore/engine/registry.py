"""A registry of the per-question retrieval metrics, which drives the shared invariance tests.

Each entry gives the exact per-question function in one signature, ``f(ranked, grades, k)``, and
the batch scorer's name for it, so a new metric is tested by adding one line here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .retrieval import ndcg_at_k, precision_at_k, recall_at_k, reciprocal_rank


@dataclass(frozen=True)
class RetrievalMetric:
    """A retrieval metric: its per-question function and properties the tests rely on.

    Parameters
    ----------
    name : str
        The registry's key (``"recall@k"``, ``"ndcg_linear@k"``).
    batch_name : str
        The metric's name in the batch scorer (one of ``RETRIEVAL_METRICS``).
    score : callable ``(ranked, grades, k) -> float``
        The exact per-question function.
    uses_grades : bool, default False
        Whether the grades matter, beyond relevant or not.
    cut_at_k : bool, default True
        Whether only the top k count (False for ``rr``, which reads the whole list).
    trec_eval_name : str, optional
        trec_eval's measure, with ``{k}`` for the cut-off (``"P_{k}"``), when it has one.
    description : str, default ""
        One line for people.
    gain : {"exponential", "linear"}, default "exponential"
        The ``gain`` to pass to the batch scorer so that it computes this entry (nDCG entries only).

    Examples
    --------
    >>> metric = RETRIEVAL_REGISTRY["precision@k"]
    >>> metric.batch_name, metric.trec_eval_name.format(k=5), metric.score(["d7", "d2"], {"d2": 1}, 2)
    ('precision', 'P_5', 0.5)
    """

    name: str
    batch_name: str
    score: Callable[[Sequence, Mapping[Any, float], int], float]
    uses_grades: bool = False
    cut_at_k: bool = True
    trec_eval_name: str | None = None
    description: str = ""
    gain: str = "exponential"


RETRIEVAL_REGISTRY: dict[str, RetrievalMetric] = {
    metric.name: metric
    for metric in (
        RetrievalMetric(
            "recall@k",
            "recall",
            lambda r, g, k: recall_at_k(r, g, k),
            trec_eval_name="recall_{k}",
            description="fraction of relevant gold in the top k",
        ),
        RetrievalMetric(
            "precision@k",
            "precision",
            lambda r, g, k: precision_at_k(r, g, k),
            trec_eval_name="P_{k}",
            description="fraction of the top k that is relevant",
        ),
        RetrievalMetric(
            "rr",
            "rr",
            lambda r, g, k: reciprocal_rank(r, g),
            cut_at_k=False,
            trec_eval_name="recip_rank",
            description="1 / rank of the first relevant document",
        ),
        RetrievalMetric(
            "rr@k",
            "rr@k",
            lambda r, g, k: reciprocal_rank(r, g, k=k),
            description="reciprocal rank within the top k",
        ),
        RetrievalMetric(
            "ndcg@k",
            "ndcg",
            lambda r, g, k: ndcg_at_k(r, g, k, gain="exponential"),
            uses_grades=True,
            description="nDCG with gain 2^g - 1",
        ),
        RetrievalMetric(
            "ndcg_linear@k",
            "ndcg",
            lambda r, g, k: ndcg_at_k(r, g, k, gain="linear"),
            uses_grades=True,
            gain="linear",
            trec_eval_name="ndcg_cut_{k}",
            description="nDCG with gain g (trec_eval's)",
        ),
    )
}
