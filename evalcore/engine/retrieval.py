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
* **Unanswerable questions** (no relevant gold) get NaN for every retrieval metric and are left
  out of the means; they are scored instead on whether the system declined to answer.
* **nDCG gain**: ``"exponential"`` is 2^g - 1 (the spec's, Burges et al.), ``"linear"`` is g
  (trec_eval's). They agree when grades are binary.
* **Reciprocal rank** looks at the whole ranked list, as in the spec and trec_eval's ``recip_rank``;
  ``rr@k`` is the variant cut at k.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import Any, Literal

import numpy as np
import pandas as pd

from ._validation import check_positive_int, check_ranked, relevant_grades

Gain = Literal["exponential", "linear"]
GAINS: tuple[str, ...] = ("exponential", "linear")
RETRIEVAL_METRICS: tuple[str, ...] = ("recall", "precision", "rr", "rr@k", "ndcg")
DEFAULT_RETRIEVAL_METRICS: tuple[str, ...] = ("recall", "precision", "rr", "ndcg")

Gold = Mapping[Any, float] | Collection[Any]


def _check_gain(gain: str) -> str:
    if gain not in GAINS:
        raise ValueError(f"gain must be one of {GAINS}, got {gain!r}")
    return gain


def _gain_values(grades: np.ndarray, gain: str) -> np.ndarray:
    grades = np.maximum(grades, 0.0)
    return np.exp2(grades) - 1.0 if gain == "exponential" else grades


def _first_occurrences(ranked: Sequence, k: int | None = None) -> list[tuple[int, Any]]:
    """Return ``(rank, doc)`` for the first occurrence of each document, ranks from 1."""
    seen: set = set()
    out = []
    for rank, doc in enumerate(ranked if k is None else ranked[:k], start=1):
        if doc not in seen:
            seen.add(doc)
            out.append((rank, doc))
    return out


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
        In [0, 1]; NaN when the question has no relevant gold (unanswerable).

    Examples
    --------
    >>> round(recall_at_k(["d7", "d2", "d9", "d4", "d1"], {"d2", "d4", "d5"}, 5), 3)
    0.667
    """
    check_ranked(ranked)
    k = check_positive_int(k, "k")
    relevant = relevant_grades(gold)
    if not relevant:
        return math.nan
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
        In [0, 1]; NaN when the question has no relevant gold (unanswerable).

    Examples
    --------
    >>> precision_at_k(["d7", "d2", "d9", "d4", "d1"], {"d2", "d4", "d5"}, 5)
    0.4
    """
    check_ranked(ranked)
    k = check_positive_int(k, "k")
    relevant = relevant_grades(gold)
    if not relevant:
        return math.nan
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
        In [0, 1]; NaN when the question has no relevant gold.

    Examples
    --------
    >>> reciprocal_rank(["d7", "d2", "d9"], {"d2", "d4"})
    0.5
    """
    check_ranked(ranked)
    if k is not None:
        k = check_positive_int(k, "k")
    relevant = relevant_grades(gold)
    if not relevant:
        return math.nan
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
        In [0, 1]; NaN when the question has no relevant gold.

    References
    ----------
    Järvelin and Kekäläinen, "Cumulated gain-based evaluation of IR techniques", TOIS 2002;
    Burges et al., "Learning to rank using gradient descent", ICML 2005 (exponential gain).

    Examples
    --------
    >>> round(ndcg_at_k(["d7", "d2", "d9", "d4", "d1"], {"d2": 3, "d4": 1, "d5": 2}, 5), 3)
    0.516
    """
    check_ranked(ranked)
    k = check_positive_int(k, "k")
    _check_gain(gain)
    relevant = relevant_grades(grades, "grades")
    if not relevant:
        return math.nan
    hits = [(rank, relevant[doc]) for rank, doc in _first_occurrences(ranked, k) if doc in relevant]
    dcg = sum(float(_gain_values(np.array([g]), gain)[0]) / math.log2(rank + 1) for rank, g in hits)
    ideal = sorted(relevant.values(), reverse=True)[:k]
    ideal_gains = _gain_values(np.array(ideal), gain)
    idcg = float(np.sum(ideal_gains / np.log2(np.arange(2, len(ideal) + 2))))
    return dcg / idcg


# --------------------------------------------------------------------------------------------
# Batch scoring
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EncodedRetrieval:
    """Retrieved lists and gold judgments as flat integer arrays (compressed rows).

    ``ranked_offsets`` has one more entry than there are questions; the ids of question i are
    ``ranked_docs[ranked_offsets[i]:ranked_offsets[i + 1]]`` in rank order. Gold likewise, with a
    grade per gold document. Documents are integer codes shared by ranked and gold; the code
    space is per question, so the same code in two questions may name different documents.
    """

    ranked_docs: np.ndarray
    ranked_offsets: np.ndarray
    gold_docs: np.ndarray
    gold_grades: np.ndarray
    gold_offsets: np.ndarray

    @property
    def n_questions(self) -> int:
        return len(self.ranked_offsets) - 1

    @classmethod
    def from_padded(
        cls, ranked: np.ndarray, gold: np.ndarray, gold_grades: np.ndarray | None = None, *, pad: int = -1
    ) -> EncodedRetrieval:
        """Build from 2-d integer arrays, one row per question, padded with ``pad``."""
        ranked = np.asarray(ranked)
        gold = np.asarray(gold)
        if ranked.ndim != 2 or gold.ndim != 2 or len(ranked) != len(gold):
            raise ValueError(
                f"ranked and gold must be 2-d arrays with one row per question, got shapes "
                f"{ranked.shape} and {gold.shape}"
            )
        grades = np.ones(gold.shape) if gold_grades is None else np.asarray(gold_grades, dtype=np.float64)
        if grades.shape != gold.shape:
            raise ValueError(f"gold_grades must have the shape of gold {gold.shape}, got {grades.shape}")
        r_mask = ranked != pad
        g_mask = gold != pad
        r_len = r_mask.sum(axis=1)
        g_len = g_mask.sum(axis=1)
        return cls(
            ranked_docs=ranked[r_mask].astype(np.int64),
            ranked_offsets=np.concatenate([[0], np.cumsum(r_len)]).astype(np.int64),
            gold_docs=gold[g_mask].astype(np.int64),
            gold_grades=grades[g_mask],
            gold_offsets=np.concatenate([[0], np.cumsum(g_len)]).astype(np.int64),
        )


def _lengths(items: Sequence, name: str) -> np.ndarray:
    try:
        return np.fromiter(map(len, items), dtype=np.int64, count=len(items))
    except TypeError:
        for i, item in enumerate(items):
            if not hasattr(item, "__len__"):
                raise TypeError(f"{name}[{i}] must be a list of ids, got {type(item).__name__}") from None
        raise


#: Ids joined and encoded per batch: small temporaries are recycled by the allocator, whereas
#: one string of every id would map fresh memory each call (a page fault per 4 KB).
_JOIN_BATCH = 1 << 12  # questions


def _joined_bytes(groups: Sequence[tuple[Sequence, Callable | None]], count: int) -> np.ndarray | None:
    """Return the UTF-8 bytes of the ids, NUL-separated, then 8 zero bytes; None unless all are str.

    ``groups`` holds (sequence of per-question items, function giving an item's ids or None for
    the item itself), ``count`` ids in all. Each question's ids are joined on their own (no
    per-id iterator), and the questions in batches.
    """
    out = np.empty(0, dtype=np.uint8)
    used = 0
    for group, ids_of in groups:
        for start in range(0, len(group), _JOIN_BATCH):
            batch = group[start : start + _JOIN_BATCH]
            try:  # (an empty question joins to "" and is left out, as it holds no id)
                text = "\x00".join(filter(None, map("\x00".join, batch if ids_of is None else map(ids_of, batch))))
            except TypeError:
                return None
            if not text:
                continue
            raw = text.encode("ascii") if text.isascii() else text.encode("utf-8", "surrogatepass")
            need = used + len(raw) + 9
            if need > out.size:  # first batch: guess the whole from it; later, grow by half
                guess = (len(raw) + 1) * count // max(1, raw.count(b"\x00") + 1) + 4096 if not used else out.size * 3 // 2
                grown = np.empty(max(need, guess), dtype=np.uint8)
                grown[:used] = out[:used]
                out = grown
            out[used : used + len(raw)] = np.frombuffer(raw, dtype=np.uint8)
            used += len(raw)
            out[used] = 0
            used += 1
    if not used:
        out = np.zeros(9, dtype=np.uint8)
        used = 1
    out[used - 1 : used + 7] = 0  # the last separator and seven more zeros
    return out[: used + 7]


def _folded_key(runs: list, count: int, budget: int) -> np.ndarray | None:
    """Pack the varying bits of each word into at most ``budget`` bits, if they sit regularly.

    Regular: at most four bits, the same ones, of consecutive bytes (digits vary in their low
    four bits). Such bits are packed by folding pairs of bytes together, a logarithmic number of
    passes. Returns None for other layouts.
    """
    words: dict[int, list] = {}
    for run in runs:
        words.setdefault(id(run[0]), []).append(run)
    layout = []
    for group in words.values():
        first_byte, last_byte = group[0][1] // 8, group[-1][1] // 8
        low = min(r[1] % 8 for r in group)
        size = max(r[1] % 8 + r[2] for r in group) - low
        if size > 4:  # a fold slides a byte's bits into a gap at least as wide
            return None
        layout.append((group[0][0], 8 * first_byte + low, size, last_byte - first_byte + 1))
    if sum(size * groups for *_, size, groups in layout) > budget:
        return None
    key = np.empty(count, dtype=np.uint64)
    part = np.empty(count, dtype=np.uint64)
    shifted = np.empty(count, dtype=np.uint64)
    bits = 0
    for word, low, size, groups in layout:
        np.right_shift(word, np.uint64(low), out=part)
        np.bitwise_and(part, np.uint64(sum(((1 << size) - 1) << (8 * i) for i in range(groups))), out=part)
        spacing, width, left = 8, size, groups
        while left > 1:  # fold: byte 2k+1's bits slide down next to byte 2k's
            np.right_shift(part, np.uint64(spacing - width), out=shifted)
            np.bitwise_or(part, shifted, out=part)
            spacing, width, left = 2 * spacing, 2 * width, (left + 1) // 2
            np.bitwise_and(part, np.uint64(sum(((1 << width) - 1) << (spacing * i) for i in range(left))), out=part)
        if bits:
            np.left_shift(key, np.uint64(size * groups), out=key)
            np.bitwise_or(key, part, out=key)
        else:
            key[:] = part
        bits += size * groups
    return key.view(np.int64)


def _string_codes(groups: Sequence[tuple[Sequence, Callable | None]], count: int, n_questions: int) -> np.ndarray | None:
    """Return integer codes for ``count`` str ids, equal exactly when the ids are equal.

    ``groups`` holds sequences of per-question collections of ids, as :func:`_joined_bytes`.

    Returns None unless every id is a str without a NUL character. The ids' UTF-8 bytes are read
    eight at a time and only the bits that vary between ids are kept: identifiers share prefixes,
    separators and character classes, so these usually pack into one integer, which is then the
    code. Only when they do not is the packed key re-coded densely with ``pandas.factorize``.
    This avoids hashing millions of Python strings one by one.
    """
    if count == 0:
        return np.empty(0, dtype=np.int64)
    data = _joined_bytes(groups, count)
    if data is None:
        return None
    size = data.size - 8  # the ids, NUL-separated, then eight spare zero bytes for 8-byte reads
    if size - np.count_nonzero(data) != count - 1:
        return None  # an id holds a NUL character
    width = int(np.argmin(data[: min(size, 1 << 16) + 1])) if count > 1 else size  # the first id's length
    if size == count * (width + 1) - 1 and not data[width:size:width + 1].any():
        lengths = None  # every id is ``width`` bytes long: the separators are exactly where expected
    else:
        separators = np.flatnonzero(data[:size] == 0)
        starts = np.empty(count, dtype=np.int64)
        starts[0] = 0
        starts[1:] = separators + 1
        lengths = np.append(separators, size) - starts
        width = int(lengths.max())
        # element i of ``window`` is the 8 bytes starting at byte i (unaligned and overlapping)
        window = np.ndarray((size + 1,), dtype="<u8", buffer=data, strides=(1,))
    padded = data
    runs = []  # [word, lowest bit, number of bits]: the varying bits of each byte
    for j in range((width + 7) // 8):
        if lengths is None:  # bytes 8j to 8j + 7 of every id: a strided view, no index needed
            word = np.ndarray((count,), dtype="<u8", buffer=padded, offset=8 * j, strides=(width + 1,))
            if width - 8 * j < 8:  # clear the bytes past the end of the ids
                word = word & np.uint64((1 << (8 * (width - 8 * j))) - 1)
            else:
                word = word.copy()
        else:
            word = window[np.minimum(starts + 8 * j, size)]
            remaining = lengths - 8 * j
            short = remaining < 8
            if short.any():
                shift = (8 * np.clip(remaining, 0, 7)).astype(np.uint64)
                word &= np.where(short, (np.uint64(1) << shift) - np.uint64(1), np.uint64(2**64 - 1))
        varying = int(np.bitwise_or.reduce(word ^ word[0]))
        for b in range(8):
            byte = (varying >> (8 * b)) & 0xFF
            if byte:
                low = (byte & -byte).bit_length() - 1
                runs.append([word, 8 * b + low, byte.bit_length() - low])
    # The code must stay below 2**(62 - log2(questions)) so that the kernels' per-question keys
    # cannot overflow, and is best below 2**31 (the kernels then compare 32-bit codes).
    needed = sum(run[2] for run in runs)
    budget = 62 - n_questions.bit_length()
    if runs and needed <= min(31, budget):
        folded = _folded_key(runs, count, min(31, budget))
        if folded is not None:
            return folded
    # Otherwise merge neighbouring runs of a word while the budget allows (fewer passes).
    if needed <= budget:
        merged: list = []
        for run in runs:
            if merged and merged[-1][0] is run[0]:
                span = run[1] + run[2] - merged[-1][1]
                if needed - run[2] - merged[-1][2] + span <= budget:
                    needed += span - run[2] - merged[-1][2]
                    merged[-1][2] = span
                    continue
            merged.append(run)
        runs = merged
    if not runs:  # every id is the same
        return np.zeros(count, dtype=np.int64)
    key = np.empty(count, dtype=np.uint64)  # built in place: fresh arrays cost page faults
    value = np.empty(count, dtype=np.uint64)
    bits = 0
    for word, low, run_bits in runs:
        if bits + run_bits > 64:
            codes, uniques = pd.factorize(key)
            key[:] = codes
            bits = max(1, (len(uniques) - 1).bit_length())
        np.right_shift(word, np.uint64(low), out=value)  # ``word`` is shared by the runs of a word
        if low + run_bits < 64:
            np.bitwise_and(value, np.uint64((1 << run_bits) - 1), out=value)
        if bits:
            np.left_shift(key, np.uint64(run_bits), out=key)
            np.bitwise_or(key, value, out=key)
        else:
            key[:] = value
        bits += run_bits
    if bits > 62 - n_questions.bit_length():
        return pd.factorize(key)[0].astype(np.int64)
    return key.view(np.int64)  # below 2**62


def encode_retrieval(ranked: Sequence[Sequence], gold: Sequence[Gold]) -> EncodedRetrieval:
    """Encode per-question Python lists of ids into flat integer arrays.

    This walks every id once, in C where possible (``itertools.chain``, ``str.join``): string ids
    are coded from their bytes (see :func:`_string_codes`), other ids with ``pandas.factorize``.
    """
    n = len(ranked)
    if len(gold) != n:
        raise ValueError(f"ranked and gold must have one entry per question, got {n} and {len(gold)}")
    try:  # lists (the usual input) pass the check below: their lengths, in one pass in C
        r_len = np.fromiter(map(list.__len__, ranked), dtype=np.int64, count=n)
    except TypeError:
        for i, items in enumerate(ranked):
            if isinstance(items, (str, bytes, set, frozenset, Mapping)):
                check_ranked(items, f"ranked[{i}]")
        r_len = _lengths(ranked, "ranked")

    g_docs: list = []
    g_grades: list = []
    g_len = np.empty(n, dtype=np.int64)
    try:  # dicts (the usual input), in C: same result as the loop below (gold ids listed when needed)
        g_len = np.fromiter(map(dict.__len__, gold), dtype=np.int64, count=n)
        g_grades = list(chain.from_iterable(map(dict.values, gold)))
        dicts = True
        gold_left: Sequence = ()
    except TypeError:
        dicts = False
        gold_left = gold
    for i, g in enumerate(gold_left):
        before = len(g_docs)
        if isinstance(g, Mapping):
            g_docs.extend(g.keys())
            g_grades.extend(g.values())
        elif isinstance(g, (str, bytes)) or not isinstance(g, Iterable):
            relevant_grades(g, f"gold[{i}]")  # raises with a clear message
        else:
            g_docs.extend(g)
            g_grades.extend(repeat(1.0, len(g_docs) - before))
        g_len[i] = len(g_docs) - before

    try:
        raw = np.asarray(g_grades)
        if raw.size and (raw.ndim != 1 or raw.dtype.kind not in "iuf"):
            # strings ("3") and booleans would be cast silently; the per-question functions refuse them
            raise TypeError("grades are not plain numbers")
        grades = raw.astype(np.float64)
    except (TypeError, ValueError):
        for i, g in enumerate(gold):
            if isinstance(g, Mapping):
                relevant_grades(g, f"gold[{i}]")  # raises with a clear message for a bad grade
        grades = np.asarray(g_grades, dtype=np.float64)  # every grade is a real number (a Fraction, say)
    if grades.size and not np.all(np.isfinite(grades)):
        bad = int(np.flatnonzero(~np.isfinite(grades))[0])
        q = int(np.searchsorted(np.cumsum(g_len), bad, side="right"))
        g_docs = list(chain.from_iterable(map(dict.keys, gold))) if dicts else g_docs
        raise ValueError(f"gold[{q}]: grade of {g_docs[bad]!r} must be finite, got {grades[bad]}")

    n_ranked = int(r_len.sum())
    # every id, ranked then gold, in one code space
    gold_ids = (gold, dict.keys) if dicts else ([g_docs], None)
    codes = _string_codes([(ranked, None), gold_ids], n_ranked + int(g_len.sum()), n)
    if codes is None:
        r_ids = list(chain.from_iterable(ranked))
        g_docs = list(chain.from_iterable(map(dict.keys, gold))) if dicts else g_docs
        all_ids = np.empty(len(r_ids) + len(g_docs), dtype=object)
        all_ids[: len(r_ids)] = r_ids
        all_ids[len(r_ids) :] = g_docs
        # use_na_sentinel=False: a None id gets its own code; the default -1 would alias the previous
        # question's highest-coded document in the keys ``question * width + doc`` below.
        codes, _ = pd.factorize(all_ids, use_na_sentinel=False)
        codes = codes.astype(np.int64)
    return EncodedRetrieval(
        ranked_docs=codes[:n_ranked],
        ranked_offsets=np.concatenate([[0], np.cumsum(r_len)]),
        gold_docs=codes[n_ranked:],
        gold_grades=grades,
        gold_offsets=np.concatenate([[0], np.cumsum(g_len)]),
    )


def _question_index(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return, for every flat element, its question index and its 0-based position."""
    lengths = np.diff(offsets)
    q = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    pos = np.arange(int(offsets[-1]), dtype=np.int64) - np.repeat(offsets[:-1], lengths)
    return q, pos


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


def _score_dense(encoded: EncodedRetrieval, k_q: np.ndarray, metrics: Sequence[str], gain: str) -> dict[str, np.ndarray] | None:
    """Score with one column per question; return None when the lists are too uneven for it.

    For each relevant judgment, the rank of its first retrieval is found by comparing the whole
    (rank, question) matrix of retrieved ids at once; sums run in rank order, exactly as in the
    flat kernel, so both give identical numbers.
    """
    n = encoded.n_questions
    r_docs, g_docs, g_grades = encoded.ranked_docs, encoded.gold_docs, encoded.gold_grades
    r_len = np.diff(encoded.ranked_offsets)
    g_len = np.diff(encoded.gold_offsets)
    width = int(r_len.max(initial=0))
    depth = int(g_len.max(initial=0))
    if (
        n == 0
        or depth > _DENSE_MAX_GOLD
        or width > 32_767
        or width * n > _DENSE_PADDING * r_docs.size + 16 * n
        or depth * n > _DENSE_PADDING * g_docs.size + 16 * n
    ):
        return None
    low = int(min(r_docs.min(initial=0), g_docs.min(initial=0)))
    high = int(max(r_docs.max(initial=0), g_docs.max(initial=0)))
    # Compare 32-bit codes when they fit (half the memory traffic), else 64-bit ones.
    if low >= 0 and high < 2**31:
        r_small, g_small = r_docs.astype(np.int32), g_docs.astype(np.int32)
    elif high - low < 2**31 - 2:
        r_small, g_small = (r_docs - (low - 2)).astype(np.int32), (g_docs - (low - 2)).astype(np.int32)
    elif low > -(2**63) + 2:
        r_small, g_small = r_docs.astype(np.int64, copy=False), g_docs.astype(np.int64, copy=False)
    else:
        return None
    r_fill, g_fill = (-1, -2) if r_small.dtype == np.int32 else (min(low, 0) - 1, min(low, 0) - 2)
    ranked = _columns(r_small, encoded.ranked_offsets, width, r_fill, r_small.dtype)
    relevant_flat = g_grades > 0
    # where each question's j-th gold judgment sits in the flat arrays (one past the end: none)
    position = np.arange(depth)[:, None]
    g_index = np.where(position < g_len, encoded.gold_offsets[:-1] + position, g_docs.size)
    gold = np.append(np.where(relevant_flat, g_small, g_fill), r_small.dtype.type(g_fill))[g_index]
    relevant = gold != g_fill
    n_relevant = np.count_nonzero(relevant, axis=0)
    if depth > 1:
        same = np.zeros(n, dtype=bool)
        for j in range(depth):
            for other in range(j + 1, depth):
                same |= (gold[j] == gold[other]) & (gold[j] != g_fill)
        if same.any():
            raise ValueError(f"gold of question {int(np.flatnonzero(same)[0])} lists the same document twice")

    # first[j, i]: 0-based rank at which question i first retrieved its j-th relevant judgment,
    # ``width`` if never. A repeated document counts at its first position only.
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
    first = width - score.astype(np.intp)
    k_eff = np.minimum(k_q, width)
    in_k = first < k_eff
    answerable = n_relevant > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        out: dict[str, np.ndarray] = {}
        if "recall" in metrics or "precision" in metrics:
            hits_k = np.count_nonzero(in_k, axis=0).astype(np.float64)
            if "recall" in metrics:
                out["recall"] = np.where(answerable, hits_k / np.maximum(n_relevant, 1), np.nan)
            if "precision" in metrics:
                out["precision"] = np.where(answerable, np.where(k_q > 0, hits_k / np.maximum(k_q, 1), 0.0), np.nan)
        if "rr" in metrics or "rr@k" in metrics:
            best = first.min(axis=0) if depth else np.full(n, width, dtype=np.intp)
            if "rr" in metrics:
                rr = np.where(best < width, 1.0 / (best + 1.0), 0.0)
                out["rr"] = np.where(answerable, np.where(k_q > 0, rr, 0.0), np.nan)
            if "rr@k" in metrics:
                out["rr@k"] = np.where(answerable, np.where(best < k_eff, 1.0 / (best + 1.0), 0.0), np.nan)
        if "ndcg" in metrics:
            gains = np.append(np.where(relevant_flat, _gains(g_grades, gain), 0.0), 0.0)[g_index]
            # The flat kernel adds each question's discounted gains in rank order. With at most two
            # hits any order gives that sum (the other terms are zeros), so only questions with more
            # are sorted, by the keys rank * 2**shift + j (judgments not in the top k last).
            discount = np.log2(np.arange(width + 1) + 2.0)
            contribution = np.where(in_k, gains / discount[first], 0.0)
            dcg = np.zeros(n)
            for j in range(depth):
                dcg += contribution[j]
            many = np.flatnonzero(hits_k > 2) if "recall" in metrics or "precision" in metrics else None
            if many is None:
                many = np.flatnonzero(np.count_nonzero(in_k, axis=0) > 2)
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
            # Ideal order: the relevant gains, highest first, cut at k.
            cut = min(depth, int(k_q.max(initial=0)))
            gains = _sort_rows(gains, descending=True, first=cut)
            idcg = np.zeros(n)
            discount = np.log2(np.arange(cut) + 2.0)
            for j in range(cut):
                idcg += np.where(j < k_q, gains[j] / discount[j], 0.0)
            out["ndcg"] = np.where(answerable, np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0), np.nan)
    out["n_relevant"] = n_relevant
    out["k"] = k_q
    return out


def score_encoded(
    encoded: EncodedRetrieval,
    k: int | Sequence[int] | np.ndarray,
    *,
    metrics: Sequence[str] = DEFAULT_RETRIEVAL_METRICS,
    gain: Gain = "exponential",
) -> dict[str, np.ndarray]:
    """Score integer-coded input; return one float array per metric (NaN where unanswerable).

    When the lists have similar lengths (the usual case), questions are laid out as columns of
    small dense matrices and compared all at once; otherwise the kernel works on flat arrays with
    ``numpy.bincount`` reductions, linear in the number of retrieved ids plus gold judgments
    whatever the list lengths. Both give identical numbers.
    """
    _check_gain(gain)
    unknown = [m for m in metrics if m not in RETRIEVAL_METRICS]
    if unknown:
        raise ValueError(f"unknown retrieval metric(s) {unknown}; choose from {RETRIEVAL_METRICS}")
    n = encoded.n_questions
    k_q = _resolve_k(k, n)
    dense = _score_dense(encoded, k_q, metrics, gain)
    if dense is not None:
        return dense

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

    answerable = n_relevant > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        out: dict[str, np.ndarray] = {}
        if "recall" in metrics or "precision" in metrics:
            hits_k = np.bincount(hit_q[in_k], minlength=n).astype(np.float64)
            if "recall" in metrics:
                out["recall"] = np.where(answerable, hits_k / np.maximum(n_relevant, 1), np.nan)
            if "precision" in metrics:
                out["precision"] = np.where(answerable, np.where(k_q > 0, hits_k / np.maximum(k_q, 1), 0.0), np.nan)
        if "rr" in metrics or "rr@k" in metrics:
            # hits are in flat order, so sorted by question and then by rank
            sq, sp = hit_q, hit_pos
            first = np.ones(sq.size, dtype=bool)
            first[1:] = sq[1:] != sq[:-1]
            if "rr" in metrics:
                rr = np.zeros(n)
                rr[sq[first]] = 1.0 / (sp[first] + 1.0)
                # k = 0 (no chunk reached the model) scores 0 on every metric, rr included
                out["rr"] = np.where(answerable, np.where(k_q > 0, rr, 0.0), np.nan)
            if "rr@k" in metrics:
                rr_k = np.zeros(n)
                within = first & (sp < k_q[sq])
                rr_k[sq[within]] = 1.0 / (sp[within] + 1.0)
                out["rr@k"] = np.where(answerable, rr_k, np.nan)
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
            out["ndcg"] = np.where(answerable, np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0), np.nan)
    out["n_relevant"] = n_relevant
    out["k"] = k_q
    return out


def metric_column(metric: str, k_label: object) -> str:
    """Return the column name of a metric: ``recall@5``, ``ndcg@5``, ``rr``, ``rr@5``."""
    if metric == "rr":
        return "rr"
    if metric == "rr@k":
        return f"rr@{k_label}"
    return f"{metric}@{k_label}"


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
        when it has relevant gold. A question marked unanswerable must have no relevant gold.
        An answerable question without relevant gold (say, judged only on its answer) gets NaN
        retrieval metrics too: there is nothing to score retrieval against.
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
        (``recall@5``, ``precision@5``, ``rr``, ``ndcg@5``). Metrics are NaN for questions with no
        relevant gold, so ``DataFrame.mean()`` leaves them out.

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
    index = pd.Index(list(question_ids), name="question") if question_ids is not None else pd.RangeIndex(n, name="question")
    if len(index) != n:
        raise ValueError(f"question_ids must have one id per question ({n}), got {len(index)}")
    columns: dict[str, Any] = {"k": scored["k"], "n_relevant": scored["n_relevant"]}
    has_gold = scored["n_relevant"] > 0
    if answerable is None:
        columns["answerable"] = has_gold
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
        columns[metric_column(metric, k_label)] = scored[metric]
    return pd.DataFrame(columns, index=index)


@dataclass(frozen=True)
class RetrievalSummary:
    """Means of the retrieval metrics over answerable questions, and how declining was scored."""

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
