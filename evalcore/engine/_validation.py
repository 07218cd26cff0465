"""Argument checks shared by the engine's public functions.

Every check raises ``ValueError`` (or ``TypeError`` for a wrong kind of object) with a
message that names the argument and says how to fix it; the engine never uses ``assert``
for argument checks because ``python -O`` strips them.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

#: One question's gold: a mapping id -> grade (graded relevance) or a collection of ids (grade 1 each).
Gold = Mapping[Any, float] | Collection[Any]


def check_positive_int(value: Any, name: str, *, allow_zero: bool = False) -> int:
    """Return ``value`` as an ``int`` after checking it is a (positive) integer."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    lowest = 0 if allow_zero else 1
    if value < lowest:
        kind = "a non-negative" if allow_zero else "a positive"
        raise ValueError(f"{name} must be {kind} integer, got {value}")
    return int(value)


def check_probability(value: Any, name: str, *, open_interval: bool = True) -> float:
    """Return ``value`` as a float strictly between 0 and 1 (or within [0, 1])."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
        raise ValueError(f"{name} must be a number between 0 and 1, got {value!r}")
    value = float(value)
    if open_interval and not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be strictly between 0 and 1, got {value}")
    if not open_interval and not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be between 0 and 1, got {value}")
    return value


def check_ranked(ranked: Any, name: str = "ranked") -> Sequence:
    """Check that ``ranked`` is an ordered sequence of ids (not a string or a set)."""
    if isinstance(ranked, (str, bytes)):
        raise TypeError(
            f"{name} must be a list of ids in rank order, got a string {ranked!r}; wrap a single id in a list"
        )
    if isinstance(ranked, (set, frozenset, Mapping)) or not isinstance(ranked, (Sequence, np.ndarray)):
        raise TypeError(
            f"{name} must be an ordered sequence (list, tuple or array) of ids, "
            f"got {type(ranked).__name__}: a set or dict has no rank order"
        )
    return ranked


def check_grade(grade: Any, doc: Any, name: str = "gold") -> float:
    """Return a relevance grade as a float, rejecting non-numbers, NaN and infinities."""
    if isinstance(grade, bool) or not isinstance(grade, numbers.Real):
        raise ValueError(f"{name}: the grade of {doc!r} must be a number, got {grade!r}")
    grade = float(grade)
    if not math.isfinite(grade):
        raise ValueError(f"{name}: the grade of {doc!r} must be finite, got {grade}")
    return grade


def relevant_grades(gold: Any, name: str = "gold") -> dict[Any, float]:
    """Return ``{doc: grade}`` for the relevant documents of one question.

    ``gold`` is either a mapping ``doc -> grade`` (graded relevance) or a collection of
    ids (each relevant with grade 1). A document is relevant when its grade is above 0,
    as in trec_eval: a grade-0 (or negative) judgment is judged but not relevant.
    """
    if isinstance(gold, (str, bytes)):
        raise TypeError(
            f"{name} must be a set of ids or a mapping id -> grade, got a string {gold!r}; wrap a single id in a set"
        )
    if isinstance(gold, Mapping):
        grades = {doc: check_grade(grade, doc, name) for doc, grade in gold.items()}
        return {doc: grade for doc, grade in grades.items() if grade > 0}
    if not isinstance(gold, Iterable):
        raise TypeError(f"{name} must be a set of ids or a mapping id -> grade, got {type(gold).__name__}")
    return {doc: 1.0 for doc in gold}


def as_float_array(values: Any, name: str) -> np.ndarray:
    """Return a 1-d float array, with an error that names the argument if it is not numeric."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be a sequence of numbers: {error}") from None
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional (one score per question), got shape {array.shape}")
    return array


def check_no_nan(array: np.ndarray, name: str) -> None:
    """Raise with the position of the first NaN, so the caller can find the bad row."""
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        first = int(bad[0])
        raise ValueError(
            f"{name} contains {bad.size} missing or non-finite value(s), the first at position {first} "
            f"({array[first]}); drop the questions that were not scored in both runs before pairing"
        )


def paired_arrays(base: Any, cand: Any) -> tuple[np.ndarray, np.ndarray]:
    """Return two runs' per-question scores as float arrays, after checking they pair (same length, not empty, no NaN)."""
    base_arr = as_float_array(base, "base")
    cand_arr = as_float_array(cand, "cand")
    if base_arr.size != cand_arr.size:
        raise ValueError(
            f"base and cand must score the same questions in the same order: got {base_arr.size} and "
            f"{cand_arr.size} scores; pair the rows by question id first"
        )
    if base_arr.size == 0:
        raise ValueError("base and cand are empty: there are no paired questions to compare")
    check_no_nan(base_arr, "base")
    check_no_nan(cand_arr, "cand")
    return base_arr, cand_arr
