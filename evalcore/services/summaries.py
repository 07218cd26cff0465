"""A run's means per metric and per slice, each with its interval, its n and the run's coverage.

Means leave out rows where a metric is undefined (None), and say how many rows they cover, so a
reader always sees "0.84 ± 0.03, n = 300 answerable of 400".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from evalcore.engine import proportion_interval, retrieval_metric_names, z_score

ALL = "all"
NO_TYPE = "(no type)"


def slice_name(qtype: str) -> str:
    return qtype or NO_TYPE


def metric_stats(values: np.ndarray, confidence: float = 0.95) -> dict[str, Any]:
    """Return mean, n and an interval of the finite values.

    Pass/fail scores get the Wilson interval (it stays within [0, 1] and keeps its coverage at
    small n); other scores mean +/- z * SD / sqrt(n), clipped to the range of the values seen.
    """
    finite = values[np.isfinite(values)]
    n = int(finite.size)
    if n == 0:
        return {"n": 0, "mean": None, "low": None, "high": None}
    mean = float(finite.mean())
    if n == 1:
        return {"n": 1, "mean": mean, "low": None, "high": None}
    if np.all((finite == 0) | (finite == 1)):
        estimate = proportion_interval(int(finite.sum()), n, confidence=confidence, method="wilson")
        return {"n": n, "mean": mean, "low": estimate.low, "high": estimate.high}
    half = z_score(confidence) * float(finite.std(ddof=1)) / math.sqrt(n)
    low, high = float(finite.min()), float(finite.max())
    return {"n": n, "mean": mean, "low": max(low, mean - half), "high": min(high, mean + half)}


def summarize_scores(
    frame: pd.DataFrame,
    *,
    metrics: list[str],
    questions_per_slice: Mapping[str, int],
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Summarize a frame with a ``slice`` column and one column per metric (NaN = undefined)."""

    def column(metric: str) -> np.ndarray:
        if metric not in frame:
            return np.full(len(frame), np.nan)
        return pd.to_numeric(frame[metric], errors="coerce").to_numpy(dtype=float)

    names, codes = np.unique(frame["slice"].astype(str).to_numpy(dtype=object), return_inverse=True)
    return summarize_columns(
        codes.reshape(-1),
        [str(name) for name in names],
        column,
        metrics=metrics,
        questions_per_slice=questions_per_slice,
        confidence=confidence,
    )


def summarize_columns(
    codes: np.ndarray,
    names: list[str],
    column: Callable[[str], np.ndarray],
    *,
    metrics: list[str],
    questions_per_slice: Mapping[str, int],
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Summarize rows given as each row's slice (its position in ``names``, sorted) and a function returning one metric's values (NaN = undefined).

    One metric's values are asked for at a time, so a caller reading columns from a stored table holds one
    column, not the whole table (a 1,000,000-row import's summary takes a few megabytes).
    """
    total_questions = int(sum(questions_per_slice.values()))
    members = [np.flatnonzero(codes == position) for position in range(len(names))]
    groups: list[tuple[str, np.ndarray | None]] = [(ALL, None)] + [
        (str(name), rows) for name, rows in zip(names, members)
    ]
    slices_out: dict[str, Any] = {}
    for name, rows in groups:
        n_rows = len(codes) if rows is None else len(rows)
        n_questions = total_questions if name == ALL else int(questions_per_slice.get(name, 0))
        slices_out[name] = {
            "rows": int(n_rows),
            "questions": n_questions,
            "coverage": (n_rows / n_questions) if n_questions else None,
            "metrics": {},
        }
    for metric in metrics:
        values = column(metric)
        for name, rows in groups:
            slices_out[name]["metrics"][metric] = metric_stats(values if rows is None else values[rows], confidence)
    for name, count in questions_per_slice.items():
        if name not in slices_out:
            slices_out[name] = {
                "rows": 0,
                "questions": int(count),
                "coverage": 0.0,
                "metrics": {m: metric_stats(np.array([])) for m in metrics},
            }
    return {"metrics": metrics, "slices": slices_out, "confidence": confidence}


def order_metrics(names: set[str] | list[str], k: int) -> list[str]:
    """Retrieval metrics first in a fixed order, then faithfulness, abstention, then the rest."""
    fixed = [*retrieval_metric_names(k), "faithfulness", "abstention"]
    names = set(names)
    return [m for m in fixed if m in names] + sorted(names - set(fixed))
