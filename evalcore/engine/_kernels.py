"""Scoring kernels of the batch retrieval scorer (private; see ``retrieval.score_encoded``).

Two kernels score an :class:`~evalcore.engine._encoding.EncodedRetrieval` and give identical
numbers (the tests check it bit for bit):

* :func:`_score_dense` lays the questions out as columns of small ``(rank, question)`` matrices
  and compares them all at once; it declines (returns None) when the lists are too uneven for
  padding to pay.
* :func:`_score_flat` works on the flat arrays with ``numpy.bincount`` reductions, linear in the
  number of retrieved ids plus gold judgments whatever the list lengths.

Both take validated arguments: ``k_q`` one non-negative integer per question, ``metrics`` names
from ``RETRIEVAL_METRICS`` and ``gain`` one of ``GAINS``. Each returns one float array per
metric (NaN where the question has no gold judgment at all; 0 where its judged gold holds no
relevant document, as trec_eval scores it) plus ``n_relevant`` and ``k``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._encoding import EncodedRetrieval


def _gain_values(grades: np.ndarray, gain: str) -> np.ndarray:
    grades = np.maximum(grades, 0.0)
    return np.exp2(grades) - 1.0 if gain == "exponential" else grades


def _question_index(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return, for every flat element, its question index and its 0-based position."""
    lengths = np.diff(offsets)
    q = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    pos = np.arange(int(offsets[-1]), dtype=np.int64) - np.repeat(offsets[:-1], lengths)
    return q, pos


#: The dense kernel lays questions out as columns of (rank, question) matrices; it is used when
#: padding to the longest list costs at most this factor over the real number of entries.
_DENSE_PADDING = 2.0
#: ... and when no question has more gold judgments than this (the kernel loops over them).
_DENSE_MAX_GOLD = 32


def _columns(values: np.ndarray, offsets: np.ndarray, width: int, fill: Any, dtype: Any) -> np.ndarray:
    """Return a ``(width, n)`` matrix whose column i holds question i's values, padded with ``fill``."""
    lengths = np.diff(offsets)
    n = lengths.size
    out = np.empty((width, n), dtype=dtype)
    if n and width and int(lengths.min()) == width:
        out[...] = values.reshape(n, width).T
    elif width <= 8:
        extended = np.empty(values.size + 1, dtype=dtype)
        extended[:-1] = values
        extended[-1] = fill
        for j in range(width):
            np.take(extended, np.where(lengths > j, offsets[:-1] + j, values.size), out=out[j], mode="clip")
    else:
        out.fill(fill)
        out.T[np.arange(width) < lengths[:, None]] = values
    return out


def _sort_rows(matrix: np.ndarray, *, descending: bool = False, first: int | None = None) -> np.ndarray:
    """Sort each column of a short ``(rows, n)`` matrix; only the ``first`` rows need be in place.

    A few rows sort faster by compare-exchanges across whole rows than column by column.
    """
    rows = len(matrix)
    first = rows if first is None else first
    if rows > 12:
        ordered = np.sort(matrix, axis=0)
        return ordered[::-1] if descending else ordered
    out = list(matrix)
    low, high = (np.maximum, np.minimum) if descending else (np.minimum, np.maximum)
    for j in range(min(first, rows - 1)):  # bubble the j-th smallest (largest) up to row j
        for i in range(rows - 1, j, -1):
            out[i - 1], out[i] = low(out[i - 1], out[i]), high(out[i - 1], out[i])
    return np.array(out) if out else matrix


def _gains(grades: np.ndarray, gain: str) -> np.ndarray:
    """Return ``_gain_values(grades, gain)``, from a table when the grades are small whole numbers."""
    if gain == "exponential" and grades.size:
        with np.errstate(invalid="ignore"):
            whole = grades.astype(np.int64)
        if np.array_equal(whole, grades) and int(whole.max()) <= 64:
            return _gain_values(np.arange(65, dtype=np.float64), gain)[np.maximum(whole, 0)]
    return _gain_values(grades, gain)


def _score_dense(
    encoded: EncodedRetrieval, k_q: np.ndarray, metrics: Sequence[str], gain: str
) -> dict[str, np.ndarray] | None:
    """Score with one column per question; return None when the lists are too uneven for it.

    For each relevant judgment, the rank of its first retrieval is found by comparing the whole
    (rank, question) matrix of retrieved ids at once; sums run in rank order, exactly as in the
    flat kernel, so both give identical numbers.
    """
    width = int(np.diff(encoded.ranked_offsets).max(initial=0))
    g_len = np.diff(encoded.gold_offsets)
    depth = int(g_len.max(initial=0))
    if not _dense_pays(encoded, width, depth):
        return None
    codes = _narrow_codes(encoded.ranked_docs, encoded.gold_docs)
    if codes is None:
        return None
    r_small, g_small, r_fill, g_fill = codes
    ranked = _columns(r_small, encoded.ranked_offsets, width, r_fill, r_small.dtype)
    relevant_flat = encoded.gold_grades > 0
    # where each question's j-th gold judgment sits in the flat arrays (one past the end: none)
    position = np.arange(depth)[:, None]
    g_index = np.where(position < g_len, encoded.gold_offsets[:-1] + position, g_small.size)
    gold = np.append(np.where(relevant_flat, g_small, g_fill), r_small.dtype.type(g_fill))[g_index]
    n_relevant = np.count_nonzero(gold != g_fill, axis=0)
    if depth > 1:
        _refuse_repeated_gold(gold, g_fill)
    first = _first_relevant_ranks(ranked, gold, width)
    k_eff = np.minimum(k_q, width)
    in_k = first < k_eff
    judged = g_len > 0  # scored: NaN only without any gold judgment
    with np.errstate(invalid="ignore", divide="ignore"):
        out: dict[str, np.ndarray] = {}
        hits_k = None
        if "recall" in metrics or "precision" in metrics:
            hits_k = np.count_nonzero(in_k, axis=0).astype(np.float64)
            if "recall" in metrics:
                out["recall"] = np.where(judged, hits_k / np.maximum(n_relevant, 1), np.nan)
            if "precision" in metrics:
                out["precision"] = np.where(judged, np.where(k_q > 0, hits_k / np.maximum(k_q, 1), 0.0), np.nan)
        if "rr" in metrics or "rr@k" in metrics:
            out.update(_dense_reciprocal_ranks(first, k_q, k_eff, judged, width, metrics))
        if "ndcg" in metrics:
            gains = np.append(np.where(relevant_flat, _gains(encoded.gold_grades, gain), 0.0), 0.0)[g_index]
            dcg = _dense_dcg(gains, first, in_k, width, hits_k)
            idcg = _dense_ideal_dcg(gains, k_q)
            out["ndcg"] = np.where(judged, np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0), np.nan)
    out["n_relevant"] = n_relevant
    out["k"] = k_q
    return out


def _dense_pays(encoded: EncodedRetrieval, width: int, depth: int) -> bool:
    """Whether padding every question to the longest list (``width``) and gold (``depth``) costs little enough."""
    n = encoded.n_questions
    return not (
        n == 0
        or depth > _DENSE_MAX_GOLD
        or width > 32_767
        or width * n > _DENSE_PADDING * encoded.ranked_docs.size + 16 * n
        or depth * n > _DENSE_PADDING * encoded.gold_docs.size + 16 * n
    )


def _narrow_codes(r_docs: np.ndarray, g_docs: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, int] | None:
    """Return the retrieved and gold codes as 32-bit integers when they fit (half the memory traffic), else 64-bit
    ones, with a fill value for padded ranks and another for padded gold (neither a real code); None when the
    codes span so much of the 64-bit range that no fill value is left."""
    low = int(min(r_docs.min(initial=0), g_docs.min(initial=0)))
    high = int(max(r_docs.max(initial=0), g_docs.max(initial=0)))
    if low >= 0 and high < 2**31:
        r_small, g_small = r_docs.astype(np.int32), g_docs.astype(np.int32)
    elif high - low < 2**31 - 2:
        r_small, g_small = (r_docs - (low - 2)).astype(np.int32), (g_docs - (low - 2)).astype(np.int32)
    elif low > -(2**63) + 2:
        r_small, g_small = r_docs.astype(np.int64, copy=False), g_docs.astype(np.int64, copy=False)
    else:
        return None
    r_fill, g_fill = (-1, -2) if r_small.dtype == np.int32 else (min(low, 0) - 1, min(low, 0) - 2)
    return r_small, g_small, r_fill, g_fill


def _refuse_repeated_gold(gold: np.ndarray, g_fill: int) -> None:
    """Raise ValueError when a question's relevant gold (a ``(depth, n)`` matrix) lists one document twice."""
    depth, n = gold.shape
    same = np.zeros(n, dtype=bool)
    for j in range(depth):
        for other in range(j + 1, depth):
            same |= (gold[j] == gold[other]) & (gold[j] != g_fill)
    if same.any():
        raise ValueError(f"gold of question {int(np.flatnonzero(same)[0])} lists the same document twice")


def _first_relevant_ranks(ranked: np.ndarray, gold: np.ndarray, width: int) -> np.ndarray:
    """Return ``first[j, i]``: the 0-based rank at which question i first retrieved its j-th relevant judgment,
    ``width`` if never. A repeated document counts at its first position only."""
    depth, n = gold.shape
    weight_type = np.int8 if width < 127 else np.int16
    weights = (width - np.arange(width)).astype(weight_type)[:, None]
    score = np.zeros((depth, n), dtype=weight_type)
    if width:
        equal = np.empty(ranked.shape, dtype=bool)
        product = np.empty(ranked.shape, dtype=weight_type)
        for j in range(depth):
            np.equal(ranked, gold[j], out=equal)
            np.multiply(equal.view(np.int8), weights, out=product)
            np.max(product, axis=0, out=score[j])
    return width - score.astype(np.intp)


def _dense_reciprocal_ranks(
    first: np.ndarray,
    k_q: np.ndarray,
    k_eff: np.ndarray,
    judged: np.ndarray,
    width: int,
    metrics: Sequence[str],
) -> dict[str, np.ndarray]:
    """Return ``rr`` (first relevant anywhere in the list) and ``rr@k`` (within k), those of them asked for."""
    depth, n = first.shape
    best = first.min(axis=0) if depth else np.full(n, width, dtype=np.intp)
    out: dict[str, np.ndarray] = {}
    if "rr" in metrics:
        rr = np.where(best < width, 1.0 / (best + 1.0), 0.0)
        out["rr"] = np.where(judged, np.where(k_q > 0, rr, 0.0), np.nan)
    if "rr@k" in metrics:
        out["rr@k"] = np.where(judged, np.where(best < k_eff, 1.0 / (best + 1.0), 0.0), np.nan)
    return out


def _dense_dcg(
    gains: np.ndarray, first: np.ndarray, in_k: np.ndarray, width: int, hits_k: np.ndarray | None
) -> np.ndarray:
    """Return each question's discounted cumulative gain, summed in rank order (``hits_k``: hits in the top k,
    None when not counted yet).

    The flat kernel adds each question's discounted gains in rank order. With at most two hits any
    order gives that sum (the other terms are zeros), so only questions with more are sorted, by the
    keys rank * 2**shift + j (judgments not in the top k last).
    """
    depth, n = first.shape
    discount = np.log2(np.arange(width + 1) + 2.0)
    contribution = np.where(in_k, gains / discount[first], 0.0)
    dcg = np.zeros(n)
    for j in range(depth):
        dcg += contribution[j]
    many = np.flatnonzero(hits_k > 2) if hits_k is not None else np.flatnonzero(np.count_nonzero(in_k, axis=0) > 2)
    if many.size:
        shift = max(1, (depth - 1).bit_length())
        judgment = np.arange(depth)[:, None]
        keys = (np.where(in_k[:, many], first[:, many], width + 1) << shift) | judgment
        keys = _sort_rows(keys) & ((1 << shift) - 1)
        in_rank_order = contribution[:, many][keys, np.arange(many.size)]
        redone = np.zeros(many.size)
        for j in range(depth):
            redone += in_rank_order[j]
        dcg[many] = redone
    return dcg


def _dense_ideal_dcg(gains: np.ndarray, k_q: np.ndarray) -> np.ndarray:
    """Return each question's ideal DCG: its relevant gains (a ``(depth, n)`` matrix), highest first, cut at k."""
    depth, n = gains.shape
    cut = min(depth, int(k_q.max(initial=0)))
    gains = _sort_rows(gains, descending=True, first=cut)
    idcg = np.zeros(n)
    discount = np.log2(np.arange(cut) + 2.0)
    for j in range(cut):
        idcg += np.where(j < k_q, gains[j] / discount[j], 0.0)
    return idcg


def _score_flat(encoded: EncodedRetrieval, k_q: np.ndarray, metrics: Sequence[str], gain: str) -> dict[str, np.ndarray]:
    """Score on the flat arrays with ``numpy.bincount`` reductions; any list lengths.

    Each retrieved ``(question, doc)`` is looked up among the relevant gold of its question by a
    binary search over sorted keys ``question * width + doc``.
    """
    n = encoded.n_questions
    gq, gpos = _question_index(encoded.gold_offsets)
    g_docs = encoded.gold_docs
    g_grades = encoded.gold_grades
    relevant = g_grades > 0
    n_relevant = np.bincount(gq[relevant], minlength=n)

    rq, rpos = _question_index(encoded.ranked_offsets)
    r_docs = encoded.ranked_docs
    width = int(max(r_docs.max(initial=-1), g_docs.max(initial=-1))) + 1
    if width and n * width >= 2**62:
        raise ValueError("too many distinct ids to encode; score the questions in batches")

    # Look up each retrieved (question, doc) among the relevant gold of its question.
    rel_keys = gq[relevant] * width + g_docs[relevant]
    rel_grades = g_grades[relevant]
    order = np.argsort(rel_keys, kind="stable")
    rel_keys = rel_keys[order]
    rel_grades = rel_grades[order]
    if rel_keys.size > 1 and np.any(rel_keys[1:] == rel_keys[:-1]):
        dup = int(rel_keys[1:][rel_keys[1:] == rel_keys[:-1]][0])
        raise ValueError(f"gold of question {dup // width} lists the same document twice")
    r_keys = rq * width + r_docs
    slot = np.searchsorted(rel_keys, r_keys)
    slot = np.minimum(slot, max(rel_keys.size - 1, 0))
    hit = (rel_keys[slot] == r_keys) if rel_keys.size else np.zeros(r_keys.size, dtype=bool)
    hit_idx = np.flatnonzero(hit)
    if hit_idx.size:
        # A repeated document counts at its first position only.
        _, first = np.unique(r_keys[hit_idx], return_index=True)
        keep = np.zeros(hit_idx.size, dtype=bool)
        keep[first] = True
        hit_idx = hit_idx[keep]
    hit_q = rq[hit_idx]
    hit_pos = rpos[hit_idx]
    hit_grade = rel_grades[slot[hit_idx]]
    in_k = hit_pos < k_q[hit_q]

    judged = np.diff(encoded.gold_offsets) > 0  # scored: NaN only without any gold judgment
    with np.errstate(invalid="ignore", divide="ignore"):
        out: dict[str, np.ndarray] = {}
        if "recall" in metrics or "precision" in metrics:
            hits_k = np.bincount(hit_q[in_k], minlength=n).astype(np.float64)
            if "recall" in metrics:
                out["recall"] = np.where(judged, hits_k / np.maximum(n_relevant, 1), np.nan)
            if "precision" in metrics:
                out["precision"] = np.where(judged, np.where(k_q > 0, hits_k / np.maximum(k_q, 1), 0.0), np.nan)
        if "rr" in metrics or "rr@k" in metrics:
            # hits are in flat order, so sorted by question and then by rank
            sq, sp = hit_q, hit_pos
            first = np.ones(sq.size, dtype=bool)
            first[1:] = sq[1:] != sq[:-1]
            if "rr" in metrics:
                rr = np.zeros(n)
                rr[sq[first]] = 1.0 / (sp[first] + 1.0)
                # k = 0 (no chunk reached the model) scores 0 on every metric, rr included
                out["rr"] = np.where(judged, np.where(k_q > 0, rr, 0.0), np.nan)
            if "rr@k" in metrics:
                rr_k = np.zeros(n)
                within = first & (sp < k_q[sq])
                rr_k[sq[within]] = 1.0 / (sp[within] + 1.0)
                out["rr@k"] = np.where(judged, rr_k, np.nan)
        if "ndcg" in metrics:
            dcg = np.bincount(
                hit_q[in_k],
                weights=_gain_values(hit_grade[in_k], gain) / np.log2(hit_pos[in_k] + 2.0),
                minlength=n,
            )
            # Ideal order: each question's relevant grades, highest first, cut at k.
            iq = gq[relevant]
            ig = g_grades[relevant]
            ideal_order = np.lexsort((-ig, iq))
            iq, ig = iq[ideal_order], ig[ideal_order]
            starts = np.searchsorted(iq, np.arange(n))
            ipos = np.arange(iq.size) - starts[iq]
            within = ipos < k_q[iq]
            idcg = np.bincount(
                iq[within], weights=_gain_values(ig[within], gain) / np.log2(ipos[within] + 2.0), minlength=n
            )
            out["ndcg"] = np.where(judged, np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0), np.nan)
    out["n_relevant"] = n_relevant
    out["k"] = k_q
    return out
