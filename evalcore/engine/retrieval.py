"""Retrieval metrics: exact per-question definitions and a vectorized batch scorer.

Conventions (each one changes the numbers, so each is a parameter or stated here):

* **k** is the number of chunks that actually reached the model after reranking and
  truncation, not the retriever's candidate count. The batch scorer takes one k per question.
* **Relevance**: a document is relevant when its grade is above 0 (trec_eval's rule). A grade-0
  judgment is judged but not relevant. A plain set of gold ids means grade 1 for each.
* **Order**: the ranked list's own order is the ranking; nothing is re-sorted (trec_eval re-sorts
  by score and breaks ties by document id, so give it strictly decreasing scores to compare).
* **Duplicates**: a document counts at its first position only; a repeat is scored as not
  relevant. Chunk lists mapped to documents repeat documents, and a repeat adds nothing new for
  the model, so it must not raise precision or nDCG (nDCG stays at most 1).
* **Fewer than k results**: precision@k still divides by k (as trec_eval's ``P_k`` and the spec do):
  a system that returns fewer chunks is not rewarded for it. Give the per-question k as the number
  of chunks that reached the model to measure precision over what the model saw. A question where
  no chunk reached the model (k = 0) scores 0 on every metric.
* **Judged, none relevant**: a question whose gold is judged but holds no relevant document
  (every grade 0) scores 0 on every metric and stays in the means, as trec_eval and the spec's
  functions score it: retrieval had nothing right to find, and found nothing right.
* **Unanswerable questions** (marked so, or with no gold judgment at all) get NaN for every
  retrieval metric and are left out of the means; they are scored instead on whether the system
  declined to answer.
* **nDCG gain**: ``"exponential"`` is 2^g - 1 (the spec's, Burges et al.), ``"linear"`` is g
  (trec_eval's). They agree when grades are binary.
* **Reciprocal rank** looks at the whole ranked list, as in the spec and trec_eval's ``recip_rank``;
  ``rr@k`` is the variant cut at k.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from . import _kernels
from ._encoding import EncodedRetrieval, encode_retrieval
from ._kernels import _gain_values
from ._validation import Gold, check_positive_int, check_ranked, relevant_grades

__all__ = [
    "DEFAULT_RETRIEVAL_METRICS",
    "GAINS",
    "RETRIEVAL_METRICS",
    "EncodedRetrieval",
    "Gain",
    "RetrievalSummary",
    "encode_retrieval",
    "is_retrieval_metric",
    "metric_column",
    "ndcg_at_k",
    "precision_at_k",
    "recall_at_k",
    "reciprocal_rank",
    "retrieval_metric_names",
    "score_encoded",
    "score_retrieval",
    "summarize_retrieval",
]

Gain = Literal["exponential", "linear"]
GAINS: tuple[str, ...] = ("exponential", "linear")
RETRIEVAL_METRICS: tuple[str, ...] = ("recall", "precision", "rr", "rr@k", "ndcg")
DEFAULT_RETRIEVAL_METRICS: tuple[str, ...] = ("recall", "precision", "rr", "ndcg")


def _check_gain(gain: str) -> str:
    if gain not in GAINS:
        raise ValueError(f"gain must be one of {GAINS}, got {gain!r}")
    return gain


def _first_occurrences(ranked: Sequence, k: int | None = None) -> list[tuple[int, Any]]:
    """Return ``(rank, doc)`` for the first occurrence of each document, ranks from 1."""
    seen: set = set()
    out = []
    for rank, doc in enumerate(ranked if k is None else ranked[:k], start=1):
        if doc not in seen:
            seen.add(doc)
            out.append((rank, doc))
    return out


def _check_question(
    ranked: Sequence, gold: Gold, k: int | None, *, name: str = "gold", whole_list: bool = False
) -> tuple[int | None, dict[Any, float]]:
    """Check one question's arguments; return the cut-off and the relevant documents with their grades.

    ``ranked`` must be an ordered sequence of ids, ``k`` a positive integer (or None, the whole
    list, where ``whole_list`` allows it) and ``gold`` (called ``name`` in messages) ids or grades.
    """
    check_ranked(ranked)
    if k is not None or not whole_list:
        k = check_positive_int(k, "k")
    return k, relevant_grades(gold, name)


def _nothing_relevant(gold: Gold) -> float:
    """The score of a question with no relevant gold: 0 when it was judged (grades all 0), NaN when nothing was."""
    return 0.0 if isinstance(gold, Mapping) and len(gold) > 0 else math.nan


def recall_at_k(ranked: Sequence, gold: Gold, k: int) -> float:
    """Return the fraction of relevant gold documents that appear in the top k.

    Parameters
    ----------
    ranked : sequence of ids
        Retrieved ids in rank order (best first).
    gold : set of ids or mapping id -> grade
        The question's gold documents; with grades, those above 0 are relevant.
    k : int
        Cut-off: the number of chunks that reached the model.

    Returns
    -------
    float
        In [0, 1]; 0 when the gold is judged but none of it is relevant; NaN when nothing is judged.

    Examples
    --------
    >>> round(recall_at_k(["d7", "d2", "d9", "d4", "d1"], {"d2", "d4", "d5"}, 5), 3)
    0.667
    """
    k, relevant = _check_question(ranked, gold, k)
    if not relevant:
        return _nothing_relevant(gold)
    return len(set(ranked[:k]).intersection(relevant)) / len(relevant)


def precision_at_k(ranked: Sequence, gold: Gold, k: int) -> float:
    """Return the fraction of the top k that are relevant gold documents.

    Divides by k even when fewer than k ids were retrieved (trec_eval's ``P_k``); a document
    repeated within the top k counts once.

    Parameters
    ----------
    ranked : sequence of ids
        Retrieved ids in rank order.
    gold : set of ids or mapping id -> grade
        The question's gold documents; with grades, those above 0 are relevant.
    k : int
        Cut-off.

    Returns
    -------
    float
        In [0, 1]; 0 when the gold is judged but none of it is relevant; NaN when nothing is judged.

    Examples
    --------
    >>> precision_at_k(["d7", "d2", "d9", "d4", "d1"], {"d2", "d4", "d5"}, 5)
    0.4
    """
    k, relevant = _check_question(ranked, gold, k)
    if not relevant:
        return _nothing_relevant(gold)
    return len(set(ranked[:k]).intersection(relevant)) / k


def reciprocal_rank(ranked: Sequence, gold: Gold, *, k: int | None = None) -> float:
    """Return one over the rank of the first relevant document (0 if none is retrieved).

    The mean of this over questions is MRR.

    Parameters
    ----------
    ranked : sequence of ids
        Retrieved ids in rank order.
    gold : set of ids or mapping id -> grade
        The question's gold documents.
    k : int, optional
        Look only at the top k (``rr@k``). By default the whole list, as in the spec and
        trec_eval's ``recip_rank``.

    Returns
    -------
    float
        In [0, 1]; 0 when the gold is judged but none of it is relevant; NaN when nothing is judged.

    Examples
    --------
    >>> reciprocal_rank(["d7", "d2", "d9"], {"d2", "d4"})
    0.5
    """
    k, relevant = _check_question(ranked, gold, k, whole_list=True)
    if not relevant:
        return _nothing_relevant(gold)
    for rank, doc in enumerate(ranked if k is None else ranked[:k], start=1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranked: Sequence, grades: Gold, k: int, *, gain: Gain = "exponential") -> float:
    """Return the normalized discounted cumulative gain of the top k.

    Each relevant document at rank i contributes ``gain(grade) / log2(i + 1)``; the sum is
    divided by the same sum for the ideal order of the question's relevant grades, so 1.0 means
    the ideal order.

    Parameters
    ----------
    ranked : sequence of ids
        Retrieved ids in rank order.
    grades : mapping id -> grade, or set of ids
        Graded relevance (for example 0-3); a set means grade 1 for each id.
    k : int
        Cut-off.
    gain : {"exponential", "linear"}, default "exponential"
        ``"exponential"`` is 2^g - 1 (the spec's convention), ``"linear"`` is g (trec_eval's).

    Returns
    -------
    float
        In [0, 1]; 0 when the gold is judged but none of it is relevant; NaN when nothing is judged.

    References
    ----------
    Järvelin and Kekäläinen, "Cumulated gain-based evaluation of IR techniques", TOIS 2002;
    Burges et al., "Learning to rank using gradient descent", ICML 2005 (exponential gain).

    Examples
    --------
    >>> round(ndcg_at_k(["d7", "d2", "d9", "d4", "d1"], {"d2": 3, "d4": 1, "d5": 2}, 5), 3)
    0.516
    """
    _check_gain(gain)
    k, relevant = _check_question(ranked, grades, k, name="grades")
    if not relevant:
        return _nothing_relevant(grades)
    hits = [(rank, relevant[doc]) for rank, doc in _first_occurrences(ranked, k) if doc in relevant]
    dcg = sum(float(_gain_values(np.array([g]), gain)[0]) / math.log2(rank + 1) for rank, g in hits)
    ideal = sorted(relevant.values(), reverse=True)[:k]
    ideal_gains = _gain_values(np.array(ideal), gain)
    idcg = float(np.sum(ideal_gains / np.log2(np.arange(2, len(ideal) + 2))))
    return dcg / idcg


def _resolve_k(k: int | Sequence[int] | np.ndarray, n: int) -> np.ndarray:
    if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
        return np.full(n, check_positive_int(k, "k"), dtype=np.int64)
    array = np.asarray(k)
    if array.shape != (n,):
        raise ValueError(f"k must be an integer or one integer per question ({n}), got shape {array.shape}")
    if not np.issubdtype(array.dtype, np.integer):
        if np.issubdtype(array.dtype, np.floating) and np.all(np.isfinite(array)) and np.all(array == np.round(array)):
            array = array.astype(np.int64)
        else:
            raise ValueError("k must hold integers (the number of chunks that reached the model per question)")
    if np.any(array < 0):
        bad = int(np.flatnonzero(array < 0)[0])
        raise ValueError(f"k must be 0 or more for every question, got {array[bad]} at position {bad}")
    return array.astype(np.int64)


def score_encoded(
    encoded: EncodedRetrieval,
    k: int | Sequence[int] | np.ndarray,
    *,
    metrics: Sequence[str] = DEFAULT_RETRIEVAL_METRICS,
    gain: Gain = "exponential",
) -> dict[str, np.ndarray]:
    """Score integer-coded input; return one float array per metric (NaN where nothing is judged).

    When the lists have similar lengths (the usual case), questions are laid out as columns of
    small dense matrices and compared all at once; otherwise the kernel works on flat arrays with
    ``numpy.bincount`` reductions, linear in the number of retrieved ids plus gold judgments
    whatever the list lengths. Both give identical numbers.

    Parameters
    ----------
    encoded : EncodedRetrieval
        The questions, from :func:`encode_retrieval` or :meth:`EncodedRetrieval.from_padded`.
    k : int or array-like of int, shape (n_questions,)
        The cut-off: one for all, or per question the number of chunks that reached the model.
    metrics : sequence of str, default ("recall", "precision", "rr", "ndcg")
        Any of ``RETRIEVAL_METRICS``.
    gain : {"exponential", "linear"}, default "exponential"
        nDCG gain convention.

    Returns
    -------
    dict of str to ndarray of shape (n_questions,)
        One float array per metric asked for (NaN for a question without any gold judgment, 0 for judged gold that holds nothing relevant), plus
        ``"n_relevant"`` and ``"k"`` (integers).

    Examples
    --------
    >>> out = score_encoded(encode_retrieval([["d7", "d2", "d9"]], [{"d2", "d5"}]), 3, metrics=["recall", "rr"])
    >>> float(out["recall"][0]), float(out["rr"][0]), int(out["n_relevant"][0])
    (0.5, 0.5, 2)
    """
    _check_gain(gain)
    unknown = [m for m in metrics if m not in RETRIEVAL_METRICS]
    if unknown:
        raise ValueError(f"unknown retrieval metric(s) {unknown}; choose from {RETRIEVAL_METRICS}")
    n = encoded.n_questions
    k_q = _resolve_k(k, n)
    dense = _kernels._score_dense(encoded, k_q, metrics, gain)
    if dense is not None:
        return dense
    return _kernels._score_flat(encoded, k_q, metrics, gain)


# --------------------------------------------------------------------------------------------
# Metric names: the one place that says how a retrieval metric's column is named
# --------------------------------------------------------------------------------------------

#: What a retrieval column name starts with, before any ``@k``.
_METRIC_STEMS: frozenset[str] = frozenset(m.split("@")[0] for m in RETRIEVAL_METRICS)


def metric_column(metric: str, k_label: object) -> str:
    """Return the column name of a retrieval metric at a cut-off.

    Parameters
    ----------
    metric : str
        One of ``RETRIEVAL_METRICS``: ``"recall"``, ``"precision"``, ``"rr"``, ``"rr@k"``, ``"ndcg"``.
    k_label : object
        The cut-off written in the name: an integer, or ``"k"`` when k varies per question.

    Returns
    -------
    str
        ``"recall@5"``, ``"precision@5"``, ``"ndcg@5"``, ``"rr@5"``; ``"rr"`` (reciprocal rank over
        the whole list) has no cut-off.

    Examples
    --------
    >>> metric_column("ndcg", 5), metric_column("rr", 5), metric_column("rr@k", 10)
    ('ndcg@5', 'rr', 'rr@10')
    """
    if metric not in RETRIEVAL_METRICS:
        raise ValueError(f"unknown retrieval metric {metric!r}; choose from {RETRIEVAL_METRICS}")
    if metric == "rr":
        return "rr"
    if metric == "rr@k":
        return f"rr@{k_label}"
    return f"{metric}@{k_label}"


def retrieval_metric_names(k: object, *, metrics: Sequence[str] = DEFAULT_RETRIEVAL_METRICS) -> list[str]:
    """Return the column names of the retrieval metrics at cut-off k, in the order given.

    Parameters
    ----------
    k : object
        The cut-off written in the names (the run's k), as in :func:`metric_column`.
    metrics : sequence of str, default ("recall", "precision", "rr", "ndcg")
        Metrics of ``RETRIEVAL_METRICS``, as :func:`score_retrieval` takes them.

    Returns
    -------
    list of str, one per metric
        The columns :func:`score_retrieval` writes for these metrics with ``k_label=k``.

    Examples
    --------
    >>> retrieval_metric_names(5)
    ['recall@5', 'precision@5', 'rr', 'ndcg@5']
    """
    if isinstance(metrics, str):
        raise ValueError(f"metrics must be a sequence of metric names, got the string {metrics!r}")
    return [metric_column(metric, k) for metric in metrics]


def is_retrieval_metric(name: str) -> bool:
    """Return whether a column name is a retrieval metric's (``recall@5``, ``rr``, ``rr@10``, ...).

    Parameters
    ----------
    name : str
        A metric's column name, as stored with a run's scores.

    Returns
    -------
    bool
        True when the part before any ``@`` is ``recall``, ``precision``, ``rr`` or ``ndcg``.

    Examples
    --------
    >>> is_retrieval_metric("ndcg@10"), is_retrieval_metric("rr"), is_retrieval_metric("faithfulness")
    (True, True, False)
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a metric's column name (a str), got {type(name).__name__}")
    return name.split("@")[0] in _METRIC_STEMS


def score_retrieval(
    ranked: Sequence[Sequence],
    gold: Sequence[Gold],
    k: int | Sequence[int] | np.ndarray,
    *,
    question_ids: Sequence | None = None,
    declined: Sequence[bool] | None = None,
    answerable: Sequence[bool] | None = None,
    metrics: Sequence[str] = DEFAULT_RETRIEVAL_METRICS,
    gain: Gain = "exponential",
    k_label: object | None = None,
) -> pd.DataFrame:
    """Score many questions at once; return one row per question, one column per metric.

    Parameters
    ----------
    ranked : sequence of sequences of ids
        Per question, the retrieved ids in rank order.
    gold : sequence of (set of ids or mapping id -> grade)
        Per question, the gold documents (grade above 0 means relevant).
    k : int or sequence of int
        The cut-off: one for all, or per question the number of chunks that reached the model.
    question_ids : sequence, optional
        Index of the result; by default 0..n-1.
    declined : sequence of bool, optional
        Whether the system declined to answer each question. Unanswerable questions are scored
        on it (see :func:`summarize_retrieval`).
    answerable : sequence of bool, optional
        Whether each question has an answer in the corpus. By default a question is answerable
        when it has any gold judgment. A question marked unanswerable must have no relevant gold;
        its metrics are NaN. An answerable question whose judged gold holds no relevant document
        scores 0; one without any gold judgment (say, judged only on its answer) gets NaN: there
        is nothing to score retrieval against.
    metrics : sequence of str, default ("recall", "precision", "rr", "ndcg")
        Any of ``"recall"``, ``"precision"``, ``"rr"``, ``"rr@k"``, ``"ndcg"``.
    gain : {"exponential", "linear"}, default "exponential"
        nDCG gain convention.
    k_label : object, optional
        The k written in column names (``recall@5``). Defaults to k when k is one integer,
        otherwise ``"k"``; pass the run's nominal k when k varies per question.

    Returns
    -------
    pandas.DataFrame
        Columns ``k``, ``n_relevant``, ``answerable``, ``declined`` (if given) and one per metric
        (``recall@5``, ``precision@5``, ``rr``, ``ndcg@5``). Metrics are NaN for unanswerable
        questions and those without any gold judgment, so ``DataFrame.mean()`` leaves them out;
        0 for judged questions without a relevant document, which stay in the means.

    Examples
    --------
    >>> frame = score_retrieval([["d7", "d2", "d9", "d4", "d1"]], [{"d2": 3, "d4": 1, "d5": 2}], 5)
    >>> [round(float(x), 3) for x in frame.iloc[0][["recall@5", "precision@5", "rr", "ndcg@5"]]]
    [0.667, 0.4, 0.5, 0.516]
    """
    encoded = encode_retrieval(ranked, gold)
    n = encoded.n_questions
    scored = score_encoded(encoded, k, metrics=metrics, gain=gain)
    if k_label is None:
        k_label = int(k) if isinstance(k, (int, np.integer)) else "k"
    index = (
        pd.Index(list(question_ids), name="question") if question_ids is not None else pd.RangeIndex(n, name="question")
    )
    if len(index) != n:
        raise ValueError(f"question_ids must have one id per question ({n}), got {len(index)}")
    columns: dict[str, Any] = {"k": scored["k"], "n_relevant": scored["n_relevant"]}
    has_gold = scored["n_relevant"] > 0
    if answerable is None:
        columns["answerable"] = np.diff(encoded.gold_offsets) > 0
    else:
        flags = np.asarray(answerable, dtype=bool)
        if flags.shape != (n,):
            raise ValueError(f"answerable must have one flag per question ({n}), got shape {flags.shape}")
        contradicted = np.flatnonzero(~flags & has_gold)
        if contradicted.size:
            raise ValueError(
                f"question {index[int(contradicted[0])]!r} is marked unanswerable but has relevant gold; "
                f"fix the flag or the gold ({contradicted.size} question(s) affected)"
            )
        columns["answerable"] = flags
    if declined is not None:
        flags = np.asarray(declined, dtype=bool)
        if flags.shape != (n,):
            raise ValueError(f"declined must have one flag per question ({n}), got shape {flags.shape}")
        columns["declined"] = flags
    for metric in metrics:
        columns[metric_column(metric, k_label)] = np.where(columns["answerable"], scored[metric], np.nan)
    return pd.DataFrame(columns, index=index)


@dataclass(frozen=True)
class RetrievalSummary:
    """Means of the retrieval metrics over answerable questions, and how declining was scored.

    Parameters
    ----------
    means : mapping column -> float
        Mean of each metric column over the questions scored on every metric (NaN if none).
    n_questions : int
        Rows of the frame.
    n_scored : int
        Questions with relevant gold, which the means cover.
    n_unanswerable : int
        Questions marked (or found) unanswerable.
    decline_rate : float
        Fraction of unanswerable questions the system declined (higher is better); NaN when
        there is none or ``declined`` was not given.
    false_decline_rate : float
        Fraction of answerable questions it declined (lower is better); NaN likewise.
    notes : tuple of str, default ()
        What the numbers leave out, in words.

    Examples
    --------
    >>> frame = score_retrieval([["a"], ["b"]], [{"a"}, set()], 1, declined=[False, True])
    >>> summary = summarize_retrieval(frame)
    >>> summary.means["recall@1"], summary.n_scored, summary.decline_rate
    (1.0, 1, 1.0)
    """

    means: Mapping[str, float]
    n_questions: int
    n_scored: int
    n_unanswerable: int
    decline_rate: float
    false_decline_rate: float
    notes: tuple[str, ...] = field(default_factory=tuple)


def summarize_retrieval(frame: pd.DataFrame) -> RetrievalSummary:
    """Return the means (NaN rows left out) and the decline rates of a scored frame.

    ``decline_rate`` is the fraction of unanswerable questions the system declined (higher is
    better); ``false_decline_rate`` the fraction of answerable questions it declined (lower is
    better). Both are NaN when there is nothing to count or ``declined`` was not given.

    Parameters
    ----------
    frame : pandas.DataFrame
        A frame from :func:`score_retrieval`: one row per question, with ``answerable`` and
        (to score declining) ``declined`` columns.

    Returns
    -------
    RetrievalSummary

    Examples
    --------
    >>> frame = score_retrieval([["a"], ["x"], ["a"]], [{"a"}, {"a"}, set()], 1, metrics=["recall"])
    >>> summary = summarize_retrieval(frame)
    >>> summary.means, summary.n_unanswerable
    ({'recall@1': 0.5}, 1)
    """
    if not isinstance(frame, pd.DataFrame) or "answerable" not in frame.columns:
        raise ValueError("frame must be a DataFrame from score_retrieval (it needs the 'answerable' column)")
    metric_columns = [c for c in frame.columns if c not in ("k", "n_relevant", "answerable", "declined")]
    scored = frame[metric_columns].notna().all(axis=1) if metric_columns else pd.Series(False, index=frame.index)
    means = {c: float(frame[c].mean()) if scored.any() else math.nan for c in metric_columns}
    unanswerable = ~frame["answerable"].astype(bool)
    notes = []
    if "declined" in frame:
        declined = frame["declined"].astype(bool)
        decline_rate = float(declined[unanswerable].mean()) if unanswerable.any() else math.nan
        answerable = ~unanswerable
        false_decline = float(declined[answerable].mean()) if answerable.any() else math.nan
    else:
        decline_rate = false_decline = math.nan
        if unanswerable.any():
            notes.append("declined was not given, so unanswerable questions are not scored")
    n_scored = int(scored.sum())
    if n_scored < len(frame):
        notes.append(f"means over {n_scored} of {len(frame)} questions: the rest have no relevant gold")
    return RetrievalSummary(
        means=means,
        n_questions=len(frame),
        n_scored=n_scored,
        n_unanswerable=int(unanswerable.sum()),
        decline_rate=decline_rate,
        false_decline_rate=false_decline,
        notes=tuple(notes),
    )
