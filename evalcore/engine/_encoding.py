"""Encoding of per-question string ids into flat integer arrays (private; see ``retrieval``).

:func:`encode_retrieval` turns Python lists of ids and gold mappings into an
:class:`EncodedRetrieval`: compressed rows of integer codes shared by ranked and gold ids. String
ids are coded from their UTF-8 bytes (:func:`_string_codes`), without hashing each string in
Python; other ids with ``pandas.factorize``. The kernels in ``_kernels`` score the result.

Invariants of the codes: two ids get the same code exactly when they are equal; codes are
non-negative and below ``2**(62 - log2(questions))``, so the kernels' per-question keys
``question * width + code`` cannot overflow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, repeat

import numpy as np
import pandas as pd

from ._validation import Gold, check_ranked, relevant_grades


@dataclass(frozen=True)
class EncodedRetrieval:
    """Retrieved lists and gold judgments as flat integer arrays (compressed rows).

    ``ranked_offsets`` has one more entry than there are questions; the ids of question i are
    ``ranked_docs[ranked_offsets[i]:ranked_offsets[i + 1]]`` in rank order. Gold likewise, with a
    grade per gold document. Documents are integer codes shared by ranked and gold; the code
    space is per question, so the same code in two questions may name different documents.

    Parameters
    ----------
    ranked_docs : ndarray of int64, shape (n_retrieved,)
        Codes of every question's retrieved ids, question after question, in rank order.
    ranked_offsets : ndarray of int64, shape (n_questions + 1,)
        Where each question's retrieved ids start in ``ranked_docs`` (0 first, ``n_retrieved`` last).
    gold_docs : ndarray of int64, shape (n_judged,)
        Codes of every question's gold (judged) documents.
    gold_grades : ndarray of float64, shape (n_judged,)
        The grade of each gold document; above 0 means relevant.
    gold_offsets : ndarray of int64, shape (n_questions + 1,)
        Where each question's gold starts in ``gold_docs``.

    Examples
    --------
    >>> encoded = EncodedRetrieval.from_padded(np.array([[3, 1, -1], [2, 2, 5]]), np.array([[1, -1], [5, 4]]))
    >>> encoded.n_questions, encoded.ranked_offsets.tolist(), encoded.gold_docs.tolist()
    (2, [0, 2, 5], [1, 5, 4])
    """

    ranked_docs: np.ndarray
    ranked_offsets: np.ndarray
    gold_docs: np.ndarray
    gold_grades: np.ndarray
    gold_offsets: np.ndarray

    @property
    def n_questions(self) -> int:
        """The number of questions (rows)."""
        return len(self.ranked_offsets) - 1

    @classmethod
    def from_padded(
        cls, ranked: np.ndarray, gold: np.ndarray, gold_grades: np.ndarray | None = None, *, pad: int = -1
    ) -> EncodedRetrieval:
        """Build from 2-d integer arrays, one row per question, padded with ``pad``.

        Parameters
        ----------
        ranked : ndarray of int, shape (n_questions, max_retrieved)
            Retrieved codes per question in rank order, padded at the end with ``pad``.
        gold : ndarray of int, shape (n_questions, max_judged)
            Gold codes per question, padded with ``pad``.
        gold_grades : ndarray of float, shape (n_questions, max_judged), optional
            Grade of each gold code (padding cells are ignored); by default 1 for each.
        pad : int, default -1
            The padding value; it cannot be a code.

        Returns
        -------
        EncodedRetrieval
        """
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
                guess = (
                    (len(raw) + 1) * count // max(1, raw.count(b"\x00") + 1) + 4096 if not used else out.size * 3 // 2
                )
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


def _string_codes(
    groups: Sequence[tuple[Sequence, Callable | None]], count: int, n_questions: int
) -> np.ndarray | None:
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
    if size == count * (width + 1) - 1 and not data[width : size : width + 1].any():
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

    Parameters
    ----------
    ranked : sequence of sequences of ids, length n_questions
        Per question, the retrieved ids in rank order.
    gold : sequence of (set of ids or mapping id -> grade), length n_questions
        Per question, the gold documents; a set means grade 1 for each.

    Returns
    -------
    EncodedRetrieval
        Codes shared by ranked and gold ids (equal exactly when the ids are equal), with the
        grades as floats. Score it with :func:`~evalcore.engine.score_encoded`.

    Examples
    --------
    >>> encoded = encode_retrieval([["a", "b"], ["b"]], [{"b": 2}, {"c"}])
    >>> encoded.ranked_offsets.tolist(), encoded.gold_grades.tolist()
    ([0, 2, 3], [2.0, 1.0])
    >>> bool(encoded.ranked_docs[1] == encoded.gold_docs[0])  # "b"
    True
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
