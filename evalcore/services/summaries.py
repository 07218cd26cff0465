"""A run's means per metric and per slice, each with its interval, its n and the run's coverage.

Means leave out rows where a metric is undefined (None), and say how many rows they cover, so a
reader always sees "0.84 ± 0.03, n = 300 answerable of 400".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
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
    total_questions = int(sum(questions_per_slice.values()))
    slices: dict[str, Any] = {}
    groups = [(ALL, frame)] + [(str(name), group) for name, group in frame.groupby("slice", sort=True)]
    for name, group in groups:
        n_questions = total_questions if name == ALL else int(questions_per_slice.get(name, 0))
        entry: dict[str, Any] = {
            "rows": int(len(group)),
            "questions": n_questions,
            "coverage": (len(group) / n_questions) if n_questions else None,
            "metrics": {},
        }
        for metric in metrics:
            values = (
                pd.to_numeric(group[metric], errors="coerce").to_numpy(dtype=float) if metric in group else np.array([])
            )
            entry["metrics"][metric] = metric_stats(values, confidence)
        slices[name] = entry
    for name, count in questions_per_slice.items():
        if name not in slices:
            slices[name] = {
                "rows": 0,
                "questions": int(count),
                "coverage": 0.0,
                "metrics": {m: metric_stats(np.array([])) for m in metrics},
            }
    return {"metrics": metrics, "slices": slices, "confidence": confidence}


def order_metrics(names: set[str] | list[str], k: int) -> list[str]:
    """Retrieval metrics first in a fixed order, then faithfulness, abstention, then the rest."""
    fixed = [*retrieval_metric_names(k), "faithfulness", "abstention"]
    names = set(names)
    return [m for m in fixed if m in names] + sorted(names - set(fixed))
